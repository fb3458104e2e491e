"""The disruption controller keeps a PodDisruptionBudget's status as upstream's does: the
figures of ``tests/scenarios/disruption-budgets.yaml`` (shared with the eviction tests),
written through the status subresource with the ``DisruptionAllowed`` condition, only when
they change, failing safe when the expected count cannot be worked out, and with
upstream's Events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from allot.controllers.disruption import DisruptionController, go_label_selector
from allot.registry import disruption
from allot.store import WatchEvent
from allot.types import Obj, rfc3339
from tests.batch_harness import Bench, key_of
from tests.test_disruption_budgets import SCENARIOS, _budget, _finder, _pod

WITH_STATUS = [c for c in SCENARIOS if "status" in c]


@pytest.mark.parametrize("case", WITH_STATUS, ids=[c["name"] for c in WITH_STATUS])
def test_the_figures_of_each_scenario(case: dict[str, Any]) -> None:
    pods = [_pod(p) for p in case["pods"]]
    budget = _budget(case["budgets"][0])
    figures = disruption.budget_status(budget, pods, _finder(case.get("controllers", {})))
    expected = case["status"]
    if "failure" in expected:
        assert (figures.failure, figures.allowed) == (expected["failure"], 0)
        return
    assert figures.failure is None
    assert (figures.expected, figures.desired, figures.healthy, figures.allowed) == (
        expected["expected"], expected["desired"], expected["healthy"], expected["allowed"]
    )  # fmt: skip
    assert list(figures.unmanaged) == expected.get("unmanaged", [])


def _replica_set(bench: Bench, replicas: int) -> Obj:
    return bench.context.create(
        "ReplicaSet",
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                },
            },
        },
        "test",
    )


def _running(bench: Bench, name: str, owner: Obj | None, ready: bool = True) -> Obj:
    metadata: Obj = {"name": name, "namespace": "default", "labels": {"app": "web"}}
    if owner is not None:
        metadata["ownerReferences"] = [
            {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
             "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
             "controller": True}
        ]  # fmt: skip
    pod = bench.context.create(
        "Pod",
        {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
         "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
        "test",
    )  # fmt: skip
    return _set_ready(bench, pod, ready)


def _set_ready(bench: Bench, pod: Obj, ready: bool) -> Obj:
    pod["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    return bench.context.update_status("Pod", pod, "test")


def _budget_obj(bench: Bench, spec: Obj) -> Obj:
    return bench.context.create(
        "PodDisruptionBudget",
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": {"name": "web", "namespace": "default"},
         "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}},
        "test",
    )  # fmt: skip


def _events(bench: Bench) -> list[tuple[str, str, str]]:
    return [
        (e["type"], e["reason"], e["message"])
        for e in bench.context.list("Event", "default")
        if e["involvedObject"]["kind"] == "PodDisruptionBudget"
    ]


def test_the_status_follows_the_pods(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    controller = DisruptionController(bench.contexts("disruption-controller"))
    owner = _replica_set(bench, 3)
    pods = [_running(bench, f"web-{i}", owner) for i in range(3)]
    budget = _budget_obj(bench, {"maxUnavailable": 1})
    controller.reconcile(key_of(budget))
    first = bench.context.get("PodDisruptionBudget", "default", "web")
    assert first is not None
    created_at = rfc3339(bench.clock())
    assert first["status"] == {
        "currentHealthy": 3,
        "desiredHealthy": 2,
        "disruptionsAllowed": 1,
        "expectedPods": 3,
        "observedGeneration": 1,
        "conditions": [
            {"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
             "message": "", "observedGeneration": 1, "lastTransitionTime": created_at}
        ],
    }  # fmt: skip
    bench.clock.advance(5)
    controller.reconcile(key_of(budget))  # nothing changed: nothing written
    again = bench.context.get("PodDisruptionBudget", "default", "web")
    assert again is not None
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    unready = _set_ready(bench, pods[0], False)
    event = WatchEvent("MODIFIED", 1, "host", "pods", unready)
    assert controller.keys_for(event) == [key_of(budget)]
    controller.reconcile(key_of(budget))
    after = bench.context.get("PodDisruptionBudget", "default", "web")
    assert after is not None
    assert (after["status"]["currentHealthy"], after["status"]["disruptionsAllowed"]) == (2, 0)
    condition = after["status"]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "InsufficientPods")
    assert condition["lastTransitionTime"] == rfc3339(bench.clock())
    assert _events(bench) == []
    bench.close()


def test_a_pod_that_leaves_the_selector_resyncs_its_old_budget(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    controller = DisruptionController(bench.contexts("disruption-controller"))
    budget = _budget_obj(bench, {"minAvailable": 1})
    pod = _running(bench, "web-0", None)
    moved = {**pod, "metadata": {**pod["metadata"], "labels": {"app": "db"}}}
    event = WatchEvent("MODIFIED", 1, "host", "pods", moved, previous=pod)
    assert controller.keys_for(event) == [key_of(budget)]
    assert controller.keys_for(WatchEvent("MODIFIED", 1, "host", "pods", moved)) == []
    bench.close()


def test_unmanaged_pods_are_left_out_with_a_warning(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    controller = DisruptionController(bench.contexts("disruption-controller"))
    budget = _budget_obj(bench, {"maxUnavailable": "50%"})
    controller.reconcile(key_of(budget))
    _running(bench, "bare", None)
    controller.reconcile(key_of(budget))
    stored = bench.context.get("PodDisruptionBudget", "default", "web")
    assert stored is not None
    assert stored["status"]["expectedPods"] == 0
    assert stored["status"]["currentHealthy"] == 1
    assert stored["status"]["disruptionsAllowed"] == 0
    selector = "&LabelSelector{MatchLabels:map[string]string{app: web,},"
    selector += "MatchExpressions:[]LabelSelectorRequirement{},}"
    assert _events(bench) == [
        ("Normal", "NoPods", "No matching pods found"),
        (
            "Warning",
            "UnmanagedPods",
            f"Pods selected by this PodDisruptionBudget (selector: {selector}) were found to "
            "be unmanaged. As a result, the status of the PDB cannot be calculated correctly, "
            "which may result in undefined behavior. To account for these pods please set "
            '".spec.minAvailable" field of the PDB to an integer value.',
        ),
    ]
    bench.close()


def test_a_count_that_cannot_be_worked_out_fails_safe(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    controller = DisruptionController(bench.contexts("disruption-controller"))
    owner = _replica_set(bench, 2)
    _running(bench, "web-0", owner)
    _running(bench, "web-1", owner)
    budget = _budget_obj(bench, {"minAvailable": "50%"})
    controller.reconcile(key_of(budget))
    job_owner = {"apiVersion": "batch/v1", "kind": "Job",
                 "metadata": {"name": "batch", "uid": "uid-batch"}}  # fmt: skip
    _running(bench, "batch-x", job_owner)
    bench.clock.advance(1)
    controller.reconcile(key_of(budget))
    stored = bench.context.get("PodDisruptionBudget", "default", "web")
    assert stored is not None
    status = stored["status"]
    assert (status["disruptionsAllowed"], status["expectedPods"], status["desiredHealthy"]) == (
        0,
        2,
        1,
    )  # fmt: skip  (the other figures are kept, as failSafe keeps them)
    condition = status["conditions"][0]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False", "SyncFailed", 'found no controllers for pod "batch-x"'
    )  # fmt: skip
    assert _events(bench)[-1] == (
        "Warning",
        "CalculateExpectedPodCountFailed",
        'Failed to calculate the number of expected pods: found no controllers for pod "batch-x"',
    )
    bench.close()


@pytest.mark.parametrize(
    ("selector", "printed"),
    [
        (None, "nil"),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:"
            "[]LabelSelectorRequirement{LabelSelectorRequirement{Key:tier,Operator:In,"
            "Values:[a b],},},}",
        ),
    ],
)
def test_selectors_print_as_go_prints_them(selector: Obj | None, printed: str) -> None:
    assert go_label_selector(selector) == printed
