"""Errors of the allocator, following the Go allocator's contract.

Class tree::

    AllocationError            fatal input problem (unknown class, CEL error, bad
    │                          constraint...): the claims cannot be judged at all
    └── InvalidPoolsError      non-fatal: no solution on this node and some relevant pool
                               was invalid ("invalid resource pools were encountered")

"Does not fit" is not an error: ``Allocator.allocate`` returns ``None``. Texts are
upstream's (``claim <ns>/<name>, request <r>: ...``) so users can search for them.
"""

from __future__ import annotations


class AllocationError(Exception):
    """A fatal problem with the input; the scheduler reports it as an Error status."""


class InvalidPoolsError(AllocationError):
    """No solution, and at least one relevant pool was invalid (non-fatal upstream)."""

    def __init__(self) -> None:
        super().__init__("invalid resource pools were encountered")
