"""The apps controllers step by step on a fake clock: Deployment rollouts
(tests/scenarios/deployments.yaml) and StatefulSet ordering (statefulsets.yaml), driven
against a real Registry by tests/apps_driver.py, on the host and in a tenant cluster."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from allot.controllers import rollout
from allot.controllers.runtime import RetryLater
from allot.registry import HOST_CLUSTER
from allot.types import Obj
from tests.apps_driver import NAMESPACE, AppsDriver, image_of, pods_by_image, subset
from tests.conftest import load_scenarios

DEPLOYMENTS = load_scenarios("deployments.yaml")
CLUSTERS = [HOST_CLUSTER, "legal-ai"]


def _template(image: str) -> Obj:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": image}]},
    }


def _deployment(spec: dict[str, Any]) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {**spec, "selector": {"matchLabels": {"app": "web"}}, "template": _template("v1")},
    }


def _sets(driver: AppsDriver) -> dict[str, Obj]:
    """The ReplicaSets by image (one per image: a second one is a failure)."""
    sets = driver.context.list("ReplicaSet", NAMESPACE)
    by_image = {image_of(rs["spec"]["template"]): rs for rs in sets}
    assert len(by_image) == len(sets), "two ReplicaSets for one template"
    return by_image


def _apply_step(driver: AppsDriver, step: dict[str, Any]) -> None:
    if "ready" in step:
        driver.make_ready(step["ready"])
    if step.get("terminate"):
        driver.finish_terminating()
    if "advance" in step:
        driver.advance(step["advance"])
    changes = {k: step[k] for k in ("image", "replicas", "paused", "undo") if k in step}
    if changes:
        deployment = driver.context.get("Deployment", NAMESPACE, "web")
        assert deployment is not None
        spec = deployment["spec"]
        if "image" in changes:
            spec["template"] = _template(changes["image"])
        if "replicas" in changes:
            spec["replicas"] = changes["replicas"]
        if "paused" in changes:
            spec["paused"] = changes["paused"]
        if "undo" in changes:  # kubectl rollout undo: the revision's template, hash removed
            target = next(
                rs
                for rs in driver.context.list("ReplicaSet", NAMESPACE)
                if rollout.revision(rs) == changes["undo"]
            )
            template = rollout.without_hash(target["spec"]["template"])
            for container in template["spec"]["containers"]:
                container["resources"] = {}  # as kubectl's Go client sends it
            spec["template"] = template
        driver.context.update("Deployment", deployment, "kubectl")
    driver.settle()


def _named(text: str, sets: dict[str, Obj]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: sets[m.group(1)]["metadata"]["name"], text)


def _check(driver: AppsDriver, expect: dict[str, Any]) -> None:
    sets = _sets(driver)
    deployment = driver.context.get("Deployment", NAMESPACE, "web")
    assert deployment is not None
    status = deployment.get("status") or {}
    if "sets" in expect:
        assert {image: rs["spec"]["replicas"] for image, rs in sets.items()} == expect["sets"]
    if "pods" in expect:
        assert pods_by_image(driver.pods()) == expect["pods"]
    if "status" in expect:
        assert subset(status, expect["status"]) == expect["status"]
    conditions = {c["type"]: c for c in status.get("conditions") or []}
    for kind, reason in (expect.get("conditions") or {}).items():
        assert conditions[kind]["reason"] == reason
    for kind, message in (expect.get("messages") or {}).items():
        assert conditions[kind]["message"] == _named(message, sets)
    for image, number in (expect.get("revisions") or {}).items():
        assert sets[image]["metadata"]["annotations"][rollout.REVISION] == number
    for image, history in (expect.get("history") or {}).items():
        assert sets[image]["metadata"]["annotations"][rollout.REVISION_HISTORY] == history
    messages = driver.event_messages("web")
    for message in expect.get("events") or []:
        assert _named(message, sets) in messages


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("scenario", DEPLOYMENTS, ids=[s["name"] for s in DEPLOYMENTS])
def test_deployment_rollout(tmp_path: Path, scenario: dict[str, Any], cluster: str) -> None:
    driver = AppsDriver(tmp_path, cluster, graceful=scenario.get("graceful", False))
    try:
        driver.context.create("Deployment", _deployment(scenario["deployment"]), "kubectl")
        driver.settle()
        for step in scenario["steps"]:
            _apply_step(driver, step)
            _check(driver, step.get("expect") or {})
    finally:
        driver.close()


STATEFULSETS = load_scenarios("statefulsets.yaml")


def _statefulset(spec: dict[str, Any]) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {
            **spec,
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": _template("v1"),
        },
    }


def _apply_set_step(driver: AppsDriver, step: dict[str, Any]) -> None:
    if "ready" in step:
        ready = step["ready"]
        driver.make_ready(
            "all" if isinstance(ready, list) else ready, ready if isinstance(ready, list) else None
        )
    if "fail" in step:
        pod = driver.context.get("Pod", NAMESPACE, step["fail"])
        assert pod is not None
        driver.set_phase(pod, "Failed", ready=False)
    if "delete" in step:
        driver.context.delete("Pod", NAMESPACE, step["delete"])
    if "advance" in step:
        driver.advance(step["advance"])
    if "unlabel" in step:
        pod = driver.context.get("Pod", NAMESPACE, step["unlabel"])
        assert pod is not None
        labels = pod["metadata"]["labels"]
        del labels["statefulset.kubernetes.io/pod-name"], labels["apps.kubernetes.io/pod-index"]
        driver.context.update("Pod", pod, "test")
    if step.get("terminate"):
        driver.finish_terminating()
    changes = {k: step[k] for k in ("image", "replicas", "partition") if k in step}
    if changes:
        statefulset = driver.context.get("StatefulSet", NAMESPACE, "web")
        assert statefulset is not None
        spec = statefulset["spec"]
        if "image" in changes:
            spec["template"] = _template(changes["image"])
        if "replicas" in changes:
            spec["replicas"] = changes["replicas"]
        if "partition" in changes:
            spec["updateStrategy"]["rollingUpdate"]["partition"] = changes["partition"]
        driver.context.update("StatefulSet", statefulset, "kubectl")
    driver.settle()


def _check_set(driver: AppsDriver, expect: dict[str, Any]) -> None:
    pods = driver.pods()
    statefulset = driver.context.get("StatefulSet", NAMESPACE, "web")
    assert statefulset is not None
    status = statefulset.get("status") or {}
    live = {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}
    if "pods" in expect:
        assert {name: image_of(p) for name, p in live.items()} == expect["pods"]
    if "terminating" in expect:
        terminating = [
            p["metadata"]["name"] for p in pods if p["metadata"].get("deletionTimestamp")
        ]
        assert terminating == expect["terminating"]
    if "status" in expect:
        assert subset(status, expect["status"]) == expect["status"]
    if "revisions" in expect:
        assert len(driver.context.list("ControllerRevision", NAMESPACE)) == expect["revisions"]
    if "current_is_update" in expect:
        same = status["currentRevision"] == status["updateRevision"]
        assert same == expect["current_is_update"]
    messages = driver.event_messages("web")
    for message in expect.get("events") or []:
        assert message in messages
    for name, pod in live.items():  # every pod carries its identity
        labels = pod["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == name
        assert labels["apps.kubernetes.io/pod-index"] == name.rsplit("-", 1)[1]
        assert labels["controller-revision-hash"].startswith("web-")
        assert pod["spec"]["hostname"] == name
        assert pod["spec"]["subdomain"] == "web"


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("scenario", STATEFULSETS, ids=[s["name"] for s in STATEFULSETS])
def test_statefulset(tmp_path: Path, scenario: dict[str, Any], cluster: str) -> None:
    driver = AppsDriver(tmp_path, cluster, graceful=scenario.get("graceful", False))
    try:
        driver.context.create("StatefulSet", _statefulset(scenario["statefulset"]), "kubectl")
        driver.settle()
        for step in scenario["steps"]:
            _apply_set_step(driver, step)
            _check_set(driver, step.get("expect") or {})
    finally:
        driver.close()


def test_statefulset_refused_pod_is_an_event_and_tried_again(tmp_path: Path) -> None:
    driver = AppsDriver(tmp_path)
    try:
        driver.registry.assemble(driver.registry.standard_plugins())
        quota = {"metadata": {"name": "q", "namespace": NAMESPACE}, "spec": {"hard": {"pods": "1"}}}
        driver.context.create("ResourceQuota", quota, "test")
        spec = {"replicas": 2, "podManagementPolicy": "Parallel"}
        driver.context.create("StatefulSet", _statefulset(spec), "kubectl")
        with pytest.raises(RetryLater):
            driver.settle(strict=True)
        assert [p["metadata"]["name"] for p in driver.pods()] == ["web-0"]
        refused = [m for m in driver.event_messages("web") if "failed error" in m]
        assert refused[0].startswith("create Pod web-1 in StatefulSet web failed error: ")
        assert "exceeded quota: q" in refused[0]
    finally:
        driver.close()


def test_a_refused_new_replica_set_is_a_progressing_failure(tmp_path: Path) -> None:
    driver = AppsDriver(tmp_path)
    try:
        driver.registry.assemble(driver.registry.standard_plugins())
        hard = {"count/replicasets.apps": "1"}
        quota = {"metadata": {"name": "q", "namespace": NAMESPACE}, "spec": {"hard": hard}}
        driver.context.create("ResourceQuota", quota, "test")
        driver.context.create("Deployment", _deployment({"replicas": 1}), "kubectl")
        driver.settle()
        _apply_step(driver, {"image": "v2"})
        deployment = driver.context.get("Deployment", NAMESPACE, "web")
        assert deployment is not None
        progressing = next(
            c for c in deployment["status"]["conditions"] if c["type"] == "Progressing"
        )
        assert progressing["status"] == "False"
        assert progressing["reason"] == "ReplicaSetCreateError"
        assert progressing["message"].startswith('Failed to create new replica set "web-')
        assert "exceeded quota: q" in progressing["message"]
    finally:
        driver.close()
