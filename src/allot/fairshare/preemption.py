"""Choosing the workloads to evict so that a waiting workload fits (Kueue's preemption).

Two kinds of victims, as a tenant's ``preemption`` allows: its own admitted workloads of
lower priority (``withinTenant: LowerPriority``), and, for work inside its guarantee, other
cohort members' workloads while they borrow a resource it needs (``reclaimWithinCohort``:
``Any``, or ``LowerPriority``). Workloads already leaving are counted on first; then other
tenants' (lower priority first, then those whose eviction leaves their tenant at or above
its guarantee, then the most recently admitted, then the newest); then the tenant's own.
Victims are taken one by one until the workload fits; a borrower is skipped once it no
longer borrows what is needed; finally every victim not needed is given back. What one
waiting workload counts on in a pass is not another's to count on, so two reclaimers
evict for both instead of waiting on the same victims and one of them preempting again.
Pure; used by :mod:`allot.fairshare.cycle`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from allot.fairshare.books import Books
from allot.fairshare.model import Workload


def victims(
    books: Books,
    waiting: Workload,
    admitted: Mapping[str, Sequence[Workload]],
    leaving: Mapping[str, Workload],
    claimed: Collection[str] = (),
) -> list[Workload] | None:
    """The workloads to evict for ``waiting`` to fit, or ``None`` when no allowed set of
    evictions makes it fit. ``admitted`` holds the admitted workloads by tenant;
    ``leaving`` (by key) those already being evicted, counted on as gone; ``claimed``
    those another waiting workload counts on in this pass, which are not candidates (what
    they free is that workload's)."""
    queue = books.queues[waiting.tenant]
    candidates = _Candidates(books, waiting, admitted, leaving, claimed)
    trial = books  # copied at the first removal: most waiting work evicts nothing
    chosen: list[Workload] = []
    taken: set[str] = set()
    needed = set(books.needed(waiting))
    for group in (candidates.gone, candidates.others, candidates.own, candidates.others):
        if group == candidates.others and (
            queue.reclaim_within_cohort == "Never" or not trial.within_guarantee(waiting)
        ):
            # Removing other tenants' work leaves this verdict as it is, so in this pass
            # only workloads already leaving would qualify, and `gone` took them all.
            continue
        for candidate in group():
            if candidate.key in taken:
                continue
            if (
                candidate.key not in leaving
                and candidate.tenant != waiting.tenant
                and not trial.borrows_any(candidate.tenant, needed)
            ):
                continue  # no longer borrows what is needed
            if trial is books:
                trial = books.copy()
            trial.remove(candidate)
            chosen.append(candidate)
            taken.add(candidate.key)
            if trial.fits(waiting):
                return _fewest(trial, waiting, chosen, leaving)
    return None


class _Candidates:
    """The waiting workload's possible victims, in the order they are tried; the other
    tenants' are gathered and sorted only when a pass may take them (a borrower that
    cannot reclaim never pays for sorting the cohort's admitted work)."""

    def __init__(
        self,
        books: Books,
        waiting: Workload,
        admitted: Mapping[str, Sequence[Workload]],
        leaving: Mapping[str, Workload],
        claimed: Collection[str],
    ) -> None:
        self.books, self.waiting, self.admitted, self.leaving = books, waiting, admitted, leaving
        self.claimed = claimed
        self.queue = books.queues[waiting.tenant]
        self.members = [m for m in books.cohort_members(waiting.tenant) if m != waiting.tenant]
        self._own: list[Workload] | None = None
        self._others: list[Workload] | None = None

    def own(self) -> list[Workload]:
        """Its tenant's admitted work it may preempt (lower priority) or that is leaving."""
        if self._own is None:
            lower_ok = self.queue.within_tenant != "Never"
            self._own = sorted(
                (
                    w
                    for w in self.admitted.get(self.waiting.tenant, ())
                    if w.key not in self.claimed
                    and (w.key in self.leaving or (lower_ok and w.priority < self.waiting.priority))
                ),
                key=lambda w: (w.priority, *_newest(w)),
            )
        return self._own

    def others(self) -> list[Workload]:
        """Other members' admitted work, as ``reclaimWithinCohort`` allows."""
        if self._others is None:
            lower = self.queue.reclaim_within_cohort == "LowerPriority"
            self._others = sorted(
                (
                    w
                    for member in self.members
                    for w in self.admitted.get(member, ())
                    if w.key not in self.claimed
                    and (w.key in self.leaving or not lower or w.priority < self.waiting.priority)
                ),
                key=self._other_order,
            )
        return self._others

    def gone(self) -> list[Workload]:
        """The candidates already leaving: own first, then the other members', each in
        the order of its group."""
        own = [w for w in self.own() if w.key in self.leaving]
        members = set(self.members)
        others = sorted(
            (w for w in self.leaving.values() if w.tenant in members and w.key not in self.claimed),
            key=self._other_order,
        )
        return own + others

    def _other_order(self, workload: Workload) -> tuple[int, bool, float, float, str]:
        return (workload.priority, not _keeps(self.books, workload), *_newest(workload))


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
