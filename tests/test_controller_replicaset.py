"""The ReplicaSet controller: the deletion ranking (tests/scenarios/replicasets.yaml),
adoption and release by selector, status, and a refused pod creation reported as
upstream's FailedCreate Event and ReplicaFailure condition."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from allot.controllers.context import ControllerContext
from allot.controllers.podranking import pods_to_delete, ranked
from allot.controllers.replicaset import ReplicaSetController
from allot.controllers.workloads import ClusterContexts, WorkloadKey
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.types import Obj, rfc3339
from tests.apps_driver import NAMESPACE, AppsDriver
from tests.conftest import load_scenarios

RANKINGS = load_scenarios("replicasets.yaml")
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _at(seconds: int) -> str:
    return rfc3339(EPOCH + dt.timedelta(seconds=seconds))


def _pod(spec: dict[str, Any]) -> Obj:
    metadata: Obj = {"name": spec["name"], "creationTimestamp": _at(spec.get("created", 0))}
    if "uid" in spec:
        metadata["uid"] = spec["uid"]
    if "cost" in spec:
        metadata["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": str(spec["cost"])}
    status: Obj = {"phase": spec["phase"]}
    if spec.get("ready"):
        status["conditions"] = [
            {"type": "Ready", "status": "True", "lastTransitionTime": _at(spec["readySince"])}
        ]
    if spec.get("restarts"):
        status["containerStatuses"] = [{"name": "c", "restartCount": spec["restarts"]}]
    return {"metadata": metadata, "spec": {"nodeName": spec.get("node")}, "status": status}


@pytest.mark.parametrize("case", RANKINGS, ids=[c["name"] for c in RANKINGS])
def test_deletion_order(case: dict[str, Any]) -> None:
    pods = [_pod(p) for p in case["pods"]]
    related = pods + [
        _pod({"name": f"sibling-{node}", "node": node, "phase": "Running"})
        for node in case.get("related") or []
    ]
    now = EPOCH + dt.timedelta(seconds=100)
    order = ranked(pods, now, related)
    assert [p["metadata"]["name"] for p in order] == case["order"]
    first = pods_to_delete(pods, 1, now, related)
    assert [p["metadata"]["name"] for p in first] == case["order"][:1]


def _replicaset(replicas: int, min_ready: int = 0) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "minReadySeconds": min_ready,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web", "tier": "front"}},
                "spec": {"containers": [{"name": "web", "image": "v1"}]},
            },
        },
    }


def _orphan(name: str, labels: dict[str, str]) -> Obj:
    return {
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {"containers": [{"name": "web", "image": "v1"}]},
    }


def test_adopts_orphans_and_releases_pods_that_stop_matching(tmp_path: Path) -> None:
    driver = AppsDriver(tmp_path)
    try:
        driver.context.create("Pod", _orphan("stray", {"app": "web"}), "test")
        driver.context.create("Pod", _orphan("other", {"app": "db"}), "test")
        rs = driver.context.create("ReplicaSet", _replicaset(2), "test")
        driver.settle()
        owned = {
            p["metadata"]["name"]
            for p in driver.pods()
            if (p["metadata"].get("ownerReferences") or [{}])[0].get("uid") == rs["metadata"]["uid"]
        }
        assert "stray" in owned
        assert "other" not in owned
        assert len(owned) == 2
        stray = driver.context.get("Pod", NAMESPACE, "stray")
        assert stray is not None
        stray["metadata"]["labels"] = {"app": "elsewhere"}
        driver.context.update("Pod", stray, "test")
        driver.settle()
        released = driver.context.get("Pod", NAMESPACE, "stray")
        assert released is not None
        assert "ownerReferences" not in released["metadata"]
        web = [p for p in driver.pods() if p["metadata"]["labels"].get("app") == "web"]
        assert len(web) == 2  # a replacement was made
    finally:
        driver.close()


def test_status_counts_labelled_ready_and_available(tmp_path: Path) -> None:
    driver = AppsDriver(tmp_path)
    try:
        driver.context.create("Pod", _orphan("stray", {"app": "web"}), "test")
        driver.context.create("ReplicaSet", _replicaset(3, min_ready=10), "test")
        driver.settle()
        driver.make_ready(2)
        driver.settle()
        status = (driver.context.get("ReplicaSet", NAMESPACE, "web") or {})["status"]
        assert status == {
            "replicas": 3,
            "fullyLabeledReplicas": 2,
            "readyReplicas": 2,
            "observedGeneration": 1,
            "terminatingReplicas": 0,
        }
        driver.advance(11)
        driver.settle()
        status = (driver.context.get("ReplicaSet", NAMESPACE, "web") or {})["status"]
        assert status["availableReplicas"] == 2
    finally:
        driver.close()


def test_a_refused_creation_is_a_failed_create_event_and_condition(tmp_path: Path) -> None:
    driver = AppsDriver(tmp_path)
    try:
        driver.registry.assemble(driver.registry.standard_plugins())
        quota = {"metadata": {"name": "q", "namespace": NAMESPACE}, "spec": {"hard": {"pods": "2"}}}
        driver.context.create("ResourceQuota", quota, "test")
        driver.context.create("ReplicaSet", _replicaset(3), "test")
        driver.settle()
        assert len(driver.pods()) == 2
        rs = driver.context.get("ReplicaSet", NAMESPACE, "web")
        assert rs is not None
        failure = next(c for c in rs["status"]["conditions"] if c["type"] == "ReplicaFailure")
        assert failure["reason"] == "FailedCreate"
        assert "exceeded quota: q" in failure["message"]
        messages = driver.event_messages("web")
        refused = [m for m in messages if m.startswith("Error creating: ")]
        assert refused
        assert refused[0] == f"Error creating: {failure['message']}"
        rs["spec"]["replicas"] = 2
        driver.context.update("ReplicaSet", rs, "test")
        driver.settle()
        rs = driver.context.get("ReplicaSet", NAMESPACE, "web")
        assert rs is not None
        assert "conditions" not in rs["status"]
    finally:
        driver.close()


def test_a_removed_tenant_cluster_is_forgotten(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    tenants = {"legal-ai"}
    host = ControllerContext(HOST_CLUSTER, registry.store, registry.handlers, registry.clock)
    contexts = ClusterContexts(host, "replicaset-controller", lambda c: c in tenants)
    controller = ReplicaSetController(contexts)
    before = contexts("legal-ai")
    tenants.clear()
    controller.reconcile(WorkloadKey("legal-ai", NAMESPACE, "web"))
    assert contexts("legal-ai") is not before  # the old context was dropped
    registry.close()
