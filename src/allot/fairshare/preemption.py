"""Choosing the workloads to evict so that a waiting workload fits (Kueue's preemption).

Two kinds of victims, as a tenant's ``preemption`` allows: its own admitted workloads of
lower priority (``withinTenant: LowerPriority``), and, for work inside its guarantee, other
cohort members' workloads while they borrow a resource it needs (``reclaimWithinCohort``:
``Any``, or ``LowerPriority``). Workloads already leaving are counted on first; then other
tenants' (lower priority first, then those whose eviction leaves their tenant at or above
its guarantee, then the most recently admitted, then the newest); then the tenant's own.
Victims are taken one by one until the workload fits; a borrower is skipped once it no
longer borrows what is needed; finally every victim not needed is given back.
Pure; used by :mod:`allot.fairshare.cycle`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from allot.fairshare.books import Books
from allot.fairshare.model import Workload


def victims(
    books: Books, waiting: Workload, admitted: Sequence[Workload], leaving: Collection[str]
) -> list[Workload] | None:
    """The workloads to evict for ``waiting`` to fit (those in ``leaving``, already being
    evicted or chosen by another waiting workload in this pass, are counted on as gone),
    or ``None`` when no allowed set of evictions makes it fit."""
    queue = books.queues[waiting.tenant]
    own, others = _candidates(books, waiting, admitted, leaving)
    trial = books.copy()
    chosen: list[Workload] = []
    needed = set(books.needed(waiting))
    gone = [w for w in own + others if w.key in leaving]
    for candidate in gone + others + own + others:
        if candidate in chosen:
            continue
        if candidate.key not in leaving and candidate.tenant != waiting.tenant:
            if queue.reclaim_within_cohort == "Never" or not trial.within_guarantee(waiting):
                continue
            if not trial.borrows_any(candidate.tenant, needed):
                continue
        trial.remove(candidate)
        chosen.append(candidate)
        if trial.fits(waiting):
            return _fewest(trial, waiting, chosen, leaving)
    return None


def _candidates(
    books: Books, waiting: Workload, admitted: Sequence[Workload], leaving: Collection[str]
) -> tuple[list[Workload], list[Workload]]:
    queue = books.queues[waiting.tenant]
    lower = queue.reclaim_within_cohort == "LowerPriority"
    members = set(books.cohort_members(waiting.tenant)) - {waiting.tenant}
    own = [
        w
        for w in admitted
        if w.tenant == waiting.tenant
        and (w.key in leaving or (queue.within_tenant != "Never" and w.priority < waiting.priority))
    ]
    others = [
        w
        for w in admitted
        if w.tenant in members and (w.key in leaving or not lower or w.priority < waiting.priority)
    ]
    own.sort(key=lambda w: (w.priority, *_newest(w)))
    others.sort(key=lambda w: (w.priority, not _keeps(books, w), *_newest(w)))
    return own, others


def _newest(workload: Workload) -> tuple[float, float, str]:
    """Most recently admitted first; among those admitted together, the newest."""
    return (-(workload.admitted_at or 0.0), -workload.created, workload.key)


def _keeps(books: Books, workload: Workload) -> bool:
    return all(
        books.usage(workload.tenant, r) - n >= books.share(workload.tenant, r).guaranteed
        for r, n in books.needed(workload).items()
    )


def _fewest(
    trial: Books, waiting: Workload, chosen: list[Workload], leaving: Collection[str]
) -> list[Workload]:
    """Give back, newest choice first, every victim the workload fits without."""
    kept = list(chosen)
    for candidate in reversed(chosen):
        if candidate.key in leaving:
            continue
        trial.add(candidate)
        if trial.fits(waiting):
            kept.remove(candidate)
        else:
            trial.remove(candidate)
    return kept
