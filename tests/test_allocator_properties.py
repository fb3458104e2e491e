"""Properties of the allocator on small random fleets (hypothesis, derandomized).

- success agrees with an exhaustive search over all device assignments;
- every allocation satisfies its selectors and constraints, never hands an exclusive
  device out twice and never overdraws a shared counter.

Counters and constraints are generated together: since v0.36.3 upstream releases the
counters of a device a constraint rejects (before, ledger 5.15.3, it could fail where a
solution exists), and allot follows it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from allot.allocator import Allocator
from allot.api import resource_v1 as resourceapi
from tests.allocator_cases import device_class, node, resource_slice

COLORS = ["red", "blue"]


@dataclass
class Fleet:
    devices: list[dict[str, Any]]
    requests: list[tuple[str | None, int]]  # (required color or None, count)
    match_numa: bool
    memory: int | None  # shared counter capacity, or None for no counters


@st.composite
def fleets(draw: st.DrawFn) -> Fleet:
    use_counters = draw(st.booleans())
    count = draw(st.integers(1, 5))
    devices = []
    for index in range(count):
        device: dict[str, Any] = {
            "name": f"device-{index}",
            "attributes": {
                "color": {"string": draw(st.sampled_from(COLORS))},
                "numa": {"int": draw(st.integers(0, 1))},
            },
        }
        if use_counters:
            device["consumesCounters"] = [
                {
                    "counterSet": "set",
                    "counters": {"memory": {"value": str(draw(st.integers(1, 3)))}},
                }
            ]
        devices.append(device)
    requests = draw(
        st.lists(
            st.tuples(st.sampled_from([None, *COLORS]), st.integers(1, 2)), min_size=1, max_size=2
        )
    )
    return Fleet(
        devices,
        requests,
        match_numa=draw(st.booleans()),
        memory=draw(st.integers(1, 6)) if use_counters else None,
    )


def _objects(fleet: Fleet) -> tuple[list[resourceapi.ResourceSlice], resourceapi.ResourceClaim]:
    slices = [
        resource_slice(
            {"name": "slice-1", "count": 2 if fleet.memory else 1, "devices": fleet.devices}
        )
    ]
    if fleet.memory is not None:
        slices.append(
            resource_slice(
                {
                    "name": "slice-0",
                    "count": 2,
                    "sharedCounters": [
                        {"name": "set", "counters": {"memory": {"value": str(fleet.memory)}}}
                    ],
                }
            )
        )
    requests = []
    for index, (color, count) in enumerate(fleet.requests):
        exact: dict[str, Any] = {"deviceClassName": "class-a", "count": count}
        if color is not None:
            exact["selectors"] = [
                {"cel": {"expression": f'device.attributes["driver-a"].color == "{color}"'}}
            ]
        requests.append({"name": f"req-{index}", "exactly": exact})
    devices: dict[str, Any] = {"requests": requests}
    if fleet.match_numa:
        devices["constraints"] = [{"matchAttribute": "driver-a/numa"}]
    claim = resourceapi.ResourceClaim.model_validate(
        {"metadata": {"name": "claim-0"}, "spec": {"devices": devices}}
    )
    return slices, claim


def _eligible(fleet: Fleet, color: str | None) -> list[int]:
    return [
        i
        for i, d in enumerate(fleet.devices)
        if color is None or d["attributes"]["color"]["string"] == color
    ]


def _memory(fleet: Fleet, chosen: list[int]) -> int:
    return (
        sum(
            int(fleet.devices[i]["consumesCounters"][0]["counters"]["memory"]["value"])
            for i in chosen
        )
        if fleet.memory is not None
        else 0
    )


def _valid(fleet: Fleet, chosen: list[int]) -> bool:
    if len(set(chosen)) != len(chosen):
        return False
    if (
        fleet.match_numa
        and len({fleet.devices[i]["attributes"]["numa"]["int"] for i in chosen}) > 1
    ):
        return False
    return fleet.memory is None or _memory(fleet, chosen) <= fleet.memory


def exhaustive_fits(fleet: Fleet) -> bool:
    options = [
        list(itertools.combinations(_eligible(fleet, color), count))
        for color, count in fleet.requests
    ]
    for assignment in itertools.product(*options):
        if _valid(fleet, [i for group in assignment for i in group]):
            return True
    return False


@given(fleets())
def test_success_agrees_with_exhaustive_search(fleet: Fleet) -> None:
    slices, claim = _objects(fleet)
    allocator = Allocator(slices, [device_class("class-a", "driver-a")])
    results = allocator.allocate(node("node-1"), [claim])
    assert (results is not None) == exhaustive_fits(fleet)
    if results is None:
        return
    rows = (results[0].devices.results if results[0].devices else None) or []
    chosen = [int((row.device or "").rsplit("-", 1)[1]) for row in rows]
    assert _valid(fleet, chosen)
    for row, index in zip(rows, chosen, strict=True):
        request = int((row.request or "").split("-")[1])
        assert index in _eligible(fleet, fleet.requests[request][0])
    assert [r.request for r in rows] == [
        f"req-{i}" for i, (_, count) in enumerate(fleet.requests) for _ in range(count)
    ]
