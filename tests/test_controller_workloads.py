"""The workload controllers' shared pieces: owner references, pods from templates,
the per-cluster contexts and the user a tenant's controller writes as."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from allot.api.pods import is_pod_active, is_pod_ready
from allot.controllers.context import ControllerContext
from allot.controllers.workloads import (
    ClusterContexts,
    WorkloadKey,
    controller_of,
    is_controlled_by,
    owner_key,
    pod_from_template,
    service_account,
)
from allot.registry import HOST_CLUSTER
from allot.registry.admission import CONTROLLER_USER
from allot.registry.clusters import Registry
from allot.store import WatchEvent
from allot.types import Obj

OWNER: Obj = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web-5d4f", "namespace": "team", "uid": "u-1"},
}
TEMPLATE: Obj = {
    "metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"}},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}


def test_pod_from_template_is_controlled_by_its_owner() -> None:
    pod = pod_from_template(OWNER, TEMPLATE, labels={"pod-template-hash": "5d4f"})
    assert pod["metadata"]["generateName"] == "web-5d4f-"
    assert pod["metadata"]["namespace"] == "team"
    assert pod["metadata"]["labels"] == {"app": "web", "pod-template-hash": "5d4f"}
    assert pod["metadata"]["annotations"] == {"a": "1"}
    assert controller_of(pod) == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-5d4f",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert is_controlled_by(pod, OWNER)


def test_pod_from_template_copies_the_spec() -> None:
    pod = pod_from_template(OWNER, TEMPLATE, name="web-0")
    pod["spec"]["containers"][0]["image"] = "changed"
    assert TEMPLATE["spec"]["containers"][0]["image"] == "busybox"
    assert pod["metadata"]["name"] == "web-0"
    assert "generateName" not in pod["metadata"]


def test_owner_key_names_the_controlling_owner_of_its_kind() -> None:
    pod = pod_from_template(OWNER, TEMPLATE, name="web-0")
    event = WatchEvent("ADDED", 1, "legal-ai", "pods", pod)
    assert owner_key(event, "ReplicaSet") == WorkloadKey("legal-ai", "team", "web-5d4f")
    assert owner_key(event, "Job") is None


def test_pod_activity_and_readiness() -> None:
    pod: Obj = {"metadata": {"name": "p"}, "status": {"phase": "Running"}}
    assert is_pod_active(pod)
    assert not is_pod_ready(pod)
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert is_pod_ready(pod)
    pod["status"]["phase"] = "Succeeded"
    assert not is_pod_active(pod)


def test_tenant_clusters_write_as_the_controller_account(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    clock = lambda: dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # noqa: E731
    host = ControllerContext(HOST_CLUSTER, registry.store, registry.handlers, clock)
    contexts = ClusterContexts(host, "replicaset-controller", lambda c: c == "legal-ai")
    assert contexts(HOST_CLUSTER).user == CONTROLLER_USER
    tenant = contexts("legal-ai")
    assert tenant.user == service_account("replicaset-controller")
    assert tenant.user == "system:serviceaccount:kube-system:replicaset-controller"
    assert tenant.cluster == "legal-ai"
    assert contexts("legal-ai") is tenant
    assert contexts.serves("legal-ai")
    assert not contexts.serves("other")
    registry.close()
