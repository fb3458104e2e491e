"""One admission pass over every queue: admit what fits, evict what must go, say why.

Waiting workloads are taken in this order: those that would stay inside their tenant's
guarantee before those that would borrow; among borrowers, tenants borrowing the smallest
fraction of a pool first (fair sharing of what is idle); then higher priority; then first
come. Each is admitted if it fits (:class:`~allot.fairshare.books.Books`); otherwise it
may evict others (:mod:`allot.fairshare.preemption`), and waits with a message that says
for what: quota, or evictions in progress. A victim belongs to the first waiting workload
that counts on it in the pass; a later one that would fit only with such victims waits for
them without evicting more (``preemption.awaited``). The pass is a pure function of the queues and
workloads, so the platform's controller and the trace simulator decide alike and a test
can replay any pass. Used by :mod:`allot.tenancy.queueing` and :mod:`allot.simulation`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from allot.fairshare.books import Books
from allot.fairshare.model import Queue, Workload
from allot.fairshare.preemption import Leaving, VictimOrder, awaited, victims

QUOTA = "quota"
PREEMPTION = "preemption"


@dataclass(frozen=True)
class Eviction:
    """Evict ``victim`` so that ``preemptor`` fits."""

    victim: Workload
    preemptor: Workload
    message: str


@dataclass(frozen=True)
class Waiting:
    reason: str
    """:data:`QUOTA` (nothing to evict would make it fit) or :data:`PREEMPTION`."""
    message: str
    evicting: tuple[str, ...] = ()
    """For :data:`PREEMPTION`: the workloads whose end it waits for."""


@dataclass
class Decision:
    admitted: list[Workload] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    waiting: dict[str, Waiting] = field(default_factory=dict)
    books: Books | None = None
    """Usage after the pass (admissions counted, evictions still holding their share)."""


def admission_cycle(queues: Mapping[str, Queue], workloads: Sequence[Workload]) -> Decision:
    """Admit, evict and explain, for the workloads of tenants that have a queue."""
    mine = [w for w in workloads if w.tenant in queues]
    admitted: dict[str, list[Workload]] = {}
    for workload in mine:
        if workload.admitted:
            admitted.setdefault(workload.tenant, []).append(workload)
    books = Books(queues, (w for ws in admitted.values() for w in ws))
    decision = Decision(books=books)
    order = VictimOrder(books, admitted)
    leaving = Leaving(order.key)
    for workload in (w for ws in admitted.values() for w in ws if w.evicting):
        leaving.add(workload)
    claimed: dict[str, Workload] = {}
    for workload in sorted((w for w in mine if not w.admitted), key=_order(books)):
        if books.fits(workload):
            books.add(workload)
            admitted.setdefault(workload.tenant, []).append(workload)
            order.changed(workload.tenant)
            decision.admitted.append(workload)
            continue
        chosen = victims(order, workload, leaving, claimed)
        if chosen is None:
            shared = awaited(books, workload, list(claimed.values())) if claimed else None
            if shared is None:
                decision.waiting[workload.key] = Waiting(QUOTA, books.why_not(workload))
            else:  # only what others' evictions free would make it fit: wait for those
                decision.waiting[workload.key] = _waiting_on(workload, shared)
            continue
        for victim in chosen:
            claimed[victim.key] = victim
            if victim.key in leaving:
                leaving.claim(victim)
                continue
            leaving.add(victim, claimed=True)
            decision.evictions.append(Eviction(victim, workload, _evicted_for(victim, workload)))
        decision.waiting[workload.key] = _waiting_on(workload, chosen)
    return decision


def _waiting_on(workload: Workload, chosen: Sequence[Workload]) -> Waiting:
    return Waiting(PREEMPTION, _waits_for(workload, chosen), tuple(v.key for v in chosen))


def _order(books: Books) -> Callable[[Workload], tuple[bool, float, int, float, str]]:
    def key(workload: Workload) -> tuple[bool, float, int, float, str]:
        borrows = not books.within_guarantee(workload)
        share = books.dominant_share(workload.tenant) if borrows else 0.0
        return (borrows, share, -workload.priority, workload.created, workload.key)

    return key


def _evicted_for(victim: Workload, preemptor: Workload) -> str:
    if victim.tenant == preemptor.tenant:
        return (
            f"Preempted by allot to admit {preemptor.key} of tenant {preemptor.tenant} "
            f"(priority {preemptor.priority} over {victim.priority})"
        )
    return (
        f"Preempted by allot: tenant {preemptor.tenant} reclaims its guaranteed share "
        f"borrowed by {victim.tenant}, for {preemptor.key}"
    )


def _waits_for(workload: Workload, chosen: Sequence[Workload]) -> str:
    names = ", ".join(f"{v.key} ({v.tenant})" for v in chosen)
    return f"waiting for preemption: evicting {names} to admit {workload.key}"
