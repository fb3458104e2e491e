"""What a pass means per tenant and per cohort: the figures people watch.

For every tenant in fair-sharing mode, and each resource its cohort governs: guaranteed,
used, borrowed and lent (:class:`~allot.fairshare.books.Standing`); how many workloads are
admitted and waiting; and since when work inside its guarantee has waited while the tenant
holds less than its guarantee (what the ``TenantBelowGuarantee`` alert times). Per cohort:
what its members guarantee and leave unused. Pure; built by the platform's queueing
controller after each pass and read by ``allot top``, the dashboard, ``/metrics`` and the
alert rules, and by the trace simulator's summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from allot.fairshare.books import Books, Standing
from allot.fairshare.model import Workload


@dataclass(frozen=True)
class TenantReport:
    tenant: str
    cohort: str | None
    resources: Mapping[str, Standing] = field(default_factory=dict)
    admitted: int = 0
    waiting: int = 0
    below_guarantee_since: float | None = None
    """The arrival of the oldest waiting workload inside the guarantee, while the tenant
    uses less than its guarantee of a resource that workload needs; ``None`` otherwise."""


def tenant_reports(books: Books, workloads: Sequence[Workload]) -> dict[str, TenantReport]:
    """One report per tenant of ``books``; ``workloads`` as after the pass."""
    reports = {}
    for tenant, queue in sorted(books.queues.items()):
        mine = [w for w in workloads if w.tenant == tenant]
        waiting = [w for w in mine if not w.admitted]
        reports[tenant] = TenantReport(
            tenant=tenant,
            cohort=queue.cohort,
            resources={r: books.standing(tenant, r) for r in sorted(books.governed(tenant))},
            admitted=len(mine) - len(waiting),
            waiting=len(waiting),
            below_guarantee_since=_below_since(books, waiting),
        )
    return reports


def _below_since(books: Books, waiting: Sequence[Workload]) -> float | None:
    starved = [
        w.created
        for w in waiting
        if books.within_guarantee(w)
        and any(
            books.usage(w.tenant, r) < books.share(w.tenant, r).guaranteed for r in books.needed(w)
        )
    ]
    return min(starved, default=None)


def cohort_idle(books: Books) -> dict[str, dict[str, int]]:
    """Per cohort and governed resource: guaranteed by its members and not used by anyone."""
    idle: dict[str, dict[str, int]] = {}
    for tenant, queue in sorted(books.queues.items()):
        if queue.cohort is None or queue.cohort in idle:
            continue
        members = books.cohort_members(tenant)
        governed = set().union(*(books.governed(m) for m in members))
        idle[queue.cohort] = {
            r: max(
                0,
                sum(books.share(m, r).guaranteed for m in members)
                - sum(books.usage(m, r) for m in members),
            )
            for r in sorted(governed)
        }
    return idle


@dataclass(frozen=True)
class SharingSummary:
    """Everything the operations side shows about fair sharing, as of the last pass."""

    tenants: Mapping[str, TenantReport] = field(default_factory=dict)
    cohorts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Per cohort and resource: guaranteed by its members and used by no one."""
    preempted: Mapping[str, int] = field(default_factory=dict)
    """Workloads of each tenant evicted since the platform started."""


def summary(
    books: Books, workloads: Sequence[Workload], preempted: Mapping[str, int]
) -> SharingSummary:
    return SharingSummary(tenant_reports(books, workloads), cohort_idle(books), dict(preempted))
