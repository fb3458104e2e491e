"""Placement policies: the same node order in the scheduler and in ``allot simulate``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from allot.allocator.placement import UnknownPlacementError, check_placement, order_nodes
from allot.api import core_v1 as corev1
from allot.simulation.runner import Simulation
from allot.simulation.scenario import parse_scenario

SCENARIO = Path(__file__).parent / "scenarios" / "placement.yaml"


def _node(name: str) -> corev1.Node:
    return corev1.Node.model_validate({"metadata": {"name": name}})


@pytest.mark.parametrize(("placement", "node"), [("first-fit", "node-a"), ("pack", "node-b")])
def test_second_claim_goes_where_the_policy_says(placement: str, node: str) -> None:
    scenario = parse_scenario(yaml.safe_load(SCENARIO.read_text()))
    first, second = Simulation(scenario, placement=placement).run()
    assert first.node == "node-b"
    assert second.node == node


def test_pack_orders_by_free_devices_then_name() -> None:
    free = {"a": 3, "b": 1, "c": 1, "d": 0}
    nodes = [_node(n) for n in ("c", "a", "d", "b")]
    ordered = order_nodes(nodes, "pack", lambda n: free[n.metadata.name or ""])
    assert [n.metadata.name for n in ordered] == ["d", "b", "c", "a"]
    assert [n.metadata.name for n in order_nodes(nodes, "first-fit", lambda n: 0)] == [
        "a",
        "b",
        "c",
        "d",
    ]


def test_unknown_placement_is_refused() -> None:
    with pytest.raises(UnknownPlacementError, match="unknown placement 'spread'"):
        check_placement("spread")


def test_a_pod_whose_claims_are_allocated_fits_a_full_node() -> None:
    scenario = yaml.safe_load((SCENARIO.parent / "allocated-claims.yaml").read_text())
    first, second, third = Simulation(parse_scenario(scenario)).run()
    assert (first.node, second.node) == ("node-a", "node-a")
    assert second.success
    assert second.results == []  # nothing new was allocated
    assert not third.success  # a claim still to allocate meets the full node
    assert third.error == (
        "0/2 nodes are available: 1 cannot allocate all claims, "
        "1 resourceclaim not available on the node."
    )
