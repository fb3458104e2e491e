"""The fleet's capacity at one moment: devices, classes, counters, claims, tenants.

One :class:`CapacityView` per platform builds :class:`Snapshot` objects from the host
store for ``/metrics``, ``allot top``, the alert rules and the dashboard. What does not
change between snapshots is cached per ResourceSlice (by resourceVersion and the class
catalogue's version): every device's classes, its memory and the counters it consumes,
all read from the platform's DRA index (:mod:`allot.dra`; a view without one, such as
``allot doctor``'s, refreshes its own from the store's listings). What a snapshot derives
from the slices and classes, and what it derives from the claims, is kept until the store
counts a change to that collection (:meth:`allot.store.Store.changes`): a scrape of an idle
fleet reuses both, and a changed claim walks only the claims. Pools follow the allocator's
rules: the newest generation counts; a pool with fewer slices than ``resourceSliceCount``
is incomplete. A device is allocated when a claim's allocation names it (admin-access
results excluded, as the allocator does). A device is *free* when it could be allocated now
on its own: unallocated, in a complete pool, and what it consumes of shared counters fits
in what the allocated devices leave (:mod:`allot.dra.allocatable`); an unallocated device
that is not free is *unavailable*. Free devices may exclude each other (two MIG placements
on the same memory slices), so *allocatable* says, per class and per MIG profile, how many
could still be allocated one after the other (:func:`allot.dra.allocatable.one_at_a_time`).
That is worked out per pool and kept while the pool's allocated devices stay the same.
Pure computation over store reads; used by :mod:`allot.ops` and ``allot doctor``.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from allot.api import claims
from allot.api.quantity import Quantity, QuantityFormat
from allot.cel import SelectorCompiler
from allot.dra import DraIndex, allocatable
from allot.registry import HOST_CLUSTER
from allot.registry.resources import by_kind
from allot.store import Resource
from allot.tenancy import generated, names
from allot.types import Obj

DeviceKey = tuple[str, str, str]  # driver, pool, device
NO_CLASS = "<none>"


@dataclass(frozen=True)
class DeviceInfo:
    node: str
    driver: str
    pool: str
    name: str
    classes: tuple[str, ...]
    memory: int
    kind: str  # the driver's "type" attribute (gpu, mig, ...) or ""
    profile: str  # the driver's MIG "profile" attribute (1g.5gb, ...) or ""
    parent: str  # for a MIG device, its GPU's device name (the driver's gpu-<minor>); else ""
    consumes: tuple[tuple[str, str, int], ...]  # (counter set, counter, amount)
    product: str = ""  # the driver's "productName" attribute (NVIDIA H100 80GB HBM3, ...)
    taints: tuple[str, ...] = ()  # the device's taints as key=value:effect (a driver's health)

    @property
    def key(self) -> DeviceKey:
        return (self.driver, self.pool, self.name)


RowKey = tuple[str, str, str, str]  # node, pool, driver, class
ProfileKey = tuple[str, str, str, str]  # node, pool, driver, MIG profile
PoolKey = tuple[str, str]  # driver, pool


@dataclass
class Availability:
    """What can be allocated now: free devices (each could be allocated on its own) per
    node, pool and driver, per class row and per MIG profile, and per class row and MIG
    profile how many could be allocated one after the other."""

    devices: set[DeviceKey] = field(default_factory=set)  # the free devices
    free: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    class_free: Counter[RowKey] = field(default_factory=Counter)
    class_allocatable: Counter[RowKey] = field(default_factory=Counter)
    profile_free: Counter[ProfileKey] = field(default_factory=Counter)
    profile_allocatable: Counter[ProfileKey] = field(default_factory=Counter)
    profile_total: Counter[ProfileKey] = field(default_factory=Counter)

    def add(self, other: Availability) -> None:
        for name in self.__dataclass_fields__:
            getattr(self, name).update(getattr(other, name))


def pool_availability(
    devices: list[DeviceInfo],
    allocated: Collection[DeviceKey],
    capacity: Mapping[tuple[str, str], int],
    usable: bool,
) -> Availability:
    """One pool's :class:`Availability`: ``devices`` its devices, ``allocated`` the keys
    of those claims hold, ``capacity`` its counters ((counter set, counter) -> value),
    ``usable`` False for a pool the allocator skips (incomplete)."""
    found = Availability()
    found.profile_total.update(_profile_key(d) for d in devices if d.profile)
    if not usable:
        return found
    left = allocatable.left_over(capacity, (d for d in devices if d.key in allocated))
    by_class: dict[RowKey, list[DeviceInfo]] = defaultdict(list)
    by_profile: dict[ProfileKey, list[DeviceInfo]] = defaultdict(list)
    for device in devices:
        if device.key in allocated or not allocatable.fits(device, left):
            continue
        found.devices.add(device.key)
        found.free[(device.node, device.pool, device.driver)] += 1
        for device_class in device.classes or (NO_CLASS,):
            by_class[(device.node, device.pool, device.driver, device_class)].append(device)
        if device.profile:
            by_profile[_profile_key(device)].append(device)
    for row, group in by_class.items():
        found.class_free[row] = len(group)
        found.class_allocatable[row] = allocatable.one_at_a_time(group, left)
    for profile, group in by_profile.items():
        found.profile_free[profile] = len(group)
        found.profile_allocatable[profile] = allocatable.one_at_a_time(group, left)
    return found


def _profile_key(device: DeviceInfo) -> ProfileKey:
    return (device.node, device.pool, device.driver, device.profile)


def availability(
    pools: Mapping[PoolKey, list[DeviceInfo]],
    allocated: Collection[DeviceKey],
    counters: Mapping[PoolKey, Mapping[tuple[str, str], int]],
    complete: Mapping[PoolKey, bool],
    known: dict[PoolKey, tuple[Any, Availability]] | None = None,
) -> Availability:
    """The fleet's :class:`Availability`, pool by pool (counters are a pool's own).
    ``known``: each pool's last answer with what it was worked out from, kept by a view,
    so that a changed claim costs the pools whose allocated devices changed."""
    held: dict[PoolKey, set[DeviceKey]] = defaultdict(set)
    for key in allocated:
        held[(key[0], key[1])].add(key)
    total = Availability()
    for pool, devices in pools.items():
        basis = (frozenset(held.get(pool, ())), complete.get(pool, True))
        cached = known.get(pool) if known is not None else None
        if cached is not None and cached[0] == basis:
            part = cached[1]
        else:
            part = pool_availability(devices, basis[0], counters.get(pool, {}), basis[1])
            if known is not None:
                known[pool] = (basis, part)
        total.add(part)
    return total


def _by_pool(devices: Iterable[DeviceInfo]) -> dict[PoolKey, list[DeviceInfo]]:
    found: dict[PoolKey, list[DeviceInfo]] = defaultdict(list)
    for device in devices:
        found[(device.driver, device.pool)].append(device)
    return found


def _counters_by_pool(
    counters: Mapping[tuple[str, str, str, str], int],
) -> dict[PoolKey, dict[tuple[str, str], int]]:
    found: dict[PoolKey, dict[tuple[str, str], int]] = defaultdict(dict)
    for (driver, pool, counter_set, counter), value in counters.items():
        found[(driver, pool)][(counter_set, counter)] = value
    return found


class StoreReads(Protocol):
    """What the view reads of a store: a :class:`allot.store.Store`, or the informers'
    caches of ``allot controller`` (:class:`allot.cluster.controller.CacheReads`)."""

    def changes(self, cluster: str, resource: Resource) -> int: ...

    def list_objects(
        self, cluster: str, resource: Resource, namespace: str | None = None, *, shared: bool
    ) -> tuple[list[Obj], int]: ...


class StaleIndexError(Exception):
    """The DRA index given to a :class:`CapacityView` is behind the store it reads."""


@dataclass
class SliceSummary:
    devices: list[DeviceInfo]
    counters: dict[tuple[str, str], int]  # (counter set, counter) -> total
    totals: Counter[RowKey] = field(default_factory=Counter)  # devices per row
    physical: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # node, pool, driver


@dataclass
class ClaimInfo:
    namespace: str
    name: str
    tenant: str
    tenant_claim: str  # the claim's name in its tenant, or the host name
    tenant_namespace: str  # the claim's namespace in its tenant, or ""
    classes: tuple[str, ...]
    allocated: bool
    created: dt.datetime | None
    devices: list[DeviceKey] = field(default_factory=list)
    consumers: list[str] = field(default_factory=list)
    uid: str = ""
    device_classes: dict[DeviceKey, str] = field(default_factory=dict)  # by the request
    # the GPU memory it holds per device: what it consumed of a device shared by capacity
    memory: dict[DeviceKey, int] = field(default_factory=dict)


@dataclass
class PoolInfo:
    driver: str
    pool: str
    generation: int
    slices: int
    expected: int
    node: str

    @property
    def complete(self) -> bool:
        return self.slices >= self.expected


@dataclass
class Snapshot:
    """One moment of the fleet. ``devices`` is the view's live index: read it, never keep
    it past the next snapshot."""

    now: dt.datetime
    devices: dict[DeviceKey, DeviceInfo]
    allocated: dict[DeviceKey, ClaimInfo]
    counters_total: dict[tuple[str, str, str, str], int]  # driver, pool, set, counter
    counters_used: dict[tuple[str, str, str, str], int]
    claims: list[ClaimInfo]
    pools: list[PoolInfo]
    classes: list[str]
    summaries: list[SliceSummary] = field(default_factory=list)
    # the summaries' totals added up, when the view has them (else the rows add them up)
    physical_totals: Counter[tuple[str, str, str]] | None = None
    class_totals: Counter[RowKey] | None = None
    version: tuple[Any, ...] = ()
    """Equal versions from one view mean equal contents but ``now``; () when unknown."""
    available: Availability | None = None
    """What can be allocated now, when the view worked it out (else :meth:`availability`
    does, from the devices and counters)."""

    def availability(self) -> Availability:
        """Free and allocatable devices per row (see :class:`Availability`)."""
        if self.available is None:
            self.available = availability(
                _by_pool(self.devices.values()),
                self.allocated,
                _counters_by_pool(self.counters_total),
                {(p.driver, p.pool): p.complete for p in self.pools},
            )
        return self.available

    def device_rows(self) -> dict[RowKey, Counter[str]]:
        """(node, pool, driver, class) -> {total, allocated, free, unavailable,
        allocatable}, from the slices' cached totals, the allocated devices and the
        availability."""
        rows: dict[RowKey, Counter[str]] = defaultdict(Counter)
        totals = self.class_totals
        if totals is None:
            totals = Counter()
            for summary in self.summaries:
                totals.update(summary.totals)
        for key, count in totals.items():
            rows[key]["total"] = count
        for device_key in self.allocated:
            device = self.devices.get(device_key)
            if device is not None:
                for device_class in device.classes or (NO_CLASS,):
                    rows[(device.node, device.pool, device.driver, device_class)]["allocated"] += 1
        available = self.availability()
        for key, row in rows.items():
            row["free"] = available.class_free[key]
            row["unavailable"] = row["total"] - row["allocated"] - row["free"]
            row["allocatable"] = available.class_allocatable[key]
        return rows

    def physical_rows(self) -> dict[tuple[str, str, str], Counter[str]]:
        """(node, pool, driver) -> {total, allocated, free, unavailable}: each device
        counted once, whichever classes select it."""
        rows: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
        totals = self.physical_totals
        if totals is None:
            totals = Counter()
            for summary in self.summaries:
                totals.update((d.node, d.pool, d.driver) for d in summary.devices)
        for key, count in totals.items():
            rows[key]["total"] = count
        for device_key in self.allocated:
            held = self.devices.get(device_key)
            if held is not None:
                rows[(held.node, held.pool, held.driver)]["allocated"] += 1
        available = self.availability()
        for key, row in rows.items():
            row["free"] = available.free[key]
            row["unavailable"] = row["total"] - row["allocated"] - row["free"]
        return rows

    def tenant_memory(self) -> Counter[str]:
        """GPU memory held per tenant: whole devices, and the shares claims consumed of
        devices shared by capacity (each claim's share once)."""
        held: Counter[str] = Counter()
        for claim in self.claims:
            held[claim.tenant] += sum(claim.memory.values())
        return held

    def pending(self) -> list[ClaimInfo]:
        return [c for c in self.claims if not c.allocated]


@dataclass
class _Fleet:
    """What a snapshot takes from the slices and classes alone, for as long as neither
    collection changes (``key``: their change counts and the catalogue's version)."""

    key: tuple[int, int, int]
    pools: list[PoolInfo]
    classes: list[str] = field(default_factory=list)
    summaries: list[SliceSummary] = field(default_factory=list)
    counters_total: dict[tuple[str, str, str, str], int] = field(default_factory=dict)
    physical_totals: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    class_totals: Counter[RowKey] = field(default_factory=Counter)
    pool_devices: dict[PoolKey, list[DeviceInfo]] = field(default_factory=dict)
    pool_counters: dict[PoolKey, dict[tuple[str, str], int]] = field(default_factory=dict)
    # each pool's availability and what it was worked out from (see ``availability``)
    known_availability: dict[PoolKey, tuple[Any, Availability]] = field(default_factory=dict)

    def add(self, summary: SliceSummary, driver: str, pool: str) -> None:
        self.summaries.append(summary)
        self.pool_devices.setdefault((driver, pool), []).extend(summary.devices)
        counters = self.pool_counters.setdefault((driver, pool), {})
        for (counter_set, counter), value in summary.counters.items():
            self.counters_total[(driver, pool, counter_set, counter)] = value
            counters[(counter_set, counter)] = value
        self.physical_totals.update(summary.physical)
        self.class_totals.update(summary.totals)


@dataclass
class _Holdings:
    """What a snapshot takes from the claims, for as long as they and the fleet (whose
    devices say what an allocation consumes) stay the same (``key``: the claims' change
    count)."""

    key: int
    fleet: _Fleet | None
    claims: list[ClaimInfo]
    allocated: dict[DeviceKey, ClaimInfo]
    counters_used: dict[tuple[str, str, str, str], int]
    available: Availability


class CapacityView:
    def __init__(
        self,
        store: StoreReads,
        cluster: str = HOST_CLUSTER,
        index: DraIndex | None = None,
        compiler: SelectorCompiler | None = None,
    ) -> None:
        """``index``: the DRA index of ``cluster`` fed from ``store``'s events, if any;
        without one the view keeps its own (with ``compiler``, when given)."""
        self.store = store
        self.cluster = cluster
        self.index = index if index is not None else DraIndex(cluster, compiler)
        self._own_index = index is None
        self._slices: dict[str, tuple[tuple[Any, ...], SliceSummary]] = {}
        self._index: dict[DeviceKey, DeviceInfo] = {}
        self._known_fleet: _Fleet | None = None
        self._known_holdings: _Holdings | None = None

    def snapshot(self, now: dt.datetime) -> Snapshot:
        """The fleet at ``now``. What comes from the slices and classes, and what comes from
        the claims, is each made again only when the store says that its collection changed
        (an idle fleet's snapshot costs a few lookups; a claim's change walks the claims)."""
        fleet = self._fleet()
        held = self._holdings()
        return Snapshot(
            now,
            self._index,
            held.allocated,
            fleet.counters_total,
            held.counters_used,
            held.claims,
            fleet.pools,
            fleet.classes,
            fleet.summaries,
            physical_totals=fleet.physical_totals,
            class_totals=fleet.class_totals,
            version=(fleet.key, held.key),
            available=held.available,
        )

    def _changes(self, kind: str) -> int:
        return self.store.changes(self.cluster, by_kind(kind).store)

    def _fleet(self) -> _Fleet:
        key = (self._changes("DeviceClass"), self._changes("ResourceSlice"))
        known = self._known_fleet
        if known is not None and known.key == (*key, self.index.catalogue_version):
            return known
        classes = self._list("DeviceClass")
        slices = self._current_slices()
        if self._own_index:
            self.index.refresh(slices=self._list("ResourceSlice"), classes=classes)
        catalogue = self.index.catalogue_version
        self._forget_gone({s["metadata"]["name"] for s in slices})
        fleet = _Fleet((*key, catalogue), pools=self._pools(slices))
        fleet.classes.extend(sorted(c["metadata"]["name"] for c in classes))
        for item in slices:
            summary = self._summary(item, catalogue)
            fleet.add(summary, item["spec"]["driver"], item["spec"]["pool"]["name"])
        self._known_fleet = fleet
        return fleet

    def _holdings(self) -> _Holdings:
        key = self._changes("ResourceClaim")
        known = self._known_holdings
        if known is not None and known.key == key and known.fleet is self._known_fleet:
            return known
        memory = self.index.device_memory()
        claims = [self._claim(c, memory) for c in self._list("ResourceClaim")]
        allocated = {device: claim for claim in claims for device in claim.devices}
        used: Counter[tuple[str, str, str, str]] = Counter()
        for device_key in allocated:
            held = self._index.get(device_key)
            for counter_set, counter, amount in held.consumes if held else ():
                used[(device_key[0], device_key[1], counter_set, counter)] += amount
        fleet = self._known_fleet
        available = (
            availability(
                fleet.pool_devices,
                allocated,
                fleet.pool_counters,
                {(p.driver, p.pool): p.complete for p in fleet.pools},
                fleet.known_availability,
            )
            if fleet is not None
            else Availability()
        )
        self._known_holdings = _Holdings(key, fleet, claims, allocated, dict(used), available)
        return self._known_holdings

    def summarise_changed(self) -> Iterator[None]:
        """Bring the slice summaries up to date one changed slice per step, so that a caller
        on the event loop (the alert loop) can yield between steps: a fleet's worth of new
        slices costs a CEL evaluation per device and class. The next snapshot finds them
        cached; a slice that changes meanwhile is summarised again by that snapshot."""
        slices = self._current_slices()
        if self._own_index:
            self.index.refresh(
                slices=self._list("ResourceSlice"), classes=self._list("DeviceClass")
            )
        catalogue = self.index.catalogue_version
        for item in slices:
            cached = self._slices.get(item["metadata"]["name"])
            if cached is None or cached[0] != (item["metadata"].get("resourceVersion"), catalogue):
                self._summary(item, catalogue)
                yield

    # ----------------------------------------------------------------- slices
    def _list(self, kind: str) -> list[Obj]:
        items, _ = self.store.list_objects(self.cluster, by_kind(kind).store, None, shared=True)
        return items

    def _current_slices(self) -> list[Obj]:
        """Slices of each pool's newest generation, as the allocator uses them."""
        newest: dict[tuple[str, str], int] = {}
        slices = self._list("ResourceSlice")
        for item in slices:
            pool = item["spec"]["pool"]
            key = (item["spec"]["driver"], pool["name"])
            newest[key] = max(newest.get(key, 0), int(pool.get("generation") or 0))
        return [
            s
            for s in slices
            if int(s["spec"]["pool"].get("generation") or 0)
            == newest[(s["spec"]["driver"], s["spec"]["pool"]["name"])]
        ]

    def _pools(self, slices: list[Obj]) -> list[PoolInfo]:
        found: dict[tuple[str, str], PoolInfo] = {}
        for item in slices:
            spec = item["spec"]
            key = (spec["driver"], spec["pool"]["name"])
            info = found.get(key)
            if info is None:
                info = PoolInfo(
                    key[0],
                    key[1],
                    int(spec["pool"].get("generation") or 0),
                    0,
                    int(spec["pool"].get("resourceSliceCount") or 1),
                    spec.get("nodeName") or "",
                )
                found[key] = info
            info.slices += 1
        return [found[k] for k in sorted(found)]

    def _summary(self, item: Obj, catalogue: int) -> SliceSummary:
        """The slice's cached summary; a changed slice replaces its devices in the index."""
        name = item["metadata"]["name"]
        version = (item["metadata"].get("resourceVersion"), catalogue)
        cached = self._slices.get(name)
        if cached is not None and cached[0] == version:
            return cached[1]
        if cached is not None:
            self._unindex(cached[1])
        summary = self._summarise(item)
        for device in summary.devices:
            self._index[(device.driver, device.pool, device.name)] = device
        self._slices[name] = (version, summary)
        return summary

    def _forget_gone(self, current: set[str]) -> None:
        for name in [n for n in self._slices if n not in current]:
            self._unindex(self._slices.pop(name)[1])

    def _unindex(self, summary: SliceSummary) -> None:
        for device in summary.devices:
            self._index.pop((device.driver, device.pool, device.name), None)

    def _summarise(self, item: Obj) -> SliceSummary:
        spec, name = item["spec"], item["metadata"]["name"]
        driver, pool, node = spec["driver"], spec["pool"]["name"], spec.get("nodeName") or ""
        entry = self.index.slices.get(name)
        if entry is None or entry.version != str(item["metadata"].get("resourceVersion") or ""):
            raise StaleIndexError(f"the DRA index lacks slice {name} as listed")
        devices = []
        for raw in spec.get("devices") or []:
            attributes = raw.get("attributes") or {}
            devices.append(
                DeviceInfo(
                    node,
                    driver,
                    pool,
                    raw["name"],
                    self.index.classes_of(name, raw["name"]),
                    entry.memory.get(raw["name"], 0),
                    str((attributes.get("type") or {}).get("string") or ""),
                    str((attributes.get("profile") or {}).get("string") or ""),
                    raw["name"].split("-mig-")[0] if "-mig-" in raw["name"] else "",
                    entry.consumes.get(raw["name"], ()),
                    str((attributes.get("productName") or {}).get("string") or ""),
                    tuple(_taint_text(t) for t in raw.get("taints") or []),
                )
            )
        counters = dict(entry.counters)
        totals: Counter[RowKey] = Counter(
            (device.node, device.pool, device.driver, device_class)
            for device in devices
            for device_class in device.classes or (NO_CLASS,)
        )
        physical = Counter((device.node, device.pool, device.driver) for device in devices)
        return SliceSummary(devices, counters, totals, physical)

    # ----------------------------------------------------------------- claims
    def _claim(self, claim: Obj, memory: Mapping[DeviceKey, int]) -> ClaimInfo:
        metadata = claim["metadata"]
        namespace = metadata.get("namespace", "")
        tenant = names.tenant_of_namespace(namespace) or ""
        classes = sorted(claims.claim_classes(claim))
        status = claim.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        created = metadata.get("creationTimestamp")
        tenant_namespace, tenant_claim = _tenant_names(claim) if tenant else ("", "")
        return ClaimInfo(
            namespace,
            metadata["name"],
            tenant,
            tenant_claim or metadata["name"],
            tenant_namespace,
            tuple(classes),
            bool(status.get("allocation")),
            dt.datetime.fromisoformat(created.replace("Z", "+00:00")) if created else None,
            [
                (r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
                for r in results
                if not r.get("adminAccess")
            ],
            [c.get("name", "") for c in status.get("reservedFor") or []],
            str(metadata.get("uid") or ""),
            {
                (r.get("driver", ""), r.get("pool", ""), r.get("device", "")): claims.request_class(
                    claim, r.get("request", "")
                )
                for r in results
                if not r.get("adminAccess")
            },
            claims.held_memory(status.get("allocation"), memory),
        )


def _tenant_names(claim: Obj) -> tuple[str, str]:
    """A tenant claim's namespace and name in its tenant: a synced claim says them in its
    label and annotation; a claim generated on the host for a tenant pod's twin has the name
    its tenant's mirror of it has (``<pod>-<claim>-xxxxx``), in the pod's namespace."""
    metadata = claim["metadata"]
    annotations = metadata.get("annotations") or {}
    if names.NAME_ANNOTATION in annotations:
        labels = metadata.get("labels") or {}
        return labels.get(names.TENANT_NAMESPACE_LABEL, ""), annotations[names.NAME_ANNOTATION]
    return generated.mirror_name(claim) or ("", "")


def memory_text(value: int) -> str:
    """Bytes the way Kubernetes writes memory (``40Gi``, ``4864Mi``)."""
    return str(Quantity.from_int(value, QuantityFormat.BINARY_SI))


def memory_gib(value: int) -> str:
    """Bytes in GiB for people, four significant digits (``40 GiB``, ``4.75 GiB``,
    ``79.25 GiB``): the dashboard's unit for GPU memory."""
    return f"{value / (1 << 30):.4g} GiB"


def _taint_text(taint: Obj) -> str:
    """``key=value:effect``, as kube-scheduler's messages write a device taint."""
    return f"{taint.get('key')}={taint.get('value') or ''}:{taint.get('effect')}"
