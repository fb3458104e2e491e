"""``POST pods/<name>/binding`` refusals, worded as the API server's binding storage: a
pod already assigned to a node, and a pod that still has scheduling gates."""

from __future__ import annotations

import pytest

from allot.controllers.context import ControllerContext
from allot.registry import HOST_CLUSTER
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.store.errors import Conflict

BINDING = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
           "target": {"kind": "Node", "name": "node-a"}}  # fmt: skip


def test_a_gated_pod_and_a_bound_pod_cannot_be_bound(team_context: ControllerContext) -> None:
    context = team_context
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "team"},
           "spec": {"schedulingGates": [{"name": "example.com/wait"}],
                    "containers": [{"name": "main", "image": "busybox"}]}}  # fmt: skip
    context.create("Pod", pod, "test")
    target = Target(by_kind("Pod"), "team", "p", "binding")
    with pytest.raises(Conflict) as gated:
        context.handlers.bind(HOST_CLUSTER, target, BINDING)
    assert str(gated.value) == (
        'Operation cannot be fulfilled on pods/binding "p": pod p has non-empty '
        ".spec.schedulingGates"
    )
    stored = context.get("Pod", "team", "p")
    assert stored is not None
    del stored["spec"]["schedulingGates"]
    context.update("Pod", stored, "test")
    context.handlers.bind(HOST_CLUSTER, target, BINDING)
    with pytest.raises(Conflict) as bound:
        context.handlers.bind(HOST_CLUSTER, target, BINDING)
    assert str(bound.value) == (
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned '
        'to node "node-a"'
    )
