"""Per-claim pre-checks and request data (port of the incubating allocator's Allocate setup).

Before searching, every claim's requests are resolved in spec order: class lookup, compiled
class and request selectors, allocation mode and device count (``All`` enumerates its
devices now), feature-gate checks, the 32-device claim limit, and constraint trackers. All
problems here are fatal and carry upstream's texts (``claim ns/c, request r: ...``).
Called by :mod:`allot.allocator.search`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from allot.allocator.constraints import Constraint, build_constraint
from allot.allocator.errors import AllocationError
from allot.allocator.pools import PoolDevice
from allot.api import resource_v1 as resourceapi
from allot.api.quantity import Quantity
from allot.cel import CompileError

if TYPE_CHECKING:  # the CEL runtime is loaded when a selector is first compiled
    from allot.cel import CompiledSelector, SelectorCompiler

MAX_DEVICES_PER_CLAIM = 32


def claim_label(claim: resourceapi.ResourceClaim) -> str:
    namespace = claim.metadata.namespace
    name = claim.metadata.name or ""
    return f"{namespace}/{name}" if namespace else name


@dataclass(eq=False)
class RequestData:
    """One request or subrequest, ready for the search."""

    claim_index: int
    name: str  # "req" or "req/sub", as results name it
    class_name: str
    device_class: resourceapi.DeviceClass
    class_selectors: list[CompiledSelector]
    request_selectors: list[CompiledSelector]
    mode: str
    num_devices: int
    admin_access: bool
    tolerations: list[resourceapi.DeviceToleration]
    capacity_requests: dict[str, Quantity]
    all_devices: list[PoolDevice] | None = None

    @property
    def is_all(self) -> bool:
        return self.mode == resourceapi.ALLOCATION_MODE_ALL


@dataclass
class RequestEntry:
    """A claim request: either ``exactly`` or ordered ``firstAvailable`` alternatives."""

    name: str
    exact: RequestData | None
    alternatives: list[RequestData] = field(default_factory=list)

    @property
    def min_devices(self) -> int:
        if self.exact is not None:
            return self.exact.num_devices
        return min((a.num_devices for a in self.alternatives), default=0)


@dataclass
class ClaimData:
    claim: resourceapi.ResourceClaim
    label: str
    requests: list[RequestEntry]
    constraints: list[Constraint]


ClassLookup = Callable[[str], resourceapi.DeviceClass | None]
AllEnumerator = Callable[[RequestData], list[PoolDevice]]


@dataclass
class RequestBuilder:
    """Turns claims into ClaimData; ``enumerate_all`` lists the devices of ``All`` requests."""

    compiler: SelectorCompiler
    classes: ClassLookup
    admin_access: bool
    prioritized_list: bool
    consumable_capacity: bool
    enumerate_all: AllEnumerator

    def build(self, index: int, claim: resourceapi.ResourceClaim) -> ClaimData:
        label = claim_label(claim)
        devices = claim.spec.devices or resourceapi.DeviceClaim()
        entries = [self._entry(index, label, request) for request in devices.requests or []]
        total = sum(entry.min_devices for entry in entries)
        if total > MAX_DEVICES_PER_CLAIM:
            raise AllocationError(
                f"claim {label}: number of requested devices {total} "
                f"exceeds the claim limit of {MAX_DEVICES_PER_CLAIM}"
            )
        constraints: list[Constraint] = []
        for position, constraint in enumerate(devices.constraints or []):
            tracker = build_constraint(constraint, distinct_enabled=self.consumable_capacity)
            if tracker is None:
                raise AllocationError(
                    f"claim {label}, constraint #{position}: empty constraint "
                    "(unsupported constraint type?)"
                )
            constraints.append(tracker)
        return ClaimData(claim, label, entries, constraints)

    def _entry(self, index: int, label: str, request: resourceapi.DeviceRequest) -> RequestEntry:
        name = request.name or ""
        if request.first_available:
            if not self.prioritized_list:
                raise AllocationError(
                    f"claim {label}, request {name}: has subrequests, but the "
                    "DRAPrioritizedList feature is disabled"
                )
            alternatives = [
                self._data(
                    index, label, f"{name}/{sub.name}", name, sub, False, subrequest=sub.name or ""
                )
                for sub in request.first_available
            ]
            return RequestEntry(name, None, alternatives)
        if request.exactly is None:
            # Neither exactly nor firstAvailable: kube-scheduler's DRA plugin refuses the
            # claim before the allocator runs (whose accessor would dereference nil).
            raise AllocationError(f"request {name}: unsupported request type")
        exact = request.exactly
        return RequestEntry(name, self._data(index, label, name, name, exact, exact.admin_access))

    def _data(
        self,
        index: int,
        label: str,
        result_name: str,
        request_name: str,
        source: resourceapi.ExactDeviceRequest | resourceapi.DeviceSubRequest,
        admin_access: bool | None,
        subrequest: str = "",
    ) -> RequestData:
        where = f"claim {label}, request {request_name}"
        if (
            source.capacity is not None
            and source.capacity.requests
            and not self.consumable_capacity
        ):
            subject = f"claim {label}, subrequest {subrequest}" if subrequest else where
            raise AllocationError(
                f"{subject}: has capacity requests, but the "
                "DRAConsumableCapacity feature is disabled"
            )
        request_selectors = self._selectors(source.selectors, where, f"claim {label}")
        if admin_access is not None and not self.admin_access:
            raise AllocationError(
                f"{where}: admin access is requested, but the feature is disabled"
            )
        class_name = source.device_class_name or ""
        if not class_name:
            raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
        device_class = self.classes(class_name)
        if device_class is None:
            raise AllocationError(
                f"{where}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        class_selectors = self._selectors(device_class.spec.selectors, where, f"class {class_name}")
        data = RequestData(
            claim_index=index,
            name=result_name,
            class_name=class_name,
            device_class=device_class,
            class_selectors=class_selectors,
            request_selectors=request_selectors,
            mode=source.allocation_mode or resourceapi.ALLOCATION_MODE_EXACT_COUNT,
            num_devices=0,
            admin_access=bool(admin_access),
            tolerations=list(source.tolerations or []),
            capacity_requests=dict(source.capacity.requests or {}) if source.capacity else {},
        )
        if data.mode == resourceapi.ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = source.count if source.count is not None else 1
        elif data.mode == resourceapi.ALLOCATION_MODE_ALL:
            data.all_devices = self.enumerate_all(data)
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"{where}: unsupported count mode {data.mode}")
        return data

    def _selectors(
        self, selectors: list[resourceapi.DeviceSelector] | None, where: str, owner: str
    ) -> list[CompiledSelector]:
        compiled = []
        for position, selector in enumerate(selectors or []):
            expression = selector.cel.expression if selector.cel else None
            if not expression:
                raise AllocationError(
                    f"{where}, selector #{position}: CEL expression empty "
                    "(unsupported selector type?)"
                )
            try:
                compiled.append(self.compiler.compile(expression, stored=True))
            except CompileError as err:
                raise AllocationError(
                    f"{owner}: selector #{position}: CEL compile error: {err.detail}"
                ) from None
        return compiled


def needs_in_use_devices(claim: resourceapi.ResourceClaim) -> bool:
    """Admin access and ``All`` requests can be satisfied by devices already allocated, so
    a node whose devices are all taken may still fit them."""
    for request in (
        claim.spec.devices.requests if claim.spec and claim.spec.devices else None
    ) or []:
        exact = request.exactly
        if exact is not None and (exact.admin_access or exact.allocation_mode == "All"):
            return True
        if any(s.allocation_mode == "All" for s in request.first_available or []):
            return True
    return False
