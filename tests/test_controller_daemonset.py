"""The daemon set controller step by step on a fake clock (tests/scenarios/daemonsets.yaml):
node selection by selector, affinity, taints and tolerations; rolling updates with
maxUnavailable and maxSurge, OnDelete; failed pods; status counts; driven against a real
Registry by tests/apps_driver.py, on the host and in a tenant cluster. Also the pods'
tolerations and node pinning, the template generation, and the ReplicationController run by
the ReplicaSet controller."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from allot.controllers.daemonset import target_node
from allot.registry import HOST_CLUSTER
from allot.types import Obj
from tests.apps_driver import NAMESPACE, AppsDriver, image_of, subset
from tests.conftest import load_scenarios

DAEMONSETS = load_scenarios("daemonsets.yaml")
TENANT = "legal-ai"


def _template(image: str, pod: dict[str, Any]) -> Obj:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {**pod, "containers": [{"name": "web", "image": image}]},
    }


def _daemonset(spec: dict[str, Any], pod: dict[str, Any]) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {
            **spec,
            "selector": {"matchLabels": {"app": "web"}},
            "template": _template("v1", pod),
        },
    }


def _put_node(driver: AppsDriver, node: dict[str, Any]) -> None:
    current = driver.context.get("Node", "", node["name"])
    obj = current or {"metadata": {"name": node["name"]}}
    if "labels" in node:
        obj["metadata"]["labels"] = node["labels"]
    spec = obj.setdefault("spec", {})
    for key in ("taints", "unschedulable"):
        if key in node:
            spec[key] = node[key]
    if current is None:
        driver.context.create("Node", obj, "test")
    else:
        driver.context.update("Node", obj, "test")


def _on_node(driver: AppsDriver, node: str) -> list[Obj]:
    return [p for p in driver.pods() if target_node(p) == node]


def _make_ready(driver: AppsDriver, nodes: list[str] | str) -> None:
    """As the scheduler and the kubelet would: bind each waiting pod to the node it is
    pinned to, then make it Running and Ready."""
    for pod in driver.pods():
        node = target_node(pod)
        if pod["metadata"].get("deletionTimestamp") or (nodes != "all" and node not in nodes):
            continue
        if any(c.get("type") == "Ready" for c in (pod.get("status") or {}).get("conditions") or []):
            continue
        if not (pod.get("spec") or {}).get("nodeName"):
            assert node is not None
            driver.context.bind(NAMESPACE, pod["metadata"]["name"], node)
        driver.set_phase(pod, "Running", ready=True)


def _apply_step(driver: AppsDriver, step: dict[str, Any], pod: dict[str, Any]) -> None:
    if "node" in step:
        _put_node(driver, step["node"])
    if "remove_node" in step:
        driver.context.delete("Node", "", step["remove_node"])
    if "ready" in step:
        _make_ready(driver, step["ready"])
    if "fail" in step:
        driver.set_phase(_on_node(driver, step["fail"])[0], "Failed", ready=False)
    if "delete" in step:
        driver.context.delete(
            "Pod", NAMESPACE, _on_node(driver, step["delete"])[0]["metadata"]["name"]
        )
    if "orphan" in step:  # a matching pod nobody controls, bound to the node
        orphan = {
            "metadata": {"name": "stray", "namespace": NAMESPACE, "labels": {"app": "web"}},
            "spec": {"nodeName": step["orphan"], "containers": [{"name": "web", "image": "v0"}]},
        }
        driver.context.create("Pod", orphan, "test")
    if "advance" in step:
        driver.advance(step["advance"])
    if step.get("terminate"):
        driver.finish_terminating()
    if "image" in step:
        daemonset = driver.context.get("DaemonSet", NAMESPACE, "web")
        assert daemonset is not None
        daemonset["spec"]["template"] = _template(step["image"], pod)
        driver.context.update("DaemonSet", daemonset, "kubectl")
    driver.settle()


def _check(driver: AppsDriver, expect: dict[str, Any]) -> None:
    pods = sorted(driver.pods(), key=lambda p: (p["metadata"]["creationTimestamp"], image_of(p)))
    daemonset = driver.context.get("DaemonSet", NAMESPACE, "web")
    assert daemonset is not None
    if "pods" in expect:
        live: dict[str, list[str]] = {}
        for pod in pods:
            if not pod["metadata"].get("deletionTimestamp"):
                live.setdefault(str(target_node(pod)), []).append(image_of(pod))
        assert {node: ",".join(images) for node, images in live.items()} == expect["pods"]
    if "terminating" in expect:
        terminating = sorted(
            str(target_node(p)) for p in pods if p["metadata"].get("deletionTimestamp")
        )
        assert terminating == expect["terminating"]
    if "status" in expect:
        status = daemonset.get("status") or {}
        assert subset(status, expect["status"]) == expect["status"]
        assert status["observedGeneration"] == daemonset["metadata"]["generation"]
    if "revisions" in expect:
        assert len(driver.context.list("ControllerRevision", NAMESPACE)) == expect["revisions"]
    messages = driver.event_messages("web")
    for pattern in expect.get("events") or []:
        assert any(re.fullmatch(pattern, m) for m in messages), (pattern, messages)
    for pattern in expect.get("absent") or []:
        assert not any(re.fullmatch(pattern, m) for m in messages), (pattern, messages)


@pytest.mark.parametrize("scenario", DAEMONSETS, ids=[s["name"] for s in DAEMONSETS])
def test_daemonset(tmp_path: Path, scenario: dict[str, Any]) -> None:
    _run(tmp_path, scenario, HOST_CLUSTER)


def test_daemonset_in_a_tenant_cluster(tmp_path: Path) -> None:
    """The controller serves tenant clusters alike (their nodes are the host nodes the
    tenant sees, mirrored by the sync)."""
    rolling = next(s for s in DAEMONSETS if s["name"].startswith("a rolling update"))
    _run(tmp_path, rolling, TENANT)


def _run(tmp_path: Path, scenario: dict[str, Any], cluster: str) -> None:
    driver = AppsDriver(tmp_path, cluster, graceful=scenario.get("graceful", False))
    pod = scenario.get("pod") or {}
    try:
        for node in scenario["nodes"]:
            _put_node(driver, node)
        daemonset = _daemonset(scenario.get("daemonset") or {}, pod)
        driver.context.create("DaemonSet", daemonset, "kubectl")
        driver.settle()
        for step in scenario["steps"]:
            _apply_step(driver, step, pod)
            _check(driver, step.get("expect") or {})
    finally:
        driver.close()


def test_daemon_pods_tolerate_node_conditions_and_are_pinned(tmp_path: Path) -> None:
    """Every daemon pod gets upstream's tolerations (a toleration the template already
    has is not repeated), the hash and generation labels, and required node affinity on
    its node's name in place of the template's; the template generation counts template
    changes only."""
    driver = AppsDriver(tmp_path)
    try:
        _put_node(driver, {"name": "node-a"})
        pod = {
            "hostNetwork": True,
            "tolerations": [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}
                        ]
                    }
                }
            },
        }
        driver.context.create("DaemonSet", _daemonset({}, pod), "kubectl")
        driver.settle()
        (created,) = driver.pods()
        keys = [(t["key"], t["effect"]) for t in created["spec"]["tolerations"]]
        assert keys == [
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/network-unavailable", "NoSchedule"),
        ]
        required = created["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert required == {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}
            ]
        }
        labels = created["metadata"]["labels"]
        (revision,) = driver.context.list("ControllerRevision", NAMESPACE)
        assert (
            labels["controller-revision-hash"]
            == revision["metadata"]["labels"]["controller-revision-hash"]
        )
        assert revision["metadata"]["name"] == f"web-{labels['controller-revision-hash']}"
        assert labels["pod-template-generation"] == "1"
        daemonset = driver.context.get("DaemonSet", NAMESPACE, "web")
        assert daemonset is not None
        daemonset["spec"]["minReadySeconds"] = 5  # not the template: the generation stays
        daemonset = driver.context.update("DaemonSet", daemonset, "kubectl")
        annotations = daemonset["metadata"]["annotations"]
        assert annotations["deprecated.daemonset.template.generation"] == "1"
        daemonset["spec"]["template"]["spec"]["containers"][0]["image"] = "v2"
        daemonset = driver.context.update("DaemonSet", daemonset, "kubectl")
        annotations = daemonset["metadata"]["annotations"]
        assert annotations["deprecated.daemonset.template.generation"] == "2"
    finally:
        driver.close()


def test_replication_controller_keeps_its_replicas(tmp_path: Path) -> None:
    """A ReplicationController (selector and labels defaulted from its template) gets its
    pods from the ReplicaSet controller's logic, adopts a matching orphan, and counts them
    in its own status (no terminatingReplicas)."""
    driver = AppsDriver(tmp_path)
    try:
        orphan = {
            "metadata": {"name": "stray", "namespace": NAMESPACE, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "v1"}]},
        }
        driver.context.create("Pod", orphan, "test")
        controller = {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": "web", "namespace": NAMESPACE},
            "spec": {"replicas": 3, "template": _template("v1", {})},
        }
        created = driver.context.create("ReplicationController", controller, "kubectl")
        assert created["spec"]["selector"] == {"app": "web"}
        assert created["metadata"]["labels"] == {"app": "web"}
        driver.settle()
        pods = driver.pods()
        assert len(pods) == 3
        assert all(
            p["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController" for p in pods
        )
        assert "stray" in {p["metadata"]["name"] for p in pods}
        driver.make_ready("all")
        driver.settle()
        stored = driver.context.get("ReplicationController", NAMESPACE, "web")
        assert stored is not None
        assert stored["status"] == {
            "replicas": 3,
            "fullyLabeledReplicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "observedGeneration": 1,
        }
        stored["spec"]["replicas"] = 1
        driver.context.update("ReplicationController", stored, "kubectl")
        driver.settle()
        assert len(driver.pods()) == 1
        assert any(m.startswith("Deleted pod: ") for m in driver.event_messages("web"))
    finally:
        driver.close()
