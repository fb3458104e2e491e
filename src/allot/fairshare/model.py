"""The engine's inputs: one queue per tenant, the workloads waiting or admitted in it.

Amounts are integers: devices of a DeviceClass, or bytes for :data:`GPU_MEMORY`. A
DeviceClass is *governed* in a cohort when some member declares a share of it; a member
without an entry for it has nothing guaranteed and lends nothing, but may borrow. GPU
memory is governed for the tenants that declare a share of it (a cap they ask for, which
holds no one else back). What is not governed is not counted at all. Built from Tenant objects by
:func:`queues_from_tenants`; used by every other module of the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from allot.api.quantity import NANO, Quantity
from allot.api.tenancy import SharedAmount, Tenant, TenantSharing

GPU_MEMORY = "gpuMemory"
RECLAIM_POLICIES = ("Any", "LowerPriority", "Never")
WITHIN_TENANT_POLICIES = ("LowerPriority", "Never")


@dataclass(frozen=True)
class Share:
    """A tenant's share of one resource (Kueue: nominalQuota, borrowingLimit, lendingLimit)."""

    guaranteed: int = 0
    borrowing_limit: int | None = None
    """``None``: may borrow whatever the cohort lends."""
    lending_limit: int | None = None
    """``None``: lends all of ``guaranteed``."""

    @property
    def lendable(self) -> int:
        if self.lending_limit is None:
            return self.guaranteed
        return min(self.lending_limit, self.guaranteed)

    @property
    def reserved(self) -> int:
        """The part of the guarantee only this tenant may use."""
        return self.guaranteed - self.lendable


NO_SHARE = Share()


@dataclass(frozen=True)
class Queue:
    """One tenant's queue: its shares, its cohort and when its work may preempt."""

    tenant: str
    shares: Mapping[str, Share] = field(default_factory=dict)
    cohort: str | None = None
    reclaim_within_cohort: str = "Any"
    within_tenant: str = "LowerPriority"
    default_priority: int = 0

    def share(self, resource: str) -> Share:
        found = self.shares.get(resource, NO_SHARE)
        if self.cohort is None:  # alone: no borrowing, nothing to lend to
            return Share(found.guaranteed, 0, 0)
        return found


@dataclass(frozen=True)
class Workload:
    """Pods admitted together (a bare pod, or a gang), with their whole demand."""

    key: str
    tenant: str
    demand: Mapping[str, int]
    priority: int = 0
    created: float = 0.0
    """When it was first seen, in seconds: first come, first served among equals."""
    admitted_at: float | None = None
    """``None`` while it waits."""
    evicting: bool = False
    """Admitted and being preempted: it holds its quota until its pods are gone."""
    preempted_for: str | None = None
    """While evicting: the key of the waiting workload it was evicted for, whose room it
    frees (no other waiting workload counts on it while that one waits)."""

    @property
    def admitted(self) -> bool:
        return self.admitted_at is not None


def amount(quantity: Quantity | None) -> int | None:
    """A share amount as the engine counts it: whole devices, whole bytes (rounded up)."""
    if quantity is None:
        return None
    return -(-quantity.nanos // NANO)


def share_from(spec: SharedAmount) -> Share:
    return Share(
        guaranteed=amount(spec.guaranteed) or 0,
        borrowing_limit=amount(spec.borrowing_limit),
        lending_limit=amount(spec.lending_limit),
    )


def queue_from_sharing(tenant: str, sharing: TenantSharing) -> Queue:
    shares = {c.name: share_from(c) for c in sharing.device_classes or [] if c.name}
    if sharing.gpu_memory is not None:
        shares[GPU_MEMORY] = share_from(sharing.gpu_memory)
    preemption = sharing.preemption
    return Queue(
        tenant=tenant,
        shares=shares,
        cohort=sharing.cohort or None,
        reclaim_within_cohort=(preemption and preemption.reclaim_within_cohort) or "Any",
        within_tenant=(preemption and preemption.within_tenant) or "LowerPriority",
        default_priority=sharing.default_priority or 0,
    )


def queues_from_tenants(tenants: Iterable[Tenant]) -> dict[str, Queue]:
    """The queues of the tenants in fair-sharing mode, by tenant name."""
    return {
        t.metadata.name: queue_from_sharing(t.metadata.name, t.spec.sharing)
        for t in tenants
        if t.spec.sharing is not None and t.metadata.name
    }
