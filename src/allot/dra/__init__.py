"""One index of a cluster's DRA facts (device views, memory, class verdicts, claims'
allocations), fed once from store events and read by the scheduler, capacity, audit and
the tenant sync. Public surface: :class:`DraIndex`, :class:`AllocatorFeed`. Pure: no I/O.
"""

from allot.dra.index import AllocatorFeed, ClaimEntry, DraIndex, SliceEntry

__all__ = ["AllocatorFeed", "ClaimEntry", "DraIndex", "SliceEntry"]
