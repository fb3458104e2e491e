"""The shared placement (``allot.allocator.scheduling.place``) with its memo chooses what
a plain loop over ``Allocator.allocate`` in policy order chooses (hypothesis, derandomized):
the same node, the same results, the same per-node reasons, pod after pod, on random small
fleets (counters, an invalid pool, ``All`` and admin-access requests, constraints,
freed claims)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from allot.allocator import AllocatedState, AllocationError, Allocator, InvalidPoolsError
from allot.allocator.placement import order_nodes
from allot.allocator.scheduling import (
    CANNOT_ALLOCATE,
    Checks,
    PlacementMemo,
    place,
    scheduler_message,
)
from allot.api import core_v1 as corev1
from allot.api import resource_v1 as resourceapi
from tests.allocator_cases import device_class, resource_slice

COLORS = ["red", "blue"]


@dataclass
class Pod:
    claims: list[resourceapi.ResourceClaim]
    frees: int | None  # before placing it, free the allocations of this earlier pod


@st.composite
def fleets(draw: st.DrawFn) -> list[resourceapi.ResourceSlice]:
    slices = []
    for index in range(draw(st.integers(1, 3))):
        name = f"node-{index}"
        counters = draw(st.booleans())
        devices: list[dict[str, Any]] = []
        for number in range(draw(st.integers(0, 3))):
            device: dict[str, Any] = {
                "name": f"device-{number}",
                "attributes": {
                    "color": {"string": draw(st.sampled_from(COLORS))},
                    "numa": {"int": draw(st.integers(0, 1))},
                },
            }
            if counters:
                memory = str(draw(st.integers(1, 2)))
                device["consumesCounters"] = [
                    {"counterSet": "set", "counters": {"memory": {"value": memory}}}
                ]
            devices.append(device)
        spec: dict[str, Any] = {"name": f"{name}-devices", "node": name, "pool": name}
        spec["devices"] = devices
        if counters:
            spec["count"] = 2
            memory = str(draw(st.integers(1, 3)))
            slices.append(
                resource_slice(
                    {
                        "name": f"{name}-counters",
                        "node": name,
                        "pool": name,
                        "count": 2,
                        "sharedCounters": [
                            {"name": "set", "counters": {"memory": {"value": memory}}}
                        ],
                    }
                )
            )
        slices.append(resource_slice(spec))
        if draw(st.booleans()) and not counters and index == 0:  # an invalid pool
            broken = [{"name": "twin"}, {"name": "twin"}]
            slices.append(
                resource_slice(
                    {"name": f"{name}-broken", "node": name, "pool": "broken", "devices": broken}
                )
            )
    return slices


@st.composite
def claims(draw: st.DrawFn, label: str) -> resourceapi.ResourceClaim:
    requests = []
    for index in range(draw(st.integers(1, 2))):
        exact: dict[str, Any] = {"deviceClassName": "class-a"}
        mode = draw(st.integers(0, 9))
        if mode == 0:
            exact["allocationMode"] = "All"
        else:
            exact["count"] = draw(st.integers(1, 2))
        if mode == 1:
            exact["adminAccess"] = True
        color = draw(st.sampled_from([None, *COLORS]))
        if color is not None:
            expression = f'device.attributes["driver-a"].color == "{color}"'
            exact["selectors"] = [{"cel": {"expression": expression}}]
        requests.append({"name": f"req-{index}", "exactly": exact})
    devices: dict[str, Any] = {"requests": requests}
    if draw(st.booleans()):
        devices["constraints"] = [{"matchAttribute": "driver-a/numa"}]
    return resourceapi.ResourceClaim.model_validate(
        {"metadata": {"name": label, "namespace": "default"}, "spec": {"devices": devices}}
    )


@st.composite
def pods(draw: st.DrawFn) -> list[Pod]:
    result = []
    for index in range(draw(st.integers(1, 8))):
        count = draw(st.integers(1, 2))
        chosen = [draw(claims(f"pod-{index}-claim-{n}")) for n in range(count)]
        frees = draw(st.integers(0, index - 1)) if index and draw(st.integers(0, 4)) == 0 else None
        result.append(Pod(chosen, frees))
    return result


CORDONED = "node(s) were unschedulable"


def _plain(
    claims: list[resourceapi.ResourceClaim],
    nodes: list[corev1.Node],
    allocator: Allocator,
    state: AllocatedState,
    policy: str,
    cordoned: set[str],
) -> tuple[str | None, list[resourceapi.AllocationResult], dict[str, str], str]:
    """(node, results, reasons, error) as trying each node in turn finds them (a cordoned
    node is refused by the node check before its devices are looked at)."""
    reasons = {}
    for node in order_nodes(nodes, policy, lambda n: allocator.free_devices(n, state)):
        name = node.metadata.name or ""
        if name in cordoned:
            reasons[name] = CORDONED
            continue
        try:
            results = allocator.allocate(node, claims, state)
        except InvalidPoolsError as err:
            reasons[name] = str(err)
            continue
        except AllocationError as err:
            return None, [], reasons, str(err)
        if results is None:
            reasons[name] = CANNOT_ALLOCATE
            continue
        return name, results, reasons, ""
    return None, [], reasons, ""


def _state(held: dict[int, list[resourceapi.AllocationResult]]) -> AllocatedState:
    state = AllocatedState()
    for index, results in held.items():
        for number, result in enumerate(results):
            state.add_allocation(f"default/pod-{index}-claim-{number}", result)
    return state


@given(fleets(), pods(), st.sampled_from(["first-fit", "pack"]), st.sets(st.integers(0, 3)))
def test_place_chooses_what_a_plain_loop_chooses(
    slices: list[resourceapi.ResourceSlice], pending: list[Pod], policy: str, off: set[int]
) -> None:
    names = sorted({s.spec.node_name or "" for s in slices})
    nodes = [corev1.Node.model_validate({"metadata": {"name": n}}) for n in names]
    cordoned = {names[i] for i in off if i < len(names)}
    checks = Checks(node=lambda n: CORDONED if n.metadata.name in cordoned else None)
    classes = [device_class("class-a", "driver-a")]
    shared = Allocator(slices, classes, new_share_id=lambda: "share")
    plain = Allocator(slices, classes, new_share_id=lambda: "share")
    memo = PlacementMemo()
    held: dict[int, list[resourceapi.AllocationResult]] = {}
    state, plain_state = AllocatedState(), AllocatedState()
    for index, pod in enumerate(pending):
        if pod.frees is not None and held.pop(pod.frees, None) is not None:
            state, plain_state = _state(held), _state(held)
        node, results, reasons, error = _plain(
            pod.claims, nodes, plain, plain_state, policy, cordoned
        )
        placement = place(pod.claims, nodes, shared, state, policy=policy, memo=memo, checks=checks)
        assert str(placement.error or "") == error
        if error:
            continue
        chosen = placement.node.metadata.name if placement.node else None
        assert (chosen, placement.reasons) == (node, reasons)
        assert [r.to_wire() for r in placement.results] == [r.to_wire() for r in results]
        if node is None:
            assert placement.message == scheduler_message(len(nodes), reasons)
            continue
        held[index] = results
        for number, result in enumerate(results):
            label = f"default/pod-{index}-claim-{number}"
            state.add_allocation(label, result)
            plain_state.add_allocation(label, result)


def test_a_full_node_still_takes_admin_access_and_already_allocated_claims() -> None:
    slices = [resource_slice({"name": "s", "node": "node-0", "devices": [{"name": "gpu"}]})]
    nodes = [corev1.Node.model_validate({"metadata": {"name": "node-0"}})]
    allocator = Allocator(slices, [device_class("class-a", "driver-a")])
    state, memo = AllocatedState(), PlacementMemo()

    def claim(name: str, admin: bool) -> resourceapi.ResourceClaim:
        exact = {"deviceClassName": "class-a", "adminAccess": admin}
        return resourceapi.ResourceClaim.model_validate(
            {
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exact}]}},
            }
        )

    first = claim("first", admin=False)
    taken = place([first], nodes, allocator, state, memo=memo)
    assert taken.node is not None
    state.add_allocation("default/first", taken.results[0])
    first.status = resourceapi.ResourceClaimStatus(allocation=taken.results[0])
    refused = place([claim("second", admin=False)], nodes, allocator, state, memo=memo)
    assert refused.message == "0/1 nodes are available: 1 cannot allocate all claims."
    admin = place([claim("admin", admin=True)], nodes, allocator, state, memo=memo)
    assert admin.node is not None
    assert admin.results[0].devices is not None
    again = place([first], nodes, allocator, state, memo=memo)
    assert (again.node, again.results) == (nodes[0], [])


def test_slices_without_a_name_keep_their_own_device_views() -> None:
    """Slices published with ``generateName`` carry no name: each still has its own views,
    found again by identity (not by scanning every slice, issue 15's 100-node start-up)."""
    device = resourceapi.Device(name="gpu-0")
    nameless = [
        resource_slice({"name": f"s{i}", "node": f"node-{i}", "pool": f"pool-{i}", "devices": []})
        for i in range(3)
    ]
    for slice_ in nameless:
        slice_.metadata.name = None
        slice_.spec.devices = [device]
    allocator = Allocator(nameless, [device_class("class-a", "driver-a")])
    views = [allocator.view(s, device) for s in nameless]
    assert len({id(v) for v in views}) == 3
    assert [allocator.view(s, device) for s in nameless] == views
    allocator.put_slice(nameless[0])  # replaced under the name "" it now has
    assert allocator.view(nameless[1], device) is views[1]
    assert allocator.view(nameless[0], device) is not views[0]  # its views went with it
