"""What the platform's writes cost, counted: stored writes, admissions and decodes.

Issue 30 asks the embedded write path to pay only for what a write needs, and to show it:
``bench/writecosts.py`` prints how many objects the store wrote, how many requests the
admission chain judged and how many whole API objects were decoded into their models for
one tenant claim and for one pod using it. The totals are plain integers bumped where each
thing happens (:meth:`allot.store.Store` persisting a row, :class:`AdmissionChain.admit`,
:meth:`ApiModel.model_validate` of a model with ``apiVersion`` and ``metadata``): always
on, a few nanoseconds each. :func:`itemised` also records them per resource or kind, for
a benchmark that wants to say which; off (``None``) everywhere else, so the write path
only tests a field. Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Costs:
    """Running totals since the process started (or since :meth:`snapshot`'s baseline)."""

    writes: int = 0
    admissions: int = 0
    decodes: int = 0
    items: Counter[tuple[str, str]] | None = field(default=None)
    """(what, "cluster resource" or kind) -> count, while :func:`itemised` records it."""

    def wrote(self, cluster: str, resource: str) -> None:
        self.writes += 1
        if self.items is not None:
            self.items["write", f"{cluster} {resource}"] += 1

    def admitted(self, cluster: str, resource: str, subresource: str = "") -> None:
        self.admissions += 1
        if self.items is not None:
            name = f"{resource}/{subresource}" if subresource else resource
            self.items["admission", f"{cluster} {name}"] += 1

    def decoded(self, kind: str) -> None:
        self.decodes += 1
        if self.items is not None:
            self.items["decode", kind] += 1

    def snapshot(self) -> tuple[int, int, int]:
        return self.writes, self.admissions, self.decodes


COSTS = Costs()
"""The process's one tally (the platform runs in one process, on one loop)."""


@contextmanager
def itemised() -> Iterator[Counter[tuple[str, str]]]:
    """Record every write, admission and decode per resource or kind while inside."""
    items: Counter[tuple[str, str]] = Counter()
    previous, COSTS.items = COSTS.items, items
    try:
        yield items
    finally:
        COSTS.items = previous
