"""The usage arithmetic of a cohort: who uses, borrows and lends how much, and why not more.

A tenant's usage of a resource is the demand of its admitted workloads (a workload being
evicted still counts until its pods are gone). Usage up to the tenant's *reserved* part
(``guaranteed - lendable``) is its own; beyond that it draws on the cohort's pool, whose
capacity is every member's ``lendable``. So a tenant's guarantee is always reachable:
borrowers only ever use the pool, and giving back what they borrowed frees it. A
workload fits when, for each governed resource, its tenant stays within
``guaranteed + borrowingLimit`` and the pool within its capacity. :meth:`Books.why_not`
words the refusal the way the pod's condition and ``allot explain`` show it. Used by
:mod:`allot.fairshare.cycle` and :mod:`allot.fairshare.preemption`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from allot.api.quantity import NANO, Quantity, QuantityFormat
from allot.fairshare.model import GPU_MEMORY, Queue, Share, Workload


@dataclass(frozen=True)
class Standing:
    """One tenant's position in one resource, for ``allot top``, metrics and the dashboard."""

    guaranteed: int
    used: int
    borrowed: int
    lent: int


class Books:
    """Usage per tenant and resource for a set of queues, changed as workloads come and go."""

    def __init__(self, queues: Mapping[str, Queue], admitted: Iterable[Workload]) -> None:
        self.queues = queues
        self.used: dict[str, Counter[str]] = {name: Counter() for name in queues}
        self._pool_used: Counter[tuple[str, str]] = Counter()
        """What each cohort's members draw from its pool, by (cohort key, resource): kept
        as workloads come and go, so a fit check does not sum the members."""
        self._cohort_of = {
            name: f"cohort:{q.cohort}" if q.cohort else f"tenant:{name}"
            for name, q in queues.items()
        }
        self.members: dict[str, list[str]] = {}
        for name in sorted(queues):
            self.members.setdefault(self._cohort_of[name], []).append(name)
        classes = {
            cohort: {r for m in names for r in queues[m].shares if r != GPU_MEMORY}
            for cohort, names in self.members.items()
        }
        self._governed = {
            name: classes[self._cohort_of[name]] | ({GPU_MEMORY} & set(q.shares))
            for name, q in queues.items()
        }
        # Shares and pool capacities only depend on the queues: worked out once, shared
        # with every copy.
        self._shares: dict[tuple[str, str], Share] = {}
        self._capacity: dict[tuple[str, str], int] = {}
        for workload in admitted:
            self.used.setdefault(workload.tenant, Counter()).update(self._counted(workload))
        for tenant, used in self.used.items():
            if tenant in queues:
                for resource, amount in used.items():
                    key = (self._cohort_of[tenant], resource)
                    self._pool_used[key] += self._from_pool(tenant, resource, amount)

    def _cohort_key(self, tenant: str) -> str:
        return self._cohort_of[tenant]

    def add(self, workload: Workload) -> None:
        self._change(workload, 1)

    def remove(self, workload: Workload) -> None:
        self._change(workload, -1)

    def _change(self, workload: Workload, sign: int) -> None:
        tenant = workload.tenant
        used = self.used.setdefault(tenant, Counter())
        if tenant not in self.queues:  # no queue, no pool: only its usage is counted
            used.update({r: sign * n for r, n in workload.demand.items()})
            return
        cohort = self._cohort_key(tenant)
        for resource, demand in self._counted(workload).items():
            before = used[resource]
            used[resource] = before + sign * demand
            self._pool_used[cohort, resource] += self._from_pool(
                tenant, resource, before + sign * demand
            ) - self._from_pool(tenant, resource, before)

    def _counted(self, workload: Workload) -> Mapping[str, int]:
        """What of its demand is counted: the resources governed for its tenant."""
        governed = self._governed.get(workload.tenant)
        if governed is None:
            return workload.demand
        return {r: n for r, n in workload.demand.items() if r in governed}

    def copy(self) -> Books:
        twin = Books.__new__(Books)
        twin.queues, twin.members, twin._governed = self.queues, self.members, self._governed
        twin._cohort_of, twin._shares, twin._capacity = (
            self._cohort_of,
            self._shares,
            self._capacity,
        )
        twin.used = {name: Counter(used) for name, used in self.used.items()}
        twin._pool_used = Counter(self._pool_used)
        return twin

    # --- the arithmetic ---------------------------------------------------------------
    def governed(self, tenant: str) -> set[str]:
        """The resources counted for the tenant: every DeviceClass its cohort (or the
        tenant alone) has shares of, and GPU memory when the tenant itself has a share of
        it (GPU memory caps the tenants that ask for the cap; a member without one is not
        held back by another's)."""
        return self._governed[tenant]

    def cohort_members(self, tenant: str) -> list[str]:
        return self.members[self._cohort_key(tenant)]

    def share(self, tenant: str, resource: str) -> Share:
        found = self._shares.get((tenant, resource))
        if found is None:
            found = self._shares[tenant, resource] = self.queues[tenant].share(resource)
        return found

    def usage(self, tenant: str, resource: str) -> int:
        used = self.used.get(tenant)
        return used.get(resource, 0) if used is not None else 0

    def borrowed(self, tenant: str, resource: str) -> int:
        return max(0, self.usage(tenant, resource) - self.share(tenant, resource).guaranteed)

    def _from_pool(self, tenant: str, resource: str, used: int) -> int:
        return max(0, used - self.share(tenant, resource).reserved)

    def pool_capacity(self, tenant: str, resource: str) -> int:
        key = (self._cohort_of[tenant], resource)
        found = self._capacity.get(key)
        if found is None:
            members = self.cohort_members(tenant)
            found = self._capacity[key] = sum(self.share(m, resource).lendable for m in members)
        return found

    def pool_used(self, tenant: str, resource: str) -> int:
        return self._pool_used[self._cohort_key(tenant), resource]

    def needed(self, workload: Workload) -> dict[str, int]:
        """The workload's demand of governed resources (the only ones counted)."""
        governed = self.governed(workload.tenant)
        return {r: n for r, n in sorted(workload.demand.items()) if r in governed and n > 0}

    def short(self, workload: Workload) -> list[str]:
        """The governed resources the workload does not fit in; empty when it fits."""
        return [r for r, n in self.needed(workload).items() if not self._fits(workload, r, n)]

    def fits(self, workload: Workload) -> bool:
        return not self.short(workload)

    def _fits(self, workload: Workload, resource: str, demand: int) -> bool:
        tenant = workload.tenant
        share = self.share(tenant, resource)
        used = self.usage(tenant, resource)
        after = used + demand
        if share.borrowing_limit is not None and after > share.guaranteed + share.borrowing_limit:
            return False
        extra = self._from_pool(tenant, resource, after) - self._from_pool(tenant, resource, used)
        return self.pool_used(tenant, resource) + extra <= self.pool_capacity(tenant, resource)

    def within_guarantee(self, workload: Workload) -> bool:
        """Admitting it would not make its tenant borrow: the work reclaim may serve."""
        return all(
            self.usage(workload.tenant, r) + n <= self.share(workload.tenant, r).guaranteed
            for r, n in self.needed(workload).items()
        )

    def borrows_any(self, tenant: str, resources: Iterable[str]) -> bool:
        return any(self.borrowed(tenant, r) > 0 for r in resources)

    def dominant_share(self, tenant: str) -> float:
        """The largest fraction of a pool the tenant borrows: borrowers with less go first."""
        shares = [
            self.borrowed(tenant, r) / max(1, self.pool_capacity(tenant, r))
            for r in self.governed(tenant)
        ]
        return max(shares, default=0.0)

    def standing(self, tenant: str, resource: str) -> Standing:
        """Guaranteed, used, borrowed and lent; what borrowers use of the pool is charged to
        the lenders' idle shares in name order, so ``lent`` sums to what is borrowed."""
        share = self.share(tenant, resource)
        borrowed_total = sum(self.borrowed(m, resource) for m in self.cohort_members(tenant))
        lent = 0
        for member in self.cohort_members(tenant):
            idle = min(self.share(member, resource).lendable, max(0, self._idle(member, resource)))
            taken = min(idle, borrowed_total)
            borrowed_total -= taken
            if member == tenant:
                lent = taken
        return Standing(
            share.guaranteed, self.usage(tenant, resource), self.borrowed(tenant, resource), lent
        )

    def guaranteed_free(self, tenant: str, resource: str) -> int:
        """What the tenant could still take of its guarantee now: its reserved part, and
        its lendable part as far as borrowers leave the pool room."""
        share = self.share(tenant, resource)
        used = self.usage(tenant, resource)
        reserved_free = max(0, share.reserved - used)
        spare = self.pool_capacity(tenant, resource) - self.pool_used(tenant, resource)
        return max(0, min(share.guaranteed - used, reserved_free + max(0, spare)))

    def _idle(self, tenant: str, resource: str) -> int:
        return self.share(tenant, resource).guaranteed - self.usage(tenant, resource)

    # --- words ------------------------------------------------------------------------
    def why_not(self, workload: Workload) -> str:
        """``waiting for quota: needs 2 a100; research-ai has 0 of 2 guaranteed free; ...``"""
        parts = [self._why_not(workload, r) for r in self.short(workload)]
        return "waiting for quota: " + "; and ".join(parts)

    def _why_not(self, workload: Workload, resource: str) -> str:
        tenant = workload.tenant
        share = self.share(tenant, resource)
        free = self.guaranteed_free(tenant, resource)
        text = (
            f"needs {show(resource, workload.demand[resource])} {resource}; {tenant} has "
            f"{show(resource, free)} of {show(resource, share.guaranteed)} guaranteed free"
        )
        cohort = self.queues[tenant].cohort
        if cohort is None:
            return text + " and is in no cohort to borrow from"
        if share.borrowing_limit is not None:
            text += (
                f", may borrow at most {show(resource, share.borrowing_limit)} and borrows "
                f"{show(resource, self.borrowed(tenant, resource))}"
            )
        return text + "; " + self._pool_words(tenant, resource, cohort)

    def lends(self, tenant: str, resource: str) -> int:
        """What the cohort would lend the tenant beyond its guarantee now: the pool's room
        less what of it is the tenant's own guarantee."""
        share = self.share(tenant, resource)
        spare = self.pool_capacity(tenant, resource) - self.pool_used(tenant, resource)
        own = self.guaranteed_free(tenant, resource) - max(
            0, share.reserved - self.usage(tenant, resource)
        )
        return max(0, spare - own)

    def _pool_words(self, tenant: str, resource: str, cohort: str) -> str:
        spare = self.lends(tenant, resource)
        others = [m for m in self.cohort_members(tenant) if m != tenant]
        lenders = [
            f"{m} lends at most {show(resource, self.share(m, resource).lendable)}"
            for m in others
            if self.share(m, resource).lendable > 0
        ]
        users = [
            f"{m} borrows {show(resource, self.borrowed(m, resource))}"
            for m in self.cohort_members(tenant)
            if self.borrowed(m, resource) > 0
        ]
        detail = ", ".join(lenders) or "no other member lends any"
        if users:
            detail += "; in use: " + ", ".join(users)
        return f"the cohort {cohort} lends {show(resource, max(0, spare))} ({detail})"


def show(resource: str, value: int) -> str:
    """An amount as people read it: GPU memory as a binary quantity (``40Gi``)."""
    if resource == GPU_MEMORY:
        return Quantity(value * NANO, QuantityFormat.BINARY_SI).canonical()
    return str(value)
