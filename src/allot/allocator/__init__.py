"""The DRA structured allocator of Kubernetes 1.36 (the ``incubating`` variant), pure.

Public surface: :class:`Allocator` (``allocate(node, claims, state)`` -> results, ``None``
for "does not fit", :class:`AllocationError` for bad input), :class:`AllocatedState`,
:class:`Tracer` for explanations. No I/O: callers pass slices, classes and claims in.
"""

from allot.allocator.errors import AllocationError, InvalidPoolsError
from allot.allocator.search import Allocator, Stats
from allot.allocator.state import AllocatedState, DeviceID
from allot.allocator.trace import Reason, Rejection, Tracer

__all__ = [
    "AllocatedState",
    "AllocationError",
    "Allocator",
    "DeviceID",
    "InvalidPoolsError",
    "Reason",
    "Rejection",
    "Stats",
    "Tracer",
]
