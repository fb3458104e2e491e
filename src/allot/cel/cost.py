"""The run-time cost budget of one CEL evaluation, for the functions allot implements.

Kubernetes stops an evaluation whose actual cost passes its limit (1,000,000 for a DRA
selector and for each admission expression) with ``operation cancelled: actual cost limit
exceeded``. The C++ runtime tracks no cost, so the expensive library functions charge
their Kubernetes cost here (regular expressions by text and pattern length, an
authorization check 350,000) before they run. An evaluation runs inside :func:`metered`;
the first charge past the limit makes the function fail, and the evaluation as a whole
fails however the expression would have absorbed that error (``||``, ``&&``), as
Kubernetes aborts it. A function called outside any evaluation gets a budget of its own.

Called by :mod:`allot.cel.regex`, :mod:`allot.cel.authz`, and the evaluators in
:mod:`allot.cel.compiler` and :mod:`allot.cel.policy`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PER_CALL_LIMIT = 1_000_000
"""Kubernetes' per-expression limit (``celconfig.PerCallLimit``; DRA's selector limit too)."""
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"


class CostLimitExceeded(ValueError):
    """Raised by a charge past the limit; the runtime turns it into an error value."""

    def __init__(self) -> None:
        super().__init__(COST_LIMIT_EXCEEDED)


@dataclass
class Budget:
    limit: int
    spent: int = 0
    exceeded: bool = False

    def charge(self, amount: int) -> None:
        if self.exceeded:
            raise CostLimitExceeded
        self.spent += amount
        if self.spent > self.limit:
            self.exceeded = True
            raise CostLimitExceeded


_active = threading.local()


@contextmanager
def metered(limit: int = PER_CALL_LIMIT) -> Iterator[Budget]:
    """Run one evaluation on this thread with ``limit``; nested evaluations get their own."""
    outer = getattr(_active, "budget", None)
    budget = _active.budget = Budget(limit)
    try:
        yield budget
    finally:
        _active.budget = outer


def charge(amount: int) -> None:
    """Charge the running evaluation (or a budget of this call's own)."""
    budget = getattr(_active, "budget", None)
    (budget if budget is not None else Budget(PER_CALL_LIMIT)).charge(amount)
