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

import bisect
import heapq
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from operator import itemgetter

from allot.fairshare.books import Books
from allot.fairshare.model import Workload

OrderKey = tuple[int, bool, float, float, str]


class Leaving:
    """Workloads being evicted (or chosen to be in this pass), by key; per tenant, in
    victim order (``order``'s key, fixed when the workload starts leaving), those no
    waiting workload of the pass counts on yet."""

    def __init__(self, order: Callable[[Workload], OrderKey]) -> None:
        self.order = order
        self.by_key: dict[str, Workload] = {}
        self.unclaimed: dict[str, list[tuple[OrderKey, Workload]]] = {}

    def add(self, workload: Workload, *, claimed: bool = False) -> None:
        if workload.key in self.by_key:
            return
        self.by_key[workload.key] = workload
        if not claimed:
            entry = (self.order(workload), workload)
            bisect.insort(self.unclaimed.setdefault(workload.tenant, []), entry, key=itemgetter(0))

    def release(self, workload: Workload) -> None:
        """No longer counted on: a candidate for others again."""
        entry = (self.order(workload), workload)
        bisect.insort(self.unclaimed.setdefault(workload.tenant, []), entry, key=itemgetter(0))

    def claim(self, workload: Workload) -> None:
        """A waiting workload counts on it: it is no other's candidate in this pass."""
        entries = self.unclaimed.get(workload.tenant, [])
        self.unclaimed[workload.tenant] = [e for e in entries if e[1].key != workload.key]

    def __contains__(self, key: object) -> bool:
        return key in self.by_key

    def of(self, tenant: str) -> list[tuple[OrderKey, Workload]]:
        return self.unclaimed.get(tenant, [])


class VictimOrder:
    """Each tenant's admitted work in the order it is taken as a victim, sorted once per
    pass and again only after that tenant's usage changed (:meth:`changed`): a pass asks
    for victims once per waiting workload, and the order depends only on the tenant."""

    def __init__(self, books: Books, admitted: Mapping[str, Sequence[Workload]]) -> None:
        self.books, self.admitted = books, admitted
        self._others: dict[str, list[tuple[OrderKey, Workload]]] = {}
        self._own: dict[str, list[Workload]] = {}
        self._keys: dict[str, OrderKey] = {}

    def changed(self, tenant: str) -> None:
        self._others.pop(tenant, None)
        self._own.pop(tenant, None)

    def as_other(self, tenant: str) -> list[tuple[OrderKey, Workload]]:
        """Lower priority first, then work whose eviction keeps its tenant at or above its
        guarantee, then the most recently admitted, then the newest."""
        if tenant not in self._others:
            keyed = [(self._key(w), w) for w in self.admitted.get(tenant, ())]
            self._others[tenant] = sorted(keyed, key=itemgetter(0))
        return self._others[tenant]

    def as_own(self, tenant: str) -> list[Workload]:
        """Lower priority first, then the most recently admitted, then the newest."""
        if tenant not in self._own:
            self._own[tenant] = sorted(
                self.admitted.get(tenant, ()), key=lambda w: (w.priority, *_newest(w))
            )
        return self._own[tenant]

    def key(self, workload: Workload) -> OrderKey:
        return self._keys.get(workload.key) or self._key(workload)

    def _key(self, workload: Workload) -> OrderKey:
        key = (workload.priority, not _keeps(self.books, workload), *_newest(workload))
        self._keys[workload.key] = key
        return key


def victims(
    order: VictimOrder,
    waiting: Workload,
    leaving: Leaving,
    claimed: Collection[str] = (),
    mine: Sequence[Workload] = (),
) -> list[Workload] | None:
    """The workloads to evict for ``waiting`` to fit, or ``None`` when no allowed set of
    evictions makes it fit. ``leaving``: workloads already being evicted, counted on as
    gone; ``claimed``: those another waiting workload counts on in this pass, which are
    not candidates (what they free is that workload's); ``mine``: those evicted for
    ``waiting`` earlier, counted on first."""
    books = order.books
    queue = books.queues[waiting.tenant]
    candidates = _Candidates(order, waiting, leaving, claimed, mine)
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
        for candidate in group(trial, needed):
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
    """The waiting workload's possible victims, in the order they are tried, each group
    produced lazily: the search usually stops after a few."""

    def __init__(
        self,
        order: VictimOrder,
        waiting: Workload,
        leaving: Leaving,
        claimed: Collection[str],
        mine: Sequence[Workload],
    ) -> None:
        self.order, self.waiting, self.leaving, self.claimed = order, waiting, leaving, claimed
        self.mine = mine
        self.queue = order.books.queues[waiting.tenant]
        self.members = [
            m for m in order.books.cohort_members(waiting.tenant) if m != waiting.tenant
        ]

    def own(self, trial: Books, needed: set[str]) -> Iterator[Workload]:
        """Its tenant's admitted work of lower priority, when the tenant may preempt it."""
        if self.queue.within_tenant == "Never":
            return
        for w in self.order.as_own(self.waiting.tenant):
            if w.priority >= self.waiting.priority:
                return  # sorted by priority: nothing lower follows
            if w.key not in self.claimed:
                yield w

    def others(self, trial: Books, needed: set[str]) -> Iterator[Workload]:
        """Other members' admitted work, as ``reclaimWithinCohort`` allows, of members
        that borrow what is needed (a member that does not now never will in this search:
        evictions only lower borrowing)."""
        lower = self.queue.reclaim_within_cohort == "LowerPriority"
        lists = [self.order.as_other(m) for m in self.members if trial.borrows_any(m, needed)]
        for _, w in heapq.merge(*lists, key=itemgetter(0)):
            if lower and w.priority >= self.waiting.priority:
                return  # merged by priority first: nothing lower follows
            if w.key not in self.claimed:
                yield w

    def gone(self, trial: Books, needed: set[str]) -> Iterator[Workload]:
        """The candidates already leaving: those evicted for this workload, then the
        unclaimed ones: own first, then the other members'."""
        yield from self.mine
        for _, w in self.leaving.of(self.waiting.tenant):
            yield w
        members = [self.leaving.of(m) for m in self.members]
        for _, w in heapq.merge(*members, key=itemgetter(0)):
            yield w


def _newest(workload: Workload) -> tuple[float, float, str]:
    """Most recently admitted first; among those admitted together, the newest."""
    return (-(workload.admitted_at or 0.0), -workload.created, workload.key)


def _keeps(books: Books, workload: Workload) -> bool:
    return all(
        books.usage(workload.tenant, r) - n >= books.share(workload.tenant, r).guaranteed
        for r, n in books.needed(workload).items()
    )


def awaited(books: Books, waiting: Workload, claimed: Sequence[Workload]) -> list[Workload] | None:
    """The workloads others' evictions in this pass free that ``waiting`` would fit with
    (it waits for them), or ``None`` when even all of them would not make it fit."""
    members = set(books.cohort_members(waiting.tenant))
    trial = books.copy()
    counted: list[Workload] = []
    for workload in claimed:
        if workload.tenant not in members:
            continue
        trial.remove(workload)
        counted.append(workload)
        if trial.fits(waiting):
            return counted
    return None


def _fewest(
    trial: Books, waiting: Workload, chosen: list[Workload], leaving: Leaving
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
