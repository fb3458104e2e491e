"""Why devices were rejected: a typed trace the search fills in when asked.

The Go allocator explains nothing; allot's explain command needs to say, per request, how
many devices were candidates and why each was turned down. The search calls
``Tracer.reject`` at every refusal (only when a tracer is given, so normal allocation pays
nothing). Read by ``allot.explain``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from allot.allocator.state import DeviceID


class Reason(enum.Enum):
    IN_USE = "already in use"
    CLASS_SELECTOR = "class selector false"
    REQUEST_SELECTOR = "request selector false"
    NODE_MISMATCH = "device not available on this node"
    CAPACITY = "capacity exhausted or not offered"
    COUNTERS = "shared counter exhausted"
    TAINT = "taint not tolerated"
    CONSTRAINT = "constraint unsatisfiable"
    BINDING_CONDITIONS = "binding conditions not supported"


@dataclass(frozen=True)
class Rejection:
    device: DeviceID
    reason: Reason
    detail: str


@dataclass
class Tracer:
    """Collects rejections per (claim, request); the first reason per device is kept."""

    rejections: dict[tuple[str, str], dict[DeviceID, Rejection]] = field(default_factory=dict)

    def reject(
        self, claim: str, request: str, device: DeviceID, reason: Reason, detail: str = ""
    ) -> None:
        per_request = self.rejections.setdefault((claim, request), {})
        per_request.setdefault(device, Rejection(device, reason, detail))
