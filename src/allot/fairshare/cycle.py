"""One admission pass over every queue: admit what fits, evict what must go, say why.

Waiting workloads are taken in this order: those that would stay inside their tenant's
guarantee before those that would borrow; among borrowers, tenants borrowing the smallest
fraction of a pool first (fair sharing of what is idle); then higher priority; then first
come. Each is admitted if it fits (:class:`~allot.fairshare.books.Books`); otherwise it
may evict others (:mod:`allot.fairshare.preemption`), and waits with a message that says
for what: quota, or evictions in progress. A victim belongs to the first waiting workload
that counts on it in the pass, and the room it frees is that workload's: later workloads
are judged on the books as they will be once the decided evictions end (victims out,
their preemptors in) and on the books of now with the room of those preemptors held, so
nothing admitted later takes the room a reclaim waits for, and nothing is admitted before
its room exists. The pass is a
pure function of the queues and workloads, so the platform's controller and the trace
simulator decide alike and a test can replay any pass. Used by
:mod:`allot.tenancy.queueing` and :mod:`allot.simulation`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

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
    projected = books.copy()
    """As it will be once the evictions decided end: victims counted on are out, the
    workloads waiting for them are in (their room is reserved)."""
    held = books.copy()
    """Now, with the room held that workloads waiting for their victims need beyond what
    those victims free (:func:`_beyond`): no later workload takes it meanwhile."""
    decision = Decision(books=books)
    order = VictimOrder(projected, admitted)
    leaving = Leaving(order.key)
    waiting = {w.key: w for w in mine if not w.admitted}
    reserved: dict[str, list[Workload]] = {}  # evicted earlier for a workload still waiting
    claimed: dict[str, Workload] = {}
    for workload in (w for ws in admitted.values() for w in ws if w.evicting):
        owner = workload.preempted_for
        if owner in waiting and owner is not None:
            reserved.setdefault(owner, []).append(workload)
            claimed[workload.key] = workload
            leaving.add(workload, claimed=True)
            projected.remove(workload)
        else:
            leaving.add(workload)
    for owner, victims_ in reserved.items():  # their room is held from the start
        projected.add(waiting[owner])
        held.add(_beyond(waiting[owner], victims_))
    for workload in _queue(projected, list(waiting.values())):
        mine_ = reserved.pop(workload.key, [])
        if mine_:  # judged afresh: its hold and its victims' absence undone first
            projected.remove(workload)
            held.remove(_beyond(workload, mine_))
            for victim in mine_:
                projected.add(victim)
        room_later = projected.fits(workload)
        if room_later and held.fits(workload):
            for ledger in (books, projected, held):
                ledger.add(workload)
            admitted.setdefault(workload.tenant, []).append(workload)
            order.changed(workload.tenant)
            decision.admitted.append(workload)
            _release(mine_, leaving, claimed)  # not needed after all: others may count on them
            continue
        if room_later:  # room once evictions already decided end: wait for them
            counted = awaited(books, workload, list(claimed.values())) or list(claimed.values())
            decision.waiting[workload.key] = _waiting_on(workload, counted)
            for victim in mine_:
                projected.remove(victim)
            held.add(_beyond(workload, mine_))
        else:
            chosen = victims(order, workload, leaving, claimed, mine_)
            if chosen is None:
                decision.waiting[workload.key] = Waiting(QUOTA, books.why_not(workload))
                _release(mine_, leaving, claimed)
                continue
            _release([v for v in mine_ if v not in chosen], leaving, claimed)
            _claim(decision, workload, chosen, leaving, claimed)
            for victim in chosen:
                projected.remove(victim)
                order.changed(victim.tenant)
            decision.waiting[workload.key] = _waiting_on(workload, chosen)
            held.add(_beyond(workload, chosen))
        projected.add(workload)
        order.changed(workload.tenant)
    return decision


def _beyond(workload: Workload, victims_: Sequence[Workload]) -> Workload:
    """The part of ``workload``'s demand its own victims do not free."""
    freed: dict[str, int] = {}
    for victim in victims_:
        for resource, amount in victim.demand.items():
            freed[resource] = freed.get(resource, 0) + amount
    demand = {r: n - freed.get(r, 0) for r, n in workload.demand.items() if n > freed.get(r, 0)}
    return replace(workload, demand=demand)


def _release(victims_: Sequence[Workload], leaving: Leaving, claimed: dict[str, Workload]) -> None:
    """Victims their preemptor no longer counts on: candidates for others in the pass."""
    for victim in victims_:
        del claimed[victim.key]
        leaving.release(victim)


def _claim(
    decision: Decision,
    workload: Workload,
    chosen: Sequence[Workload],
    leaving: Leaving,
    claimed: dict[str, Workload],
) -> None:
    """The victims are ``workload``'s: evict those not leaving yet."""
    for victim in chosen:
        if victim.key in leaving:
            if victim.key not in claimed:
                leaving.claim(victim)
            claimed[victim.key] = victim
            continue
        claimed[victim.key] = victim
        leaving.add(victim, claimed=True)
        decision.evictions.append(Eviction(victim, workload, _evicted_for(victim, workload)))


def _waiting_on(workload: Workload, chosen: Sequence[Workload]) -> Waiting:
    return Waiting(PREEMPTION, _waits_for(workload, chosen), tuple(v.key for v in chosen))


def _queue(books: Books, waiting: list[Workload]) -> Iterator[Workload]:
    """The waiting workloads in the pass's order: those inside their tenant's guarantee
    (as the books stand when their turn comes, room reserved included: one admitted or
    waiting for its victims before may make the next borrow, which then waits for the
    borrowers' turn), then the borrowers."""
    borrowers = []
    for workload in sorted(waiting, key=_inside_order):
        if books.within_guarantee(workload):
            yield workload
        else:
            borrowers.append(workload)
    yield from sorted(borrowers, key=_borrower_order(books))


def _inside_order(workload: Workload) -> tuple[int, float, str]:
    return (-workload.priority, workload.created, workload.key)


def _borrower_order(books: Books) -> Callable[[Workload], tuple[float, int, float, str]]:
    def key(workload: Workload) -> tuple[float, int, float, str]:
        return (books.dominant_share(workload.tenant), *_inside_order(workload))

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
