"""The allocator against the scenario table ported from upstream's allocator tests."""

from __future__ import annotations

from typing import Any

import pytest

from allot.allocator import AllocationError, Allocator
from tests.allocator_cases import N1_SELECTOR, expand, summarize
from tests.conftest import load_scenarios

SCENARIOS = load_scenarios("allocator.yaml")


@pytest.mark.parametrize("raw", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_allocator_scenario(raw: dict[str, Any]) -> None:
    case = expand(raw)
    before = [c.to_wire() for c in case.claims] + [s.to_wire() for s in case.slices]
    allocator = Allocator(case.slices, case.classes, features=case.features)
    expect = case.expect
    if "error" in expect:
        with pytest.raises(AllocationError) as caught:
            allocator.allocate(case.node, case.claims, case.state)
        assert expect["error"] in str(caught.value)
        return
    results = allocator.allocate(case.node, case.claims, case.state)
    assert [c.to_wire() for c in case.claims] + [s.to_wire() for s in case.slices] == before
    if "invocations" in expect:
        assert allocator.stats.allocate_one_invocations == expect["invocations"]
    if expect.get("nil"):
        assert results is None
        return
    assert results is not None
    by_claim = {c.metadata.name: r for c, r in zip(case.claims, results, strict=True)}
    if "results" in expect:
        assert {name: summarize(r) for name, r in by_claim.items()} == expect["results"]
    if "resultCount" in expect:
        for name, count in expect["resultCount"].items():
            assert len(summarize(by_claim[name])) == count
    if "resultDevices" in expect:
        for name, devices in expect["resultDevices"].items():
            assert [row[1].rsplit("/", 1)[1] for row in summarize(by_claim[name])] == devices
    if "nodeSelector" in expect:
        wanted = N1_SELECTOR if expect["nodeSelector"] == "N1" else expect["nodeSelector"]
        for result in results:
            selector = result.node_selector.to_wire() if result.node_selector else None
            assert selector == wanted
    if "config" in expect:
        first = results[0]
        assert first.devices is not None
        assert [c.to_wire() for c in first.devices.config or []] == expect["config"]
