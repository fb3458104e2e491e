"""The fair-sharing engine (allot.fairshare): table-driven passes and random-trace invariants.

The table (`tests/scenarios/fair-sharing.yaml`) replays admission passes step by step on a
fake clock; the hypothesis tests run random arrivals, completions and priorities through
many passes and check what must always hold: no tenant above guarantee + borrowing limit,
no pool lent past its capacity, work inside a tenant's guarantee never left waiting for
quota while another member borrows what it needs, and no workload evicted twice.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.api.quantity import NANO, Quantity
from allot.api.tenancy import TenantSharing
from allot.fairshare.books import Books, Standing
from allot.fairshare.cycle import PREEMPTION, QUOTA, Decision, admission_cycle
from allot.fairshare.model import Queue, Share, Workload, queue_from_sharing
from allot.fairshare.report import cohort_idle, tenant_reports

SCENARIOS = yaml.safe_load((Path(__file__).parent / "scenarios" / "fair-sharing.yaml").read_text())[
    "scenarios"
]


def _amount(value: object) -> int:
    return Quantity.parse(str(value)).nanos // NANO


class Replay:
    """The workloads of a scenario and what each pass did to them."""

    def __init__(self, tenants: dict[str, Any]) -> None:
        self.queues = {
            name: queue_from_sharing(name, TenantSharing.model_validate(spec))
            for name, spec in tenants.items()
        }
        self.workloads: dict[str, Workload] = {}
        self.time = -1.0

    def step(self, step: dict[str, Any]) -> Decision:
        self.time = float(step.get("time", self.time + 1))
        if step.get("evictionsEnd", True):
            self.workloads = {k: w for k, w in self.workloads.items() if not w.evicting}
        for key in step.get("finish") or []:
            del self.workloads[key]
        for item in step.get("arrive") or []:
            self.workloads[item["key"]] = Workload(
                key=item["key"],
                tenant=item["tenant"],
                demand={r: _amount(n) for r, n in item["demand"].items()},
                priority=item.get("priority", 0),
                created=float(item.get("at", self.time)),
            )
        decision = admission_cycle(self.queues, list(self.workloads.values()))
        for workload in decision.admitted:
            self.workloads[workload.key] = replace(workload, admitted_at=self.time)
        for eviction in decision.evictions:
            self.workloads[eviction.victim.key] = replace(
                eviction.victim, evicting=True, preempted_for=eviction.preemptor.key
            )
        return decision


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_scenario(scenario: dict[str, Any]) -> None:
    replay = Replay(scenario["tenants"])
    for number, step in enumerate(scenario["steps"]):
        decision = replay.step(step)
        expect = step.get("expect") or {}
        where = f"step {number}"
        if "admitted" in expect:
            assert [w.key for w in decision.admitted] == expect["admitted"], where
        if "evicted" in expect:
            assert [e.victim.key for e in decision.evictions] == expect["evicted"], where
        for key, (reason, fragment) in (expect.get("waiting") or {}).items():
            assert key in decision.waiting, f"{where}: {key} is not waiting"
            assert decision.waiting[key].reason == reason, where
            assert fragment in decision.waiting[key].message, where
        assert decision.books is not None
        for tenant, resources in (expect.get("usage") or {}).items():
            for resource, numbers in resources.items():
                standing = decision.books.standing(tenant, resource)
                got = [standing.guaranteed, standing.used, standing.borrowed, standing.lent]
                assert got == [_amount(n) for n in numbers], f"{where}: {tenant} {resource}"


def test_evictions_name_the_reclaiming_tenant() -> None:
    replay = Replay(
        {
            "research": {"cohort": "pool", "deviceClasses": [{"name": "a100", "guaranteed": "0"}]},
            "legal": {"cohort": "pool", "deviceClasses": [{"name": "a100", "guaranteed": "1"}]},
        }
    )
    replay.step({"arrive": [{"key": "r1", "tenant": "research", "demand": {"a100": 1}}]})
    decision = replay.step({"arrive": [{"key": "l1", "tenant": "legal", "demand": {"a100": 1}}]})
    assert [e.message for e in decision.evictions] == [
        "Preempted by allot: tenant legal reclaims its guaranteed share borrowed by research,"
        " for l1"
    ]


# --- invariants on random traces -------------------------------------------------------

TENANTS = ("t0", "t1", "t2")
RESOURCES = ("a100", "mig")
shares = st.builds(
    Share,
    guaranteed=st.integers(0, 4),
    borrowing_limit=st.one_of(st.none(), st.integers(0, 4)),
    lending_limit=st.one_of(st.none(), st.integers(0, 4)),
)
queues = st.fixed_dictionaries(
    {
        t: st.builds(
            Queue,
            tenant=st.just(t),
            shares=st.fixed_dictionaries(dict.fromkeys(RESOURCES, shares)),
            cohort=st.sampled_from(["pool", "pool", None]),
            reclaim_within_cohort=st.sampled_from(["Any", "LowerPriority", "Never"]),
            within_tenant=st.sampled_from(["LowerPriority", "Never"]),
        )
        for t in TENANTS
    }
)
events = st.lists(
    st.tuples(
        st.sampled_from(TENANTS),
        st.fixed_dictionaries({r: st.integers(0, 3) for r in RESOURCES}),
        st.integers(0, 2),  # priority
        st.integers(0, 3),  # how many admitted workloads finish at this step
    ),
    min_size=1,
    max_size=25,
)


def _check_books(books: Books) -> None:
    for tenant, queue in books.queues.items():
        for resource in books.governed(tenant):
            share = queue.share(resource)
            if share.borrowing_limit is not None:
                assert books.usage(tenant, resource) <= share.guaranteed + share.borrowing_limit
            assert books.pool_used(tenant, resource) <= books.pool_capacity(tenant, resource)


def _reclaim_is_served(books: Books, decision: Decision, waiting: list[Workload]) -> None:
    """Work inside its guarantee, in a tenant that reclaims from anyone, never waits for
    quota while a member of its cohort borrows a resource it needs."""
    for workload in waiting:
        verdict = decision.waiting.get(workload.key)
        queue = books.queues[workload.tenant]
        if verdict is None or verdict.reason != QUOTA or queue.reclaim_within_cohort != "Any":
            continue
        if not books.within_guarantee(workload):
            continue
        needed = set(books.needed(workload))
        others = [m for m in books.cohort_members(workload.tenant) if m != workload.tenant]
        assert not any(books.borrows_any(m, needed) for m in others), verdict.message


@settings(max_examples=150, deadline=None)
@given(queues, events)
def test_random_traces_keep_the_invariants(
    queue_map: dict[str, Queue], trace: list[tuple[str, dict[str, int], int, int]]
) -> None:
    workloads: dict[str, Workload] = {}
    evicted: set[str] = set()
    for step, (tenant, demand, priority, finishing) in enumerate(trace):
        workloads = {k: w for k, w in workloads.items() if not w.evicting}
        for workload in sorted((w for w in workloads.values() if w.admitted), key=str)[:finishing]:
            del workloads[workload.key]
        key = f"w{step}"
        workloads[key] = Workload(key, tenant, demand, priority, created=float(step))
        decision = admission_cycle(queue_map, list(workloads.values()))
        assert decision.books is not None
        _check_books(decision.books)
        pending = [w for w in workloads.values() if not w.admitted]
        _reclaim_is_served(decision.books, decision, pending)
        for eviction in decision.evictions:
            assert eviction.victim.key not in evicted, "a workload was evicted twice"
            assert eviction.victim.admitted
            assert not eviction.victim.evicting
            evicted.add(eviction.victim.key)
        for verdict in decision.waiting.values():
            if verdict.reason == PREEMPTION:
                assert verdict.evicting
        for workload in decision.admitted:
            workloads[workload.key] = replace(workload, admitted_at=float(step))
        for eviction in decision.evictions:
            workloads[eviction.victim.key] = replace(
                eviction.victim, evicting=True, preempted_for=eviction.preemptor.key
            )


def test_reports_show_standing_waiting_and_idle_cohort() -> None:
    replay = Replay(
        {
            "research": {"cohort": "pool", "deviceClasses": [{"name": "a100", "guaranteed": "2"}]},
            "legal": {"cohort": "pool", "deviceClasses": [{"name": "a100", "guaranteed": "2"}]},
        }
    )
    replay.step({"arrive": [{"key": "r1", "tenant": "research", "demand": {"a100": 3}}]})
    decision = replay.step(
        {
            "time": 7,
            "arrive": [{"key": "r2", "tenant": "research", "demand": {"a100": 2}}],
        }
    )
    assert decision.books is not None
    reports = tenant_reports(decision.books, list(replay.workloads.values()))
    research, legal = reports["research"], reports["legal"]
    assert research.resources["a100"] == Standing(2, 3, 1, 0)
    assert legal.resources["a100"] == Standing(2, 0, 0, 1)
    assert (research.admitted, research.waiting) == (1, 1)
    assert research.below_guarantee_since is None  # it holds more than its guarantee
    assert cohort_idle(decision.books) == {"pool": {"a100": 1}}
    decision = replay.step(
        {"time": 9, "arrive": [{"key": "l1", "tenant": "legal", "demand": {"a100": 2}}]}
    )
    assert decision.books is not None
    assert [e.victim.key for e in decision.evictions] == ["r1"]
    reports = tenant_reports(decision.books, list(replay.workloads.values()))
    assert reports["legal"].below_guarantee_since == 9.0
