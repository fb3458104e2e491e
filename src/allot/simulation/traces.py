"""Running a workload trace on a fleet, under hard quotas and under fair sharing.

A simulated clock moves from event to event (arrivals, ends, evictions done), each
rounded up to the trace's admission period (``cycleSeconds``), as a controller that runs
every period would see them. At each such moment: finished and evicted gangs give their
devices back, arrivals join the queue, one admission pass runs
(:func:`allot.fairshare.cycle.admission_cycle`), and admitted gangs are placed on the
fleet (:class:`~allot.simulation.inventory.Placer`); one that does not fit physically stays
admitted and waits for capacity. Fair sharing uses the tenants' ``sharing`` as written;
hard quotas are the same queues with no cohort and no preemption, so a tenant holds at
most its ``guaranteed``. An evicted gang keeps its devices for the reclaim grace period,
then is queued again and later restarts from zero. Figures per tenant: device-hours held,
waits (queued → started; each restart waits again; a gang still queued at the horizon
counts its wait so far), the waits of work that was inside its tenant's guarantee when
queued, and preemptions. Pure; called by ``allot simulate --trace`` and ``bench.traces``.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from dataclasses import dataclass, field, replace

from allot.fairshare.cycle import admission_cycle
from allot.fairshare.model import GPU_MEMORY, Queue, Workload
from allot.simulation.inventory import Inventory, Placer
from allot.simulation.trace import Trace, TraceWorkload

HARD_QUOTA, FAIR_SHARING = "hard-quota", "fair-sharing"
MODES = (HARD_QUOTA, FAIR_SHARING)
FINISH, EVICTED, ARRIVE = 0, 1, 2
QUEUED, ADMITTED, RUNNING, EVICTING, DONE = "queued", "admitted", "running", "evicting", "done"
MAX_PASSES = 10
"""Admission passes at one moment: another runs only when an admitted gang that had not
started yet was evicted (it leaves at once, so its preemptor may fit now)."""


@dataclass
class TenantFigures:
    tenant: str
    device_seconds: float = 0.0
    lost_seconds: float = 0.0
    """Device-seconds of runs thrown away by eviction (grace period included)."""
    waits: list[float] = field(default_factory=list)
    inside_waits: list[float] = field(default_factory=list)
    preemptions: int = 0
    completed: int = 0
    queued_at_end: int = 0


@dataclass
class ModeResult:
    mode: str
    horizon: float
    devices: int
    tenants: dict[str, TenantFigures]

    @property
    def utilization(self) -> float:
        used = sum(t.device_seconds for t in self.tenants.values())
        return used / (self.devices * self.horizon) if self.devices and self.horizon else 0.0


@dataclass
class _Gang:
    spec: TraceWorkload
    engine: Workload
    phase: str = QUEUED
    queued_at: float = 0.0
    inside: bool = False
    devices: list[int] = field(default_factory=list)
    started_at: float = 0.0
    epoch: int = 0


def simulate(trace: Trace, inventory: Inventory, mode: str) -> ModeResult:
    """Run ``trace`` in one mode (:data:`HARD_QUOTA` or :data:`FAIR_SHARING`)."""
    return _Run(trace, inventory, mode).run()


def hard_quota_queues(queues: dict[str, Queue]) -> dict[str, Queue]:
    """Each tenant alone: no cohort to borrow from or lend to, no preemption."""
    return {
        name: replace(q, cohort=None, reclaim_within_cohort="Never", within_tenant="Never")
        for name, q in queues.items()
    }


class _Run:
    def __init__(self, trace: Trace, inventory: Inventory, mode: str) -> None:
        self.trace, self.inventory, self.mode = trace, inventory, mode
        self.queues = trace.queues if mode == FAIR_SHARING else hard_quota_queues(trace.queues)
        self.placer = Placer(inventory)
        self.figures = {t: TenantFigures(t) for t in trace.queues}
        self.gangs: dict[str, _Gang] = {}
        self.claimed: dict[str, Counter[str]] = {t: Counter() for t in trace.queues}
        self.counted = {r for q in trace.queues.values() for r in q.shares}
        self.events: list[tuple[float, int, int, str, int]] = []
        self.sequence = 0
        for workload in trace.workloads:
            self._push(workload.arrival, ARRIVE, workload.key)

    def _push(self, time: float, kind: int, key: str, epoch: int = 0) -> None:
        cycle = self.trace.cycle
        moment = math.ceil(round(time / cycle, 9)) * cycle
        heapq.heappush(self.events, (moment, kind, self.sequence, key, epoch))
        self.sequence += 1

    def run(self) -> ModeResult:
        specs = {w.key: w for w in self.trace.workloads}
        while self.events and self.events[0][0] <= self.trace.horizon:
            now = self.events[0][0]
            while self.events and self.events[0][0] == now:
                _, kind, _, key, epoch = heapq.heappop(self.events)
                if kind == ARRIVE:
                    self._arrive(specs[key], now)
                elif key in self.gangs and self.gangs[key].epoch == epoch:
                    self._leave(self.gangs[key], now, finished=kind == FINISH)
            self._admit(now)
            self._place(now)
        self._close()
        return ModeResult(self.mode, self.trace.horizon, len(self.inventory.devices), self.figures)

    # --- the queue --------------------------------------------------------------------
    def _demand(self, spec: TraceWorkload) -> dict[str, int]:
        demand = Counter({name: count * spec.pods for name, count in spec.devices})
        if GPU_MEMORY in self.counted:
            demand[GPU_MEMORY] = self.inventory.memory_of(spec) * spec.pods
        return {r: n for r, n in demand.items() if r in self.counted}

    def _arrive(self, spec: TraceWorkload, now: float) -> None:
        engine = Workload(spec.key, spec.tenant, self._demand(spec), spec.priority, created=now)
        gang = _Gang(spec, engine)
        self.gangs[spec.key] = gang
        self._enqueue(gang, now)

    def _enqueue(self, gang: _Gang, now: float) -> None:
        """Queue it; it is *inside* its guarantee when its tenant's other live work plus
        its own demand fits in what the tenant is guaranteed."""
        tenant = gang.spec.tenant
        shares = self.trace.queues[tenant].shares
        claimed = self.claimed[tenant]
        gang.inside = all(
            claimed[r] + n <= (shares[r].guaranteed if r in shares else 0)
            for r, n in gang.engine.demand.items()
        )
        claimed.update(gang.engine.demand)
        gang.phase, gang.queued_at = QUEUED, now
        gang.engine = replace(gang.engine, admitted_at=None, evicting=False, created=now)

    def _leave(self, gang: _Gang, now: float, *, finished: bool) -> None:
        """A gang ends (``finished``) or its eviction's grace period is over."""
        figures = self.figures[gang.spec.tenant]
        held = len(gang.devices) * (now - gang.started_at)
        figures.device_seconds += held
        self.placer.release(gang.devices)
        gang.devices = []
        gang.epoch += 1
        self.claimed[gang.spec.tenant].subtract(gang.engine.demand)
        if finished:
            gang.phase = DONE
            figures.completed += 1
            del self.gangs[gang.spec.key]
            return
        figures.lost_seconds += held
        self._enqueue(gang, now)

    # --- admission and placement ------------------------------------------------------
    def _admit(self, now: float) -> None:
        for _ in range(MAX_PASSES):
            live = [g.engine for g in self.gangs.values()]
            decision = admission_cycle(self.queues, live)
            for workload in decision.admitted:
                gang = self.gangs[workload.key]
                gang.phase, gang.engine = ADMITTED, replace(workload, admitted_at=now)
            again = False
            for eviction in decision.evictions:
                gang = self.gangs[eviction.victim.key]
                self.figures[gang.spec.tenant].preemptions += 1
                if gang.phase == RUNNING:
                    gang.phase = EVICTING
                    gang.engine = replace(
                        gang.engine, evicting=True, preempted_for=eviction.preemptor.key
                    )
                    self._push(now + self.trace.grace, EVICTED, gang.spec.key, gang.epoch)
                else:  # admitted, not started: nothing to stop
                    self.claimed[gang.spec.tenant].subtract(gang.engine.demand)
                    self._enqueue(gang, now)
                    again = True
            if not again:
                return

    def _place(self, now: float) -> None:
        waiting = sorted(
            (g for g in self.gangs.values() if g.phase == ADMITTED),
            key=lambda g: (g.engine.admitted_at, -g.spec.priority, g.queued_at, g.spec.key),
        )
        for gang in waiting:
            devices = self.placer.place(gang.spec)
            if devices is None:
                continue
            gang.phase, gang.devices, gang.started_at = RUNNING, devices, now
            self._record_wait(gang, now - gang.queued_at)
            self._push(now + gang.spec.duration, FINISH, gang.spec.key, gang.epoch)

    def _record_wait(self, gang: _Gang, wait: float) -> None:
        figures = self.figures[gang.spec.tenant]
        figures.waits.append(wait)
        if gang.inside:
            figures.inside_waits.append(wait)

    def _close(self) -> None:
        """At the horizon: count what still runs, and the waits of what still waits."""
        horizon = self.trace.horizon
        for gang in self.gangs.values():
            figures = self.figures[gang.spec.tenant]
            if gang.phase in (RUNNING, EVICTING):
                figures.device_seconds += len(gang.devices) * (horizon - gang.started_at)
            elif horizon >= gang.queued_at:
                figures.queued_at_end += 1
                self._record_wait(gang, horizon - gang.queued_at)


def p95(values: list[float]) -> float | None:
    """The 95th percentile, nearest rank; ``None`` without values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
