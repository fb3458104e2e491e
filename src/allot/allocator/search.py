"""The structured allocator: a depth-first search over devices (incubating v0.36.3).

Contract (as upstream's ``Allocator``): ``allocate(node, claims)`` returns one
``AllocationResult`` per claim, ``None`` when the claims do not fit together on the node,
or raises :class:`AllocationError` for bad input (``InvalidPoolsError`` when nothing fits
and some pool was invalid). Inputs are never modified. The search visits claims, requests
and devices in order, explores combinations (not permutations) within a request, tries
``firstAvailable`` alternatives strictly in order, and backtracks through undo closures.
``stats.allocate_one_invocations`` counts the recursion steps as upstream does.

An :class:`Allocator` is built once for a set of slices and classes (device views and
compiled selectors are reused across calls); each call has its own ``_Search`` state.
Ported from ``allocator_incubating.go`` (allocateOne, allocateDevice, isSelectable).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from allot import cel
from allot.allocator import results as resultbuilder
from allot.allocator.capacity import Consumption, consumption
from allot.allocator.constraints import Constraint
from allot.allocator.errors import AllocationError, InvalidPoolsError
from allot.allocator.pools import (
    NodePools,
    Pool,
    PoolDevice,
    PoolKey,
    ViewFactory,
    device_matches_node,
    gather_pools,
    pool_key,
)
from allot.allocator.requests import (
    MAX_DEVICES_PER_CLAIM,
    ClaimData,
    RequestBuilder,
    RequestData,
)
from allot.allocator.state import AllocatedState, DeviceID, device_id_text
from allot.allocator.trace import Reason, Rejection, Tracer
from allot.api import core_v1_nodes as corev1
from allot.api import resource_v1 as resourceapi
from allot.api.features import KUBERNETES_1_36, Features
from allot.api.quantity import Quantity
from allot.cel import EvaluationError

if TYPE_CHECKING:
    from allot.cel import DeviceView, SelectorCompiler

BLOCKING_TAINT_EFFECTS = ("NoSchedule", "NoExecute")
SliceKey = str | tuple[str, int]
"""A slice's name; (name, position) for a second slice of one name given to ``__init__``."""
NodeKey = tuple[str, tuple[tuple[str, str], ...]]
"""(node name, sorted labels): what a node's pools depend on besides the slices."""


class Outcome(enum.Enum):
    SUCCESS = "success"
    FAIL = "fail"
    MAX_EXCEEDED = "max-exceeded"


@dataclass
class Stats:
    allocate_one_invocations: int = 0


@dataclass
class InternalResult:
    request: RequestData
    device: PoolDevice
    share_id: str | None = None
    consumed: Consumption | None = None


def tolerates(toleration: resourceapi.DeviceToleration, taint: resourceapi.DeviceTaint) -> bool:
    """``resourceclaim.ToleratesTaint``."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator or resourceapi.TOLERATION_OP_EQUAL
    if operator == resourceapi.TOLERATION_OP_EXISTS:
        return True
    return operator == resourceapi.TOLERATION_OP_EQUAL and (toleration.value or "") == (
        taint.value or ""
    )


class Allocator:
    """Reusable across calls for one snapshot of slices and classes."""

    def __init__(
        self,
        slices: Iterable[resourceapi.ResourceSlice],
        classes: Iterable[resourceapi.DeviceClass],
        *,
        features: Features = KUBERNETES_1_36,
        compiler: SelectorCompiler | None = None,
        new_share_id: Callable[[], str] | None = None,
        views: ViewFactory | None = None,
    ) -> None:
        """``views`` makes the device views (default: a new one per device and slice
        object); a caller keeping its own views per slice (``allot.dra``) shares them."""
        if features.dra_list_type_attributes:
            raise AllocationError(
                "the DRAListTypeAttributes feature (the experimental "
                "allocator) is not supported by allot"
            )
        self.features = features
        self._compiler = compiler
        self.new_share_id = new_share_id or (lambda: str(uuid.uuid4()))
        self.new_view: ViewFactory = views or (lambda s, d: cel.DeviceView(s.spec.driver or "", d))
        self.classes = {c.metadata.name or "": c for c in classes}
        # Slices by name (insertion order kept, a replaced slice keeps its place), so an
        # allocator updated slice by slice equals one built from the same list.
        self._slices: dict[SliceKey, resourceapi.ResourceSlice] = {}
        self.on_node: dict[str, dict[SliceKey, resourceapi.ResourceSlice]] = {}
        self.shared: dict[SliceKey, resourceapi.ResourceSlice] = {}
        self.by_pool: dict[PoolKey, dict[SliceKey, resourceapi.ResourceSlice]] = {}
        self._views: dict[SliceKey, dict[str, DeviceView]] = {}
        # id(slice) -> its key: slices published with generateName have no name to look up
        self._keys: dict[int, SliceKey] = {}
        self._pools: dict[NodeKey, NodePools] = {}
        self._pool_users: dict[PoolKey, set[NodeKey]] = {}
        # selector key -> id(view) -> verdict; views are dropped with their slice
        self.selectable: dict[int, dict[int, tuple[Reason, str] | None]] = {}
        self._selector_keys: dict[tuple[str, tuple[str, ...]], int] = {}
        self._next_selector_key = 0
        self.stats = Stats()
        for position, slice_ in enumerate(slices):
            name = slice_.metadata.name or ""
            self._add_slice(name if name not in self._slices else (name, position), slice_)

    @property
    def slices(self) -> list[resourceapi.ResourceSlice]:
        return list(self._slices.values())

    # ------------------------------------------------------- incremental updates
    def put_slice(self, slice_: resourceapi.ResourceSlice) -> None:
        """Add or replace the slice of this name; only the pools that can see it (its
        node's, or every node's for a node-less slice, and every node using its pool) are
        gathered again, and only its devices' views and verdicts are dropped."""
        key = slice_.metadata.name or ""
        old = self._slices.get(key)
        if old is not None:
            self._forget_slice(key, old)
        self._add_slice(key, slice_)
        self._invalidate_pools(slice_)

    def remove_slice(self, name: str) -> None:
        old = self._slices.pop(name, None)
        if old is not None:
            self._forget_slice(name, old)

    def put_class(self, device_class: resourceapi.DeviceClass) -> None:
        """Add or replace a class; only verdicts of selectors naming it are dropped."""
        name = device_class.metadata.name or ""
        self.classes[name] = device_class
        self._forget_class(name)

    def remove_class(self, name: str) -> None:
        self.classes.pop(name, None)
        self._forget_class(name)

    def _add_slice(self, key: SliceKey, slice_: resourceapi.ResourceSlice) -> None:
        self._slices[key] = slice_
        self._keys.setdefault(id(slice_), key)
        if slice_.spec.node_name and not slice_.spec.shared_counters:
            self.on_node.setdefault(slice_.spec.node_name, {})[key] = slice_
        else:
            self.shared[key] = slice_
        self.by_pool.setdefault(pool_key(slice_), {})[key] = slice_

    def _forget_slice(self, key: SliceKey, old: resourceapi.ResourceSlice) -> None:
        """Drop ``old`` from the indexes (its place in ``_slices`` is kept by the caller
        that replaces it), its views, their verdicts and the pools that saw it."""
        if old.spec.node_name and not old.spec.shared_counters:
            self.on_node.get(old.spec.node_name, {}).pop(key, None)
        else:
            self.shared.pop(key, None)
        self.by_pool.get(pool_key(old), {}).pop(key, None)
        if self._keys.get(id(old)) == key:
            del self._keys[id(old)]
        views = self._views.pop(key, {})
        if views:
            gone = [id(v) for v in views.values()]
            for verdicts in self.selectable.values():
                for view_id in gone:
                    verdicts.pop(view_id, None)
        self._invalidate_pools(old)

    def _invalidate_pools(self, slice_: resourceapi.ResourceSlice) -> None:
        node = slice_.spec.node_name if not slice_.spec.shared_counters else None
        stale = set(self._pool_users.pop(pool_key(slice_), set()))
        if node:
            stale.update(k for k in self._pools if k[0] == node)
        else:
            stale.update(self._pools)
        for node_key in stale:
            self._pools.pop(node_key, None)

    def _forget_class(self, name: str) -> None:
        for signature in [s for s in self._selector_keys if s[0] == name]:
            self.selectable.pop(self._selector_keys.pop(signature), None)

    @property
    def compiler(self) -> SelectorCompiler:
        """The CEL compiler, made on first use: a run that compiles no selector (a fleet
        without claims) never loads the CEL runtime."""
        if self._compiler is None:
            self._compiler = cel.SelectorCompiler()
        return self._compiler

    def selector_key(self, request: RequestData) -> int:
        """A small integer naming the selectors a request applies (class + request); a
        changed class gets new keys, never reused ones."""
        signature = (request.class_name, tuple(s.expression for s in request.request_selectors))
        key = self._selector_keys.get(signature)
        if key is None:
            key = self._next_selector_key
            self._next_selector_key += 1
            self._selector_keys[signature] = key
        return key

    def view(self, slice_: resourceapi.ResourceSlice, device: resourceapi.Device) -> DeviceView:
        key = self._keys.get(id(slice_))
        if key is None or self._slices.get(key) is not slice_:  # one object under two keys
            key = next(k for k, s in self._slices.items() if s is slice_)
        views = self._views.setdefault(key, {})
        view = views.get(device.name or "")
        if view is None:
            view = self.new_view(slice_, device)
            views[device.name or ""] = view
        return view

    def pools_for(self, node: corev1.Node) -> list[Pool]:
        return self.node_pools(node).pools

    def node_pools(self, node: corev1.Node) -> NodePools:
        """The node's pools; cached, since they depend only on slices and node labels."""
        labels = node.metadata.labels or {}
        key = (node.metadata.name or "", tuple(sorted(labels.items())))
        cached = self._pools.get(key)
        if cached is None:
            candidates = [
                *self.on_node.get(node.metadata.name or "", {}).values(),
                *self.shared.values(),
            ]
            by_pool = {  # the candidates' pools only: every pool's would make it O(pools)
                k: list(self.by_pool.get(k, {}).values()) for k in map(pool_key, candidates)
            }
            cached = NodePools.of(gather_pools(node, candidates, by_pool, self.features, self.view))
            self._pools[key] = cached
            for slice_ in candidates:
                self._pool_users.setdefault(pool_key(slice_), set()).add(key)
        return cached

    def free_devices(self, node: corev1.Node, state: AllocatedState) -> int:
        """How many of the node's devices are not exclusively allocated."""
        return len(self.node_pools(node).device_ids - state.allocated_devices)

    def is_full(self, node: corev1.Node, state: AllocatedState) -> bool:
        """Every device of the node is exclusively allocated (no shareable ones, no invalid
        pools): claims without admin access or ``All`` requests cannot fit there."""
        return self.node_pools(node).is_full(state.allocated_devices)

    def examine(
        self,
        node: corev1.Node,
        claims: list[resourceapi.ResourceClaim],
        state: AllocatedState | None = None,
    ) -> list[RequestReport]:
        """Judge every device against every (sub)request on its own, for explanations.

        Unlike ``allocate`` this does not search: it applies the per-device checks (in use,
        selectors, node, capacity, counters free, taints) to each request separately, so
        the answer covers every request even when the search never reached it.
        """
        search = _Search(self, node, claims, state or AllocatedState(), Tracer())
        return search.examine()

    def allocate(
        self,
        node: corev1.Node,
        claims: list[resourceapi.ResourceClaim],
        state: AllocatedState | None = None,
        tracer: Tracer | None = None,
    ) -> list[resourceapi.AllocationResult] | None:
        search = _Search(self, node, claims, state or AllocatedState(), tracer)
        try:
            return search.run()
        finally:
            self.stats.allocate_one_invocations += search.invocations


@dataclass
class RequestReport:
    """The per-device verdicts for one (sub)request on one node."""

    claim: str
    request: str
    needed: int
    candidates: list[PoolDevice]
    rejections: list[Rejection]
    skipped_pools: list[str]


@dataclass
class _Search:
    """The state of one ``allocate`` call (no locking needed: never shared)."""

    allocator: Allocator
    node: corev1.Node
    claims: list[resourceapi.ResourceClaim]
    state: AllocatedState
    tracer: Tracer | None
    invocations: int = 0
    pools: list[Pool] = field(default_factory=list)
    candidates: list[tuple[Pool, PoolDevice]] = field(default_factory=list)
    node_pools: NodePools = field(
        default_factory=lambda: NodePools([], [], frozenset(), False, False)
    )
    claim_data: list[ClaimData] = field(default_factory=list)
    results: list[list[InternalResult]] = field(default_factory=list)
    allocating: list[set[DeviceID]] = field(default_factory=list)
    selectable_cache: dict[tuple[DeviceID, int], bool] = field(default_factory=dict)
    available_counters: dict[str, dict[str, dict[str, Quantity]]] = field(default_factory=dict)
    in_flight_counters: dict[str, dict[str, dict[str, Quantity]]] = field(default_factory=dict)
    in_flight_capacity: dict[DeviceID, Consumption] = field(default_factory=dict)

    # ---------------------------------------------------------------- entry point
    def run(self) -> list[resourceapi.AllocationResult] | None:
        features = self.allocator.features
        self.node_pools = self.allocator.node_pools(self.node)
        self.pools = self.node_pools.pools
        self.candidates = self.node_pools.candidates
        builder = RequestBuilder(
            compiler=self.allocator.compiler,
            classes=self.allocator.classes.get,
            admin_access=features.dra_admin_access,
            prioritized_list=features.dra_prioritized_list,
            consumable_capacity=features.dra_consumable_capacity,
            enumerate_all=self._enumerate_all,
        )
        self.claim_data = [builder.build(i, claim) for i, claim in enumerate(self.claims)]
        if self._nothing_free():
            return None
        self.results = [[] for _ in self.claims]
        self.allocating = [set() for _ in self.claims]
        outcome = self.allocate_one(0, 0, -1, 0, 0)
        if outcome is not Outcome.SUCCESS:
            if any(pool.is_invalid for pool in self.pools):
                raise InvalidPoolsError()
            return None
        return [
            resultbuilder.build_allocation(
                self.node, data, self.results[i], binding=self._binding_enabled()
            )
            for i, data in enumerate(self.claim_data)
        ]

    def _nothing_free(self) -> bool:
        """Fast path for a full node: every device is exclusively allocated already.

        The search would skip every device on its in-use check (before any selector runs)
        and fail, so the answer is the same without it. Not taken when a request could
        ignore in-use devices (admin access), when devices are shareable, for ``All``
        requests, when an invalid pool must be reported, or when there is nothing to
        allocate (a pod whose claims are all allocated fits a full node).
        """
        index = self.node_pools
        if not self.claim_data or not index.candidates or index.has_invalid:
            return False  # nothing left to allocate fits anywhere
        if index.has_shareable:
            return False
        for data in self.claim_data:
            for entry in data.requests:
                for request in [entry.exact] if entry.exact is not None else entry.alternatives:
                    if request is None or request.admin_access or request.is_all:
                        return False
        return self.state.allocated_devices.issuperset(index.device_ids)

    def _binding_enabled(self) -> bool:
        features = self.allocator.features
        return features.dra_device_binding_conditions and features.dra_resource_claim_device_status

    def _enumerate_all(self, request: RequestData) -> list[PoolDevice]:
        label = self.claim_label(request.claim_index)
        devices = []
        for pool in self.pools:
            if pool.is_incomplete:
                raise AllocationError(
                    f"claim {label}, request {request.name}: asks for all "
                    f"devices, but resource pool {pool.label} is currently "
                    "being updated"
                )
            if pool.is_invalid:
                raise AllocationError(
                    f"claim {label}, request {request.name}: asks for all "
                    f"devices, but resource pool {pool.label} is currently "
                    "invalid"
                )
            for device in pool.devices:
                if not self.is_selectable(device, request):
                    continue
                if (
                    self.allocator.features.dra_consumable_capacity
                    and self._capacity_for(device, request) is None
                ):
                    continue
                devices.append(device)
        return devices

    def claim_label(self, index: int) -> str:
        claim = self.claims[index]
        namespace, name = claim.metadata.namespace, claim.metadata.name or ""
        return f"{namespace}/{name}" if namespace else name

    def examine(self) -> list[RequestReport]:
        self.node_pools = self.allocator.node_pools(self.node)
        self.pools = self.node_pools.pools
        self.candidates = self.node_pools.candidates
        skipped = [
            f"{p.label} ({'incomplete' if p.is_incomplete else p.invalid_reason})"
            for p in self.pools
            if p.is_incomplete or p.is_invalid
        ]
        builder = RequestBuilder(
            compiler=self.allocator.compiler,
            classes=self.allocator.classes.get,
            admin_access=self.allocator.features.dra_admin_access,
            prioritized_list=self.allocator.features.dra_prioritized_list,
            consumable_capacity=self.allocator.features.dra_consumable_capacity,
            enumerate_all=lambda request: [d for _, d in self.candidates],
        )
        self.claim_data = [builder.build(i, claim) for i, claim in enumerate(self.claims)]
        self.allocating = [set() for _ in self.claims]
        reports = []
        for data in self.claim_data:
            for entry in data.requests:
                for request in [entry.exact] if entry.exact is not None else entry.alternatives:
                    if request is not None:
                        reports.append(self._examine_request(data.label, request, skipped))
        return reports

    def _examine_request(
        self, label: str, request: RequestData, skipped: list[str]
    ) -> RequestReport:
        tracer = Tracer()
        self.tracer = tracer
        accepted = []
        for _, device in self.candidates:
            # Selectors first: "not this kind of device" explains more than "in use".
            if not self.is_selectable(device, request) or self._in_use(
                device, request, request.claim_index
            ):
                continue
            if (
                self.allocator.features.dra_consumable_capacity
                and self._capacity_for(device, request) is None
            ):
                self._reject(request, device, Reason.CAPACITY)
                continue
            if self._counts_counters(device):
                if not self._take_counters(request, device):
                    continue
                self._release_counters(device)
            if self.allocator.features.dra_device_taints and not self._tolerated(request, device):
                continue
            accepted.append(device)
        rejections = list(tracer.rejections.get((label, request.name), {}).values())
        return RequestReport(
            label, request.name, request.num_devices, accepted, rejections, skipped
        )

    # ------------------------------------------------------------------ the search
    # port of allocator_incubating.go:allocateOne @ v0.36.3
    def allocate_one(self, claim: int, request: int, sub: int, device: int, start: int) -> Outcome:
        self.invocations += 1
        if claim == len(self.claim_data):
            return Outcome.SUCCESS
        data = self.claim_data[claim]
        if request == len(data.requests):
            outcome = self.allocate_one(claim + 1, 0, -1, 0, 0)
            return Outcome.FAIL if outcome is Outcome.MAX_EXCEEDED else outcome
        entry = data.requests[request]
        if entry.exact is None and sub < 0:
            return self._try_alternatives(claim, request)
        current = entry.exact if entry.exact is not None else entry.alternatives[sub]
        if current.is_all and not current.all_devices:
            return Outcome.FAIL
        if device == current.num_devices:
            return self.allocate_one(claim, request + 1, -1, 0, 0)
        if len(self.results[claim]) + current.num_devices - device > MAX_DEVICES_PER_CLAIM:
            return Outcome.MAX_EXCEEDED
        if current.all_devices is not None:
            return self._allocate_listed(claim, request, sub, device, current)
        return self._allocate_next(claim, request, sub, device, start, current)

    def _try_alternatives(self, claim: int, request: int) -> Outcome:
        all_exceeded = True
        for sub in range(len(self.claim_data[claim].requests[request].alternatives)):
            outcome = self.allocate_one(claim, request, sub, 0, 0)
            if outcome is Outcome.MAX_EXCEEDED:
                continue
            all_exceeded = False
            if outcome is Outcome.SUCCESS:
                return outcome
        return Outcome.MAX_EXCEEDED if all_exceeded else Outcome.FAIL

    def _allocate_listed(
        self, claim: int, request: int, sub: int, device: int, current: RequestData
    ) -> Outcome:
        listed = current.all_devices or []
        undo = self.try_allocate(current, listed[device], must=True)
        if undo is None:
            return Outcome.FAIL
        outcome = self.allocate_one(claim, request, sub, device + 1, 0)
        if outcome is not Outcome.SUCCESS:
            undo()
        return outcome

    def _allocate_next(
        self, claim: int, request: int, sub: int, device: int, start: int, current: RequestData
    ) -> Outcome:
        for position in range(start, len(self.candidates)):
            _, candidate = self.candidates[position]
            if not self._is_candidate(candidate, current, claim):
                continue
            undo = self.try_allocate(current, candidate, must=False)
            if undo is None:
                continue
            outcome = self.allocate_one(claim, request, sub, device + 1, position + 1)
            if outcome is Outcome.SUCCESS:
                return outcome
            undo()
            if outcome is Outcome.MAX_EXCEEDED:
                return outcome
        return Outcome.FAIL

    def _is_candidate(self, device: PoolDevice, request: RequestData, claim: int) -> bool:
        if self._in_use(device, request, claim):
            return False
        if not self.is_selectable(device, request):
            return False
        if (
            self.allocator.features.dra_consumable_capacity
            and self._capacity_for(device, request) is None
        ):
            self._reject(request, device, Reason.CAPACITY)
            return False
        return True

    def _in_use(self, device: PoolDevice, request: RequestData, claim: int) -> bool:
        if request.admin_access:
            in_use = device.id in self.allocating[claim]
        else:
            in_use = device.id in self.state.allocated_devices or any(
                device.id in chosen for chosen in self.allocating
            )
        if in_use:
            self._reject(request, device, Reason.IN_USE, self._holder(device))
        return in_use

    # ---------------------------------------------------------------- selection
    # port of allocator_incubating.go:isSelectable @ v0.36.3
    def is_selectable(self, device: PoolDevice, request: RequestData) -> bool:
        key = (device.id, id(request))
        cached = self.selectable_cache.get(key)
        if cached is None:
            cached = self._selectable_uncached(device, request)
            self.selectable_cache[key] = cached
        return cached

    def _selectable_uncached(self, device: PoolDevice, request: RequestData) -> bool:
        if device.device.binding_conditions and not self._binding_enabled():
            self._reject(request, device, Reason.BINDING_CONDITIONS)
            return False
        if device.slice.spec.per_device_node_selection and not device_matches_node(
            device.device, self.node
        ):
            self._reject(request, device, Reason.NODE_MISMATCH)
            return False
        # Selector verdicts depend only on the device and the selectors: cache them for
        # the allocator's lifetime, with the reason so explanations can replay it.
        cache = self.allocator.selectable.setdefault(self.allocator.selector_key(request), {})
        key = id(device.view)
        if key in cache:
            verdict = cache[key]
        else:
            verdict = cache[key] = self._selector_verdict(device, request)
        if verdict is not None:
            self._reject(request, device, verdict[0], verdict[1])
            return False
        return True

    def _selector_verdict(
        self, device: PoolDevice, request: RequestData
    ) -> tuple[Reason, str] | None:
        owners = [
            (f"class {request.class_name}", request.class_selectors, Reason.CLASS_SELECTOR),
            (
                f"claim {self.claim_label(request.claim_index)}",
                request.request_selectors,
                Reason.REQUEST_SELECTOR,
            ),
        ]
        for owner, selectors, reason in owners:
            for position, selector in enumerate(selectors):
                try:
                    matched = selector.matches(device.view)
                except EvaluationError as err:
                    raise AllocationError(
                        f"{owner}: selector #{position}: CEL runtime error: {err}"
                    ) from None
                if not matched:
                    where = owner if reason is Reason.CLASS_SELECTOR else "request"
                    return reason, f"{where}, selector #{position}: {selector.expression}"
        return None

    def _capacity_for(self, device: PoolDevice, request: RequestData) -> Consumption | None:
        return consumption(
            device.device,
            request.capacity_requests,
            self.state.aggregated_capacity.get(device.id, {}),
            self.in_flight_capacity.get(device.id, {}),
        )

    # ------------------------------------------------------------------ allocation
    # port of allocator_incubating.go:allocateDevice and rollbackDevice @ v0.36.3
    def try_allocate(
        self, request: RequestData, device: PoolDevice, *, must: bool
    ) -> Callable[[], None] | None:
        """Take ``device`` for ``request``: the undo closure, or None (every change made
        on the way is rolled back, as upstream since v0.36.3)."""
        features = self.allocator.features
        claim = request.claim_index
        multi = device.is_multi_allocatable
        if request.admin_access and not multi and device.id in self.allocating[claim]:
            return None
        if not request.admin_access and (
            device.id in self.state.allocated_devices
            or (not multi and any(device.id in chosen for chosen in self.allocating))
        ):
            self._reject(request, device, Reason.IN_USE, self._holder(device))
            return None
        if device.device.consumes_counters and not features.dra_partitionable_devices:
            return None
        taken = _Taken(self, request, device)
        if self._counts_counters(device):
            if not self._take_counters(request, device):
                return None
            taken.counters = True
        if features.dra_device_taints and not self._tolerated(request, device):
            taken.rollback()
            return None
        if not self._add_to_constraints(request, device, taken):
            taken.rollback()
            if must:
                raise AllocationError(
                    f"claim {self.claim_label(claim)}, request {request.name}: cannot add device "
                    f"{device_id_text(device.id)} because a claim constraint would not be "
                    "satisfied"
                )
            return None
        if not multi:
            self.allocating[claim].add(device.id)
            taken.marked = True
        result = InternalResult(request, device)
        if features.dra_consumable_capacity:
            # What this claim's earlier requests already take counts too: an `All` request
            # enumerated up front may find a shared device full by now.
            result.consumed = self._capacity_for(device, request)
            if result.consumed is None:
                self._reject(request, device, Reason.CAPACITY)
                taken.rollback()
                return None
            if multi:
                result.share_id = self.allocator.new_share_id()
                taken.share(result.consumed)
        self.results[claim].append(result)
        taken.results = len(self.results[claim]) - 1
        return taken.rollback

    def _tolerated(self, request: RequestData, device: PoolDevice) -> bool:
        for taint in device.device.taints or []:
            if taint.effect not in BLOCKING_TAINT_EFFECTS:
                continue
            if not any(tolerates(t, taint) for t in request.tolerations):
                self._reject(
                    request, device, Reason.TAINT, f"{taint.key}={taint.value or ''}:{taint.effect}"
                )
                return False
        return True

    def _add_to_constraints(self, request: RequestData, device: PoolDevice, taken: _Taken) -> bool:
        """Add the device to each constraint of its claim that applies to the request,
        recording each in ``taken``; False at the first that refuses it."""
        for constraint in self.claim_data[request.claim_index].constraints:
            if not constraint.applies_to(request.name):
                continue
            if not constraint.add(request.name, device):
                self._reject(request, device, Reason.CONSTRAINT, constraint.attribute)
                return False
            taken.constraints.append(constraint)
        return True

    def _add_in_flight_capacity(self, device_id: DeviceID, amounts: Consumption, sign: int) -> None:
        """Upstream's ``allocatingCapacity``: an entry appears with the first share of a
        device (even one consuming nothing) and goes when every amount in it is zero
        (``ConsumedCapacityCollection.Remove``)."""
        totals = self.in_flight_capacity.setdefault(device_id, {})
        for name, amount in amounts.items():
            current = totals.get(name, Quantity(0))
            if sign > 0:
                totals[name] = current.add(amount)
            elif name in totals:
                totals[name] = current.sub(amount)
        if sign < 0 and all(q == Quantity(0) for q in totals.values()):
            del self.in_flight_capacity[device_id]

    # -------------------------------------------------------------------- counters
    def _counts_counters(self, device: PoolDevice) -> bool:
        """Whether taking the device checks (and reserves) its counters: it consumes some,
        and is not a shared device already in use (whose counters were taken once)."""
        if not device.device.consumes_counters:
            return False
        return not device.is_multi_allocatable or (
            device.id not in self.state.aggregated_capacity
            and device.id not in self.in_flight_capacity
        )

    def _take_counters(self, request: RequestData, device: PoolDevice) -> bool:
        """Reserve the counters of a device that counts them (:meth:`_counts_counters`);
        False, nothing reserved, when a counter would run out."""
        consumptions = device.device.consumes_counters or []
        pool_name = device.id[1]
        available = self._available_counters(device.id[0], pool_name)
        in_flight = self.in_flight_counters.setdefault(pool_name, {})
        for consumption_ in consumptions:
            counters = in_flight.setdefault(consumption_.counter_set or "", {})
            for name, counter in (consumption_.counters or {}).items():
                counters[name] = counters.get(name, Quantity(0)).add(counter.value or Quantity(0))
        for consumption_ in consumptions:
            set_name = consumption_.counter_set or ""
            for name in consumption_.counters or {}:
                free = available.get(set_name, {}).get(name, Quantity(0))
                used = in_flight[set_name][name]
                if free < used:
                    self._reject(
                        request,
                        device,
                        Reason.COUNTERS,
                        f"{set_name}/{name}: needs {used}, {free} free",
                    )
                    self._release_counters(device)
                    return False
        return True

    def _release_counters(self, device: PoolDevice) -> None:
        in_flight = self.in_flight_counters.get(device.id[1], {})
        for consumption_ in device.device.consumes_counters or []:
            counters = in_flight.get(consumption_.counter_set or "", {})
            for name, counter in (consumption_.counters or {}).items():
                counters[name] = counters.get(name, Quantity(0)).sub(counter.value or Quantity(0))

    def _available_counters(self, driver: str, pool_name: str) -> dict[str, dict[str, Quantity]]:
        # Keyed by pool name only, as upstream (ledger 5.15.4).
        cached = self.available_counters.get(pool_name)
        if cached is not None:
            return cached
        pool = next((p for p in self.pools if p.driver == driver and p.name == pool_name), None)
        available: dict[str, dict[str, Quantity]] = {}
        if pool is not None:
            available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for device in pool.counting_devices:
                if not self._committed(device.id):
                    continue
                for consumption_ in device.device.consumes_counters or []:
                    counters = available.setdefault(consumption_.counter_set or "", {})
                    for name, counter in (consumption_.counters or {}).items():
                        counters[name] = counters.get(name, Quantity(0)).sub(
                            counter.value or Quantity(0)
                        )
        self.available_counters[pool_name] = available
        return available

    def _committed(self, device_id: DeviceID) -> bool:
        """``IsDeviceAllocated`` (v0.36.2): allocated exclusively, or shared by a claim."""
        state = self.state
        return (
            device_id in state.allocated_devices
            or device_id in state.aggregated_capacity
            or any(shared[:3] == device_id for shared in state.shared_device_ids)
        )

    # ---------------------------------------------------------------------- trace
    def _holder(self, device: PoolDevice) -> str:
        owner = self.state.owners.get(device.id)
        return f"held by {owner}" if owner else "chosen for another claim of this step"

    def _reject(
        self, request: RequestData, device: PoolDevice, reason: Reason, detail: str = ""
    ) -> None:
        if self.tracer is not None:
            self.tracer.reject(
                self.claim_label(request.claim_index), request.name, device.id, reason, detail
            )


@dataclass
class _Taken:
    """What taking one device for a request changed, so that all of it can be undone
    (upstream's ``deviceRollbackState``): on a rejection part-way, and when the search
    backtracks past the device."""

    search: _Search
    request: RequestData
    device: PoolDevice
    counters: bool = False
    constraints: list[Constraint] = field(default_factory=list)
    marked: bool = False
    shared: Consumption | None = None
    share_existed: bool = False
    results: int | None = None

    def share(self, consumed: Consumption) -> None:
        """Record one more share of a multi-allocatable device as being allocated."""
        search, device_id = self.search, self.device.id
        self.share_existed = device_id in search.in_flight_capacity
        search._add_in_flight_capacity(device_id, consumed, +1)
        self.shared = consumed

    def rollback(self) -> None:
        search, device, claim = self.search, self.device, self.request.claim_index
        if self.results is not None:
            del search.results[claim][self.results :]
        if self.shared is not None:
            search._add_in_flight_capacity(device.id, self.shared, -1)
            if self.share_existed:  # an earlier share still marks the device as shared
                search.in_flight_capacity.setdefault(device.id, {})
        if self.marked:
            search.allocating[claim].discard(device.id)
        for constraint in reversed(self.constraints):
            constraint.remove(self.request.name, device)
        if self.counters:
            search._release_counters(device)
