"""The DRA facts of one cluster, worked out once per change instead of once per reader.

The scheduler, capacity, audit and the tenant sync all need the same facts: each device's
CEL view and ``memory``, which classes select it, which devices claims hold. A
:class:`DraIndex` keeps them, fed wire objects: from store events through :meth:`observe`
(one listener per platform, registered before the controllers, so it is current when they
reconcile) or from listings through :meth:`refresh` (standalone readers of a store). A
slice's entry is rebuilt only when its ``resourceVersion`` changes; class verdicts are
computed lazily per (class, slice) with ONE :class:`SelectorCompiler` and dropped when
either changes; claims' classes and allocated devices (adminAccess results excluded, as
the allocator does) are kept per claim, with the :class:`AllocatedState` built from them.
:class:`AllocatorFeed` keeps an :class:`Allocator` current from the index's changes.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from allot.allocator import AllocatedState, Allocator
from allot.api import claims as claims_api
from allot.api import resource_v1 as resourceapi
from allot.api.features import KUBERNETES_1_36, Features
from allot.api.quantity import Quantity
from allot.cel import CompileError, DeviceView, EvaluationError, SelectorCompiler
from allot.dra import allocatable
from allot.types import Obj

DeviceKey = tuple[str, str, str]  # driver, pool, device
SLICES = "resourceslices.resource.k8s.io"
CLASSES = "deviceclasses.resource.k8s.io"
CLAIMS = "resourceclaims.resource.k8s.io"


class Event(Protocol):
    """What :meth:`DraIndex.observe` reads of a store's watch event."""

    @property
    def type(self) -> str: ...
    @property
    def rv(self) -> int: ...
    @property
    def cluster(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def object(self) -> Obj: ...


@dataclass
class SliceEntry:
    """One ResourceSlice at one resourceVersion, with what readers derive from it."""

    name: str
    version: str
    raw: Obj
    model: resourceapi.ResourceSlice
    views: dict[str, DeviceView]  # device name -> view
    memory: dict[str, int]  # device name -> bytes, devices with a memory capacity
    consumes: dict[str, allocatable.Consumption]  # each (counter set, counter) once
    counters: dict[tuple[str, str], int]  # (counter set, counter) -> total

    @property
    def driver(self) -> str:
        return self.model.spec.driver or ""

    @property
    def pool(self) -> str:
        return (self.model.spec.pool.name if self.model.spec.pool else "") or ""

    @property
    def node(self) -> str:
        return self.model.spec.node_name or ""

    @classmethod
    def of(cls, raw: Obj) -> SliceEntry:
        model = resourceapi.ResourceSlice.model_validate(raw)
        driver = model.spec.driver or ""
        entry = cls(raw["metadata"]["name"], _version(raw), raw, model, {}, {}, {}, {})
        for device, wire in zip(model.spec.devices or [], _devices(raw), strict=True):
            name = device.name or ""
            entry.views[name] = DeviceView(driver, device)
            value = ((wire.get("capacity") or {}).get("memory") or {}).get("value")
            if value is not None:
                entry.memory[name] = quantity(value)
            entry.consumes[name] = allocatable.merged(
                (item.get("counterSet", ""), counter, quantity(amount.get("value")))
                for item in wire.get("consumesCounters") or []
                for counter, amount in (item.get("counters") or {}).items()
            )
        for counter_set in (raw.get("spec") or {}).get("sharedCounters") or []:
            for counter, amount in (counter_set.get("counters") or {}).items():
                entry.counters[(counter_set["name"], counter)] = quantity(amount.get("value"))
        return entry


@dataclass(frozen=True)
class Verdict:
    """A class's selectors on the devices of one slice: the devices they all accept, and
    the devices one of them failed on (device -> the CEL runtime error's text), evaluated
    as the allocator does (in order, stopping at the first that does not accept)."""

    selected: frozenset[str]
    errors: dict[str, str]


@dataclass
class ClassEntry:
    version: str
    model: resourceapi.DeviceClass
    expressions: tuple[str, ...]


@dataclass
class ClaimEntry:
    """A claim's classes and the devices its allocation holds (no adminAccess results)."""

    classes: tuple[str, ...]
    allocation: Obj | None
    devices: dict[DeviceKey, str]  # device -> request


@dataclass
class Changes:
    """Slice and class names changed since a reader last drained them."""

    slices: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)  # slices removed (maybe added again)
    classes: set[str] = field(default_factory=set)

    def clear(self) -> None:
        self.slices.clear()
        self.removed.clear()
        self.classes.clear()


class DraIndex:
    def __init__(self, cluster: str | None = None, compiler: SelectorCompiler | None = None):
        """``cluster``: the only cluster whose events :meth:`observe` takes (None: all)."""
        self.cluster = cluster
        self.compiler = compiler or SelectorCompiler()
        self.slices: dict[str, SliceEntry] = {}
        self.classes: dict[str, ClassEntry] = {}
        self.claims: dict[str, ClaimEntry] = {}  # "namespace/name" -> entry
        self.catalogue_version = 0  # bumped on every class change
        self.freed_rv = -1  # the last event that freed allocated devices
        self._verdicts: dict[str, dict[str, Verdict]] = {}  # class -> slice -> verdict
        self._memory: dict[DeviceKey, int] | None = None
        self._state: AllocatedState | None = None
        self._readers: list[Changes] = []

    # ------------------------------------------------------------------ feeding
    def observe(self, event: Event) -> None:
        """Store listener: apply one watch event."""
        if self.cluster is not None and event.cluster != self.cluster:
            return
        obj, deleted = event.object, event.type == "DELETED"
        if event.resource == SLICES:
            self.remove_slice(obj["metadata"]["name"]) if deleted else self.put_slice(obj)
        elif event.resource == CLASSES:
            self.remove_class(obj["metadata"]["name"]) if deleted else self.put_class(obj)
        elif event.resource == CLAIMS:
            metadata = obj["metadata"]
            key = f"{metadata.get('namespace')}/{metadata['name']}"
            freed = self.remove_claim(key) if deleted else self.put_claim(obj)
            if freed:
                self.freed_rv = event.rv

    def refresh(
        self,
        slices: Iterable[Obj] | None = None,
        classes: Iterable[Obj] | None = None,
        claims: Iterable[Obj] | None = None,
    ) -> None:
        """Make the index equal the given listings (those given); unchanged objects, by
        resourceVersion, cost a lookup."""
        if slices is not None:
            self._converge(slices, self.slices, self.put_slice, self.remove_slice)
        if classes is not None:
            self._converge(classes, self.classes, self.put_class, self.remove_class)
        if claims is not None:
            seen = set()
            for claim in claims:
                seen.add(_claim_key(claim))
                self.put_claim(claim)
            for key in [k for k in self.claims if k not in seen]:
                self.remove_claim(key)

    @staticmethod
    def _converge(items: Iterable[Obj], known: dict[str, Any], put: Any, remove: Any) -> None:
        seen = set()
        for item in items:
            seen.add(item["metadata"]["name"])
            put(item)
        for name in [n for n in known if n not in seen]:
            remove(name)

    def put_slice(self, raw: Obj) -> bool:
        """Add or replace a slice; False when its resourceVersion is the one known."""
        name = raw["metadata"]["name"]
        known = self.slices.get(name)
        if known is not None and known.version == _version(raw) and known.version:
            return False
        self.slices[name] = SliceEntry.of(raw)
        self._slice_changed(name)
        return True

    def remove_slice(self, name: str) -> None:
        if self.slices.pop(name, None) is not None:
            self._slice_changed(name)
            for reader in self._readers:
                reader.removed.add(name)

    def put_class(self, raw: Obj) -> bool:
        name = raw["metadata"]["name"]
        known = self.classes.get(name)
        if known is not None and known.version == _version(raw) and known.version:
            return False
        selectors = (raw.get("spec") or {}).get("selectors") or []
        expressions = tuple(
            s["cel"]["expression"] for s in selectors if (s.get("cel") or {}).get("expression")
        )
        model = resourceapi.DeviceClass.model_validate(raw)
        self.classes[name] = ClassEntry(_version(raw), model, expressions)
        self._class_changed(name)
        return True

    def remove_class(self, name: str) -> None:
        if self.classes.pop(name, None) is not None:
            self._class_changed(name)

    def put_claim(self, raw: Obj) -> bool:
        """Add or replace a claim; True when devices it held were freed."""
        key = _claim_key(raw)
        allocation = (raw.get("status") or {}).get("allocation") or None
        previous = self.claims.get(key)
        devices = claims_api.allocated_devices(raw) if allocation else {}
        self.claims[key] = ClaimEntry(tuple(claims_api.claim_classes(raw)), allocation, devices)
        before = previous.allocation if previous is not None else None
        if allocation == before:
            return False
        if before is not None:
            self._state = None
        elif self._state is not None and allocation is not None:
            self._state.add_allocation(key, resourceapi.AllocationResult.model_validate(allocation))
        return before is not None

    def remove_claim(self, key: str) -> bool:
        previous = self.claims.pop(key, None)
        if previous is None or previous.allocation is None:
            return False
        self._state = None
        return True

    def _slice_changed(self, name: str) -> None:
        self._memory = None
        for verdicts in self._verdicts.values():
            verdicts.pop(name, None)
        for reader in self._readers:
            reader.slices.add(name)

    def _class_changed(self, name: str) -> None:
        self.catalogue_version += 1
        self._verdicts.pop(name, None)
        for reader in self._readers:
            reader.classes.add(name)

    def watch(self) -> Changes:
        """A change set the index fills from now on; the reader drains it."""
        changes = Changes()
        self._readers.append(changes)
        return changes

    # ------------------------------------------------------------------ reading
    def selected(self, class_name: str, slice_name: str) -> frozenset[str]:
        """The devices of a slice that a class selects (a selector that does not compile
        or fails on a device does not select it); empty for unknown names."""
        return self.verdict(class_name, slice_name).selected

    def verdict(self, class_name: str, slice_name: str) -> Verdict:
        """What a class's selectors say of each device of a slice, worked out once per
        version of both: the devices selected, and those a selector failed on."""
        per_slice = self._verdicts.setdefault(class_name, {})
        cached = per_slice.get(slice_name)
        if cached is None:
            device_class, entry = self.classes.get(class_name), self.slices.get(slice_name)
            cached = per_slice[slice_name] = (
                self._judge(device_class.expressions, entry)
                if device_class is not None and entry is not None
                else Verdict(frozenset(), {})
            )
        return cached

    def _judge(self, expressions: tuple[str, ...], entry: SliceEntry) -> Verdict:
        try:
            selectors = [self.compiler.compile(e, stored=True) for e in expressions]
        except CompileError:
            return Verdict(frozenset(), {})  # selects nothing (lint reports the selector)
        selected, errors = set(), {}
        for name, view in entry.views.items():
            try:
                if all(selector.matches(view) for selector in selectors):
                    selected.add(name)
            except EvaluationError as err:
                errors[name] = str(err)
        return Verdict(frozenset(selected), errors)

    def devices_of(self, classes: Iterable[str]) -> frozenset[DeviceKey]:
        """Every published device one of ``classes`` selects, as ``(driver, pool, device)``."""
        wanted = list(classes)
        return frozenset(
            (entry.driver, entry.pool, device)
            for name, entry in self.slices.items()
            for device_class in wanted
            for device in self.selected(device_class, name)
        )

    def classes_of(self, slice_name: str, device_name: str) -> tuple[str, ...]:
        """The classes selecting a device, by class name."""
        return tuple(c for c in sorted(self.classes) if device_name in self.selected(c, slice_name))

    def device_memory(self) -> dict[DeviceKey, int]:
        """Every published device's ``memory`` capacity (devices without one left out)."""
        if self._memory is None:
            memory = {}
            for entry in self.slices.values():
                for name, value in entry.memory.items():
                    memory[(entry.driver, entry.pool, name)] = value
            self._memory = memory
        return self._memory

    def allocations(self) -> dict[str, Obj]:
        """Claim key -> its ``status.allocation``, for allocated claims."""
        return {k: c.allocation for k, c in self.claims.items() if c.allocation is not None}

    def allocated_state(self) -> AllocatedState:
        """What claims hold, as the allocator takes it (owners named ``namespace/name``)."""
        if self._state is None:
            state = AllocatedState()
            for key, allocation in self.allocations().items():
                state.add_allocation(key, resourceapi.AllocationResult.model_validate(allocation))
            self._state = state
        return self._state

    def slice_models(self) -> list[resourceapi.ResourceSlice]:
        return [entry.model for entry in self.slices.values()]

    def class_models(self) -> list[resourceapi.DeviceClass]:
        return [entry.model for entry in self.classes.values()]

    def view(self, slice_: resourceapi.ResourceSlice, device: resourceapi.Device) -> DeviceView:
        """The index's view of a device of ``slice_`` (a new one for a slice it lacks)."""
        entry = self.slices.get(slice_.metadata.name or "")
        if entry is not None and entry.model is slice_:
            view = entry.views.get(device.name or "")
            if view is not None and view.device is device:
                return view
        return DeviceView(slice_.spec.driver or "", device)


class AllocatorFeed:
    """An :class:`Allocator` over the index's slices and classes, updated with only what
    changed since it was last asked for (built in full once)."""

    def __init__(self, index: DraIndex, features: Features = KUBERNETES_1_36) -> None:
        self.index = index
        self.features = features
        self._changes = index.watch()
        self._allocator: Allocator | None = None

    def allocator(self) -> Allocator:
        index, changes = self.index, self._changes
        if self._allocator is None:
            self._allocator = Allocator(
                index.slice_models(),
                index.class_models(),
                features=self.features,
                compiler=index.compiler,
                views=index.view,
            )
        else:
            self._apply(self._allocator, changes)
        changes.clear()
        return self._allocator

    def _apply(self, allocator: Allocator, changes: Changes) -> None:
        """Slices in the index's order (a slice removed and added again goes last, in
        both), so the allocator sees the list a fresh one would be built from."""
        index = self.index
        for name in sorted(changes.removed):
            allocator.remove_slice(name)
        if changes.slices:
            for name, entry in index.slices.items():
                if name in changes.slices:
                    allocator.put_slice(entry.model)
        for name in sorted(changes.classes):
            device_class = index.classes.get(name)
            if device_class is None:
                allocator.remove_class(name)
            else:
                allocator.put_class(device_class.model)


def quantity(value: Any) -> int:
    """A wire quantity as an integer (0 when absent or unparsable)."""
    if value is None:
        return 0
    try:
        return Quantity.parse(str(value)).as_integer()
    except ValueError:
        return 0


def _version(raw: Obj) -> str:
    return str(raw["metadata"].get("resourceVersion") or "")


def _devices(raw: Obj) -> list[Obj]:
    return list((raw.get("spec") or {}).get("devices") or [])


def _claim_key(raw: Obj) -> str:
    return f"{raw['metadata'].get('namespace')}/{raw['metadata']['name']}"
