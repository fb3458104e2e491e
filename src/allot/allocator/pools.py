"""Gathering the resource pools a node can use (port of ``GatherPools``, incubating v0.36.3).

A pool is all slices of one (driver, pool name) at its newest generation. Pools missing
slices are *incomplete* (their devices unusable), pools with duplicate device or counter-set
names or dangling counter references are *invalid* (kept, unusable, reported only when
nothing fits). Pools are ordered by (driver, pool name), those with binding conditions last;
devices within a pool by slice name, then slice order: that order is the allocator's only
preference. Called by :mod:`allot.allocator.search`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from allot.allocator.errors import AllocationError
from allot.allocator.nodes import node_selector_matches
from allot.allocator.state import DeviceID
from allot.api import core_v1_nodes as corev1
from allot.api import resource_v1 as resourceapi
from allot.api.features import Features
from allot.api.quantity import Quantity

if TYPE_CHECKING:  # the CEL runtime is loaded when a device is first viewed
    from allot.cel import DeviceView

PoolKey = tuple[str, str]
ViewFactory = Callable[[resourceapi.ResourceSlice, resourceapi.Device], "DeviceView"]


@dataclass
class PoolDevice:
    """One device of a pool, with everything the search needs to judge it. Its CEL view is
    made when a selector first reads it: a pool's devices on other nodes are there only to
    count the shared counters they consume (every node's pool with DynamicMIG)."""

    id: DeviceID
    slice: resourceapi.ResourceSlice
    device: resourceapi.Device
    view_for: ViewFactory = field(repr=False, compare=False)
    is_multi_allocatable: bool = False
    _view: DeviceView | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.is_multi_allocatable = bool(self.device.allow_multiple_allocations)

    @property
    def view(self) -> DeviceView:
        if self._view is None:
            self._view = self.view_for(self.slice, self.device)
        return self._view


@dataclass
class Pool:
    driver: str
    name: str
    generation: int
    devices: list[PoolDevice] = field(default_factory=list)
    counting_devices: list[PoolDevice] = field(default_factory=list)
    counter_sets: dict[str, dict[str, Quantity]] = field(default_factory=dict)
    is_incomplete: bool = False
    is_invalid: bool = False
    invalid_reason: str = ""

    @property
    def has_binding_conditions(self) -> bool:
        return any(d.device.binding_conditions for d in self.devices)

    @property
    def label(self) -> str:
        return f"{self.driver}/{self.name}"


@dataclass
class NodePools:
    """Everything about a node's pools that does not change while the slices do not."""

    pools: list[Pool]
    candidates: list[tuple[Pool, PoolDevice]]
    device_ids: frozenset[DeviceID]
    has_invalid: bool
    has_shareable: bool

    @classmethod
    def of(cls, pools: list[Pool]) -> NodePools:
        candidates = [
            (pool, device)
            for pool in pools
            if not pool.is_incomplete and not pool.is_invalid
            for device in pool.devices
        ]
        return cls(
            pools,
            candidates,
            frozenset(d.id for _, d in candidates),
            any(p.is_invalid for p in pools),
            any(d.is_multi_allocatable for _, d in candidates),
        )

    def is_full(self, allocated: AbstractSet[DeviceID]) -> bool:
        """Every device is exclusively allocated (no shareable ones, no invalid pools), or
        there are none: claims without admin access or ``All`` requests cannot fit."""
        if not self.candidates or self.has_invalid or self.has_shareable:
            return not self.candidates and not self.has_invalid
        return self.device_ids <= allocated


def slice_matches_node(slice_: resourceapi.ResourceSlice, node: corev1.Node) -> bool | None:
    """Slice-level node selection; None for per-device selection (decided per device)."""
    spec = slice_.spec
    if spec.node_name:
        return spec.node_name == node.metadata.name
    if spec.all_nodes:
        return True
    if spec.node_selector is not None:
        try:
            return node_selector_matches(spec.node_selector, node)
        except AllocationError as err:
            raise AllocationError(
                "gather pool information: failed to perform node selection for slice "
                f"{slice_.metadata.name}: {err}"
            ) from None
    if spec.per_device_node_selection:
        return None
    return False


def device_matches_node(device: resourceapi.Device, node: corev1.Node) -> bool:
    if device.node_name:
        return device.node_name == node.metadata.name
    if device.all_nodes:
        return True
    if device.node_selector is not None:
        return node_selector_matches(device.node_selector, node)
    return False


def _is_relevant(slice_: resourceapi.ResourceSlice, node: corev1.Node) -> bool:
    if slice_.spec.shared_counters:
        return True
    matches = slice_matches_node(slice_, node)
    if matches is None:
        return any(device_matches_node(d, node) for d in slice_.spec.devices or [])
    return matches


def _generation(slice_: resourceapi.ResourceSlice) -> int:
    return (slice_.spec.pool.generation or 0) if slice_.spec.pool else 0


def pool_key(slice_: resourceapi.ResourceSlice) -> PoolKey:
    pool_name = slice_.spec.pool.name if slice_.spec.pool else ""
    return slice_.spec.driver or "", pool_name or ""


def gather_pools(
    node: corev1.Node,
    candidates: list[resourceapi.ResourceSlice],
    all_by_pool: dict[PoolKey, list[resourceapi.ResourceSlice]],
    features: Features,
    view_for: ViewFactory,
) -> list[Pool]:
    """The pools usable on ``node``, in search order."""
    newest: dict[PoolKey, list[resourceapi.ResourceSlice]] = {}
    for slice_ in candidates:
        if not features.dra_partitionable_devices and (
            slice_.spec.per_device_node_selection or slice_.spec.shared_counters
        ):
            continue
        if not _is_relevant(slice_, node):
            continue
        key = pool_key(slice_)
        known = newest.get(key)
        if known is None or _generation(slice_) > _generation(known[0]):
            newest[key] = [slice_]
        elif _generation(slice_) == _generation(known[0]):
            known.append(slice_)
    pools = []
    for key, slices in newest.items():
        pool = _complete_pool(key, slices, all_by_pool.get(key, slices), features, view_for)
        if pool is not None:
            pools.append(pool)
    pools.sort(key=lambda p: (p.has_binding_conditions, p.driver, p.name))
    return pools


def _complete_pool(
    key: PoolKey,
    slices: list[resourceapi.ResourceSlice],
    all_slices: list[resourceapi.ResourceSlice],
    features: Features,
    view_for: ViewFactory,
) -> Pool | None:
    generation = _generation(slices[0])
    expected = (slices[0].spec.pool.resource_slice_count or 0) if slices[0].spec.pool else 0
    if len(slices) == expected:
        return _build_pool(key, generation, slices, [], features, view_for)
    if any(_generation(s) > generation for s in all_slices):
        return None  # obsolete: a newer generation is being published
    same = [s for s in all_slices if _generation(s) == generation]
    if len(same) == expected:
        targeting = {id(s) for s in slices}
        others = [s for s in same if id(s) not in targeting]
        return _build_pool(key, generation, slices, others, features, view_for)
    return Pool(key[0], key[1], generation, is_incomplete=True)


def _build_pool(
    key: PoolKey,
    generation: int,
    slices: list[resourceapi.ResourceSlice],
    others: list[resourceapi.ResourceSlice],
    features: Features,
    view_for: ViewFactory,
) -> Pool:
    pool = Pool(key[0], key[1], generation)
    for slice_ in sorted(slices + others, key=lambda s: s.metadata.name or ""):
        for counter_set in (
            slice_.spec.shared_counters or [] if features.dra_partitionable_devices else []
        ):
            name = counter_set.name or ""
            if name in pool.counter_sets:
                return _invalid(pool, f"duplicate counter set name {name}")
            pool.counter_sets[name] = {
                c: v.value or Quantity(0) for c, v in (counter_set.counters or {}).items()
            }
    targeting = {id(s) for s in slices}
    seen: set[str] = set()
    for slice_ in sorted(slices + others, key=lambda s: s.metadata.name or ""):
        for device in slice_.spec.devices or []:
            entry = PoolDevice((key[0], key[1], device.name or ""), slice_, device, view_for)
            problem = _counter_problem(device, pool.counter_sets, features)
            if problem:
                return _invalid(pool, problem)
            pool.counting_devices.append(entry)
            if id(slice_) not in targeting:
                continue
            if entry.id[2] in seen:
                return _invalid(pool, f"duplicate device name {entry.id[2]}")
            seen.add(entry.id[2])
            pool.devices.append(entry)
    return pool


def _counter_problem(
    device: resourceapi.Device, counter_sets: dict[str, dict[str, Quantity]], features: Features
) -> str:
    if not features.dra_partitionable_devices:
        return ""
    for consumption in device.consumes_counters or []:
        set_name = consumption.counter_set or ""
        counters = counter_sets.get(set_name)
        if counters is None:
            return f"counter set {set_name} not found"
        for counter in consumption.counters or {}:
            if counter not in counters:
                return f"counter {counter} not found in counter set {set_name}"
    return ""


def _invalid(pool: Pool, reason: str) -> Pool:
    pool.is_invalid = True
    pool.invalid_reason = reason
    pool.devices = []
    pool.counting_devices = []
    return pool
