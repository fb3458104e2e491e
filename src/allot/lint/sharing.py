"""Fair-sharing guarantees that add up to more than the cohort's devices.

A cohort's tenants are promised their ``guaranteed`` shares; promising more than the
published devices can hold is allowed (Kueue accepts nominal quotas past the cluster's
capacity too), but some promise cannot be kept, so it is worth a warning. Per cohort (a
tenant without a cohort is a cohort of its own) and per DeviceClass, the guarantees are
compared with the devices the class selects; the ``gpuMemory`` guarantees with the memory
of the devices that the cohort's classes (the shared ones and those its tenants are
entitled to) select. Memory is summed per published device, so a GPU published both
whole and as partitions (DynamicMIG) counts twice: the check can miss an overcommitment
there, never invent one. Pure; called by the API server's Tenant warnings
(:mod:`allot.registry.classwarnings`) and ``allot doctor``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from allot.api import resource_v1 as resourceapi
from allot.api.meta import selector_matches
from allot.api.quantity import Quantity
from allot.api.tenancy import Tenant, entitlement_selector
from allot.cel import DeviceView
from allot.lint.catalogue import CatalogueLinter

GPU_MEMORY = "gpuMemory"
NANOS_PER_UNIT = 10**9


@dataclass(frozen=True)
class Overcommitment:
    cohort: str
    resource: str  # a DeviceClass name, or GPU_MEMORY
    guaranteed: int
    capacity: int
    shares: tuple[tuple[str, int], ...]  # (tenant, guaranteed), largest first

    def message(self) -> str:
        unit = (lambda n: _bytes(n)) if self.resource == GPU_MEMORY else str
        what = "GPU memory" if self.resource == GPU_MEMORY else self.resource
        shares = ", ".join(f"{tenant} {unit(amount)}" for tenant, amount in self.shares)
        held = "of GPU memory" if self.resource == GPU_MEMORY else "device(s)"
        return (
            f"cohort {self.cohort}: guarantees of {what} sum to {unit(self.guaranteed)} "
            f"({shares}) but the published devices hold {unit(self.capacity)} {held}; "
            "some guarantee cannot be met"
        )


def cohort_of(tenant: Tenant) -> str:
    """The cohort's name; a tenant without one shares with nobody."""
    sharing = tenant.spec.sharing
    name = tenant.metadata.name or ""
    return (sharing.cohort if sharing else None) or f"(tenant {name}, no cohort)"


def overcommitments(
    tenants: Iterable[Tenant], linter: CatalogueLinter, classes: list[resourceapi.DeviceClass]
) -> list[Overcommitment]:
    """Every (cohort, resource) whose guarantees exceed what the devices hold."""
    by_name = {c.metadata.name or "": c for c in classes}
    cohorts: dict[str, list[Tenant]] = defaultdict(list)
    for tenant in tenants:
        if tenant.spec.sharing is not None:
            cohorts[cohort_of(tenant)].append(tenant)
    found: list[Overcommitment] = []
    matched: dict[str, list[DeviceView]] = {}

    def views_of(name: str) -> list[DeviceView]:
        if name not in matched:
            known = by_name.get(name)
            matched[name] = linter.match(known).matched if known is not None else []
        return matched[name]

    for cohort, members in sorted(cohorts.items()):
        for resource, shares in sorted(_class_shares(members).items()):
            if resource in by_name:
                found += _over(cohort, resource, shares, linter.devices(views_of(resource)))
        memory = _memory_shares(members)
        if memory:
            names = _cohort_classes(members, by_name)
            devices = {id(v): v for name in names for v in views_of(name)}
            capacity = sum(_memory(v) * linter.weights.get(id(v), 1) for v in devices.values())
            found += _over(cohort, GPU_MEMORY, memory, capacity)
    return found


def _over(
    cohort: str, resource: str, shares: Mapping[str, int], capacity: int
) -> list[Overcommitment]:
    total = sum(shares.values())
    if total <= capacity:
        return []
    ordered = tuple(sorted(shares.items(), key=lambda item: (-item[1], item[0])))
    return [Overcommitment(cohort, resource, total, capacity, ordered)]


def _class_shares(members: list[Tenant]) -> dict[str, dict[str, int]]:
    shares: dict[str, dict[str, int]] = defaultdict(dict)
    for tenant in members:
        sharing = tenant.spec.sharing
        for share in (sharing.device_classes if sharing else None) or []:
            if share.name and share.guaranteed is not None and share.guaranteed.sign() > 0:
                shares[share.name][tenant.metadata.name or ""] = _whole(share.guaranteed)
    return shares


def _memory_shares(members: list[Tenant]) -> dict[str, int]:
    shares = {}
    for tenant in members:
        memory = tenant.spec.sharing.gpu_memory if tenant.spec.sharing else None
        if memory and memory.guaranteed is not None and memory.guaranteed.sign() > 0:
            shares[tenant.metadata.name or ""] = _whole(memory.guaranteed)
    return shares


def _cohort_classes(
    members: list[Tenant], classes: Mapping[str, resourceapi.DeviceClass]
) -> set[str]:
    """The classes a cohort's GPU memory comes from: shared or entitled."""
    names = set()
    for tenant in members:
        sharing = tenant.spec.sharing
        names |= {s.name for s in (sharing.device_classes if sharing else None) or [] if s.name}
        selector = entitlement_selector(tenant.spec)
        wire = selector.to_wire() if selector is not None else None
        names |= {n for n, c in classes.items() if selector_matches(wire, c.metadata.labels)}
    return names & set(classes)


def _memory(view: DeviceView) -> int:
    capacity = view.device.capacity or {}
    value = capacity.get("memory")
    return _whole(value.value) if value is not None and value.value is not None else 0


def _whole(value: Quantity) -> int:
    return value.nanos // NANOS_PER_UNIT


def _bytes(value: int) -> str:
    for power, suffix in ((40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")):
        if value and value % (1 << power) == 0:
            return f"{value >> power}{suffix}"
    return str(value)
