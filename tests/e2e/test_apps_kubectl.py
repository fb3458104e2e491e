"""The apps controllers end to end with the real kubectl, on the host and in tenants:
rollout status/history/undo, scale, set image, delete with --cascade=orphan and
foreground, a StatefulSet whose pods each get their own generated claim, a StatefulSet
whose volumeClaimTemplates kind's default class provisions and binds, a tenant
Deployment scaled past its pod quota (FailedCreate on its ReplicaSet), and a DaemonSet
applied with ``kubectl apply --prune`` (kubectl's default prune list) rolled out on every
node."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.tenancy import Tenancy, gpu_pod_spec, seed_platform

TIMEOUT = "--timeout=90s"


def _deployment(name: str, replicas: int, image: str = "nginx:1.0") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": image}]},
            },
        },
    }


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    with seed_platform(tmp_path_factory.mktemp("apps")) as platform:
        platform.create_tenant("apps-ai", "--quota", "pods=2")
        yield platform


def _kubectl(tenancy: Tenancy, where: str, *args: str, stdin: str | None = None) -> str:
    if where == "host":
        return tenancy.cluster.kubectl(*args, stdin=stdin).stdout
    return tenancy.as_tenant(where, *args, stdin=stdin).stdout


def _get(tenancy: Tenancy, where: str, *args: str) -> Any:
    return json.loads(_kubectl(tenancy, where, "get", *args, "-o", "json"))


@pytest.mark.parametrize("where", ["host", "research-ai"])
def test_rollout_history_undo_and_scale(tenancy: Tenancy, where: str) -> None:
    _kubectl(tenancy, where, "apply", "-f", "-", stdin=json.dumps(_deployment("web", 2)))
    assert "successfully rolled out" in _kubectl(
        tenancy, where, "rollout", "status", "deployment/web", TIMEOUT
    )
    pods = _get(tenancy, where, "pods", "-l", "app=web")["items"]
    assert len(pods) == 2
    for pod in pods:
        ready = [c for c in pod["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True"
    _kubectl(tenancy, where, "set", "image", "deployment/web", "web=nginx:2.0")
    _kubectl(tenancy, where, "rollout", "status", "deployment/web", TIMEOUT)
    history = _kubectl(tenancy, where, "rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    _kubectl(tenancy, where, "rollout", "undo", "deployment/web")
    _kubectl(tenancy, where, "rollout", "status", "deployment/web", TIMEOUT)
    history = _kubectl(tenancy, where, "rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["2", "3"]
    assert len(_get(tenancy, where, "replicasets", "-l", "app=web")["items"]) == 2
    deployment = _get(tenancy, where, "deployment", "web")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.0"
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    conditions = {c["type"]: c["reason"] for c in deployment["status"]["conditions"]}
    assert conditions == {
        "Available": "MinimumReplicasAvailable",
        "Progressing": "NewReplicaSetAvailable",
    }
    _kubectl(tenancy, where, "scale", "deployment/web", "--replicas=3")
    _kubectl(tenancy, where, "rollout", "status", "deployment/web", TIMEOUT)
    assert _get(tenancy, where, "deployment", "web")["status"]["availableReplicas"] == 3
    events = _kubectl(
        tenancy, where, "get", "events", "--field-selector", "involvedObject.name=web"
    )
    assert "Scaled up replica set" in events


@pytest.mark.parametrize("where", ["host", "research-ai"])
def test_delete_orphan_and_foreground(tenancy: Tenancy, where: str) -> None:
    _kubectl(tenancy, where, "apply", "-f", "-", stdin=json.dumps(_deployment("kept", 1)))
    _kubectl(tenancy, where, "rollout", "status", "deployment/kept", TIMEOUT)
    _kubectl(tenancy, where, "delete", "deployment", "kept", "--cascade=orphan")
    sets = _get(tenancy, where, "replicasets", "-l", "app=kept")["items"]
    assert len(sets) == 1
    assert "ownerReferences" not in sets[0]["metadata"]
    assert len(_get(tenancy, where, "pods", "-l", "app=kept")["items"]) == 1
    _kubectl(tenancy, where, "delete", "replicaset", "-l", "app=kept", "--cascade=foreground")
    assert _get(tenancy, where, "pods", "-l", "app=kept")["items"] == []
    _kubectl(tenancy, where, "apply", "-f", "-", stdin=json.dumps(_deployment("gone", 1)))
    _kubectl(tenancy, where, "rollout", "status", "deployment/gone", TIMEOUT)
    _kubectl(tenancy, where, "delete", "deployment", "gone", "--cascade=foreground")
    assert _get(tenancy, where, "replicasets", "-l", "app=gone")["items"] == []
    assert _get(tenancy, where, "pods", "-l", "app=gone")["items"] == []


STATEFULSET_WITH_CLAIMS = [
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "slice"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu-slice"}}]
                }
            }
        },
    },
    {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "trainer"},
        "spec": {
            "replicas": 2,
            "serviceName": "trainer",
            "selector": {"matchLabels": {"app": "trainer"}},
            "template": {
                "metadata": {"labels": {"app": "trainer"}},
                "spec": gpu_pod_spec("slice"),
            },
        },
    },
]


@pytest.mark.parametrize("where", ["host", "research-ai"])
def test_statefulset_pods_get_their_own_claims(tenancy: Tenancy, where: str) -> None:
    stdin = "\n---\n".join(json.dumps(d) for d in STATEFULSET_WITH_CLAIMS)
    _kubectl(tenancy, where, "apply", "-f", "-", stdin=stdin)
    assert "partitioned roll out complete: 2 new pods have been updated" in _kubectl(
        tenancy, where, "rollout", "status", "statefulset/trainer", TIMEOUT
    )
    pods = {
        p["metadata"]["name"]: p for p in _get(tenancy, where, "pods", "-l", "app=trainer")["items"]
    }
    assert sorted(pods) == ["trainer-0", "trainer-1"]
    claims = set()
    for name, pod in pods.items():
        assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == name
        assert pod["spec"]["hostname"] == name
        statuses = pod["status"]["resourceClaimStatuses"]
        assert statuses[0]["resourceClaimName"].startswith(name)  # a tenant's shows its twin
        claims.add(statuses[0]["resourceClaimName"])
    assert len(claims) == 2
    status = _get(tenancy, where, "statefulset", "trainer")["status"]
    assert status["readyReplicas"] == 2
    assert status["currentRevision"] == status["updateRevision"]
    cause = "kubernetes.io/change-cause=newer python"  # a new revision carries the set's
    _kubectl(tenancy, where, "annotate", "statefulset/trainer", cause)
    _kubectl(tenancy, where, "set", "image", "statefulset/trainer", "train=python:3.13-slim")
    _kubectl(tenancy, where, "rollout", "status", "statefulset/trainer", TIMEOUT)
    history = _kubectl(tenancy, where, "rollout", "history", "statefulset/trainer")
    rows = [line.split(None, 1) for line in history.splitlines()[2:] if line.strip()]
    assert rows == [["1", "<none>"], ["2", "newer python"]]
    _kubectl(tenancy, where, "rollout", "undo", "statefulset/trainer")
    _kubectl(tenancy, where, "rollout", "status", "statefulset/trainer", TIMEOUT)
    for pod in _get(tenancy, where, "pods", "-l", "app=trainer")["items"]:
        assert pod["spec"]["containers"][0]["image"] == "python:3.12-slim"
    _kubectl(tenancy, where, "scale", "statefulset/trainer", "--replicas=1")
    tenancy.wait(
        lambda: (
            [
                p["metadata"]["name"]
                for p in _get(tenancy, where, "pods", "-l", "app=trainer")["items"]
            ]
            == ["trainer-0"]
        ),
        "trainer-1 removed",
        timeout=60,
    )


DATABASE = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: db
          image: postgres:17
          volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""


@pytest.mark.parametrize("where", ["host", "research-ai"])
def test_statefulset_volume_claims_are_provisioned_and_bound(tenancy: Tenancy, where: str) -> None:
    """As on kind: the default class ``standard`` provisions each pod's claim on the
    pod's node, ``kubectl get pvc,pv`` shows them Bound, and the claims outlive the set
    (Retain) until deleted, when their volumes go too (reclaim Delete)."""
    _kubectl(tenancy, where, "apply", "-f", "-", stdin=DATABASE)
    _kubectl(tenancy, where, "rollout", "status", "statefulset/db", TIMEOUT)
    listed = _kubectl(tenancy, where, "get", "pvc,pv")
    rows = [line.split() for line in listed.splitlines() if line.strip()]
    claims = [r for r in rows if r[0].startswith("persistentvolumeclaim/data-db-")]
    assert rows[0] == [
        "NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS", "AGE",
    ]  # fmt: skip
    assert [r[:2] + r[3:7] for r in claims] == [
        [f"persistentvolumeclaim/data-db-{n}", "Bound", "1Gi", "RWO", "standard", "<unset>"]
        for n in (0, 1)
    ]
    volumes = {r[0].split("/")[1]: r for r in rows if r[0].startswith("persistentvolume/")}
    for claim in claims:
        volume = volumes[claim[2]]
        assert volume[1:7] == [
            "1Gi",
            "RWO",
            "Delete",
            "Bound",
            f"default/{claim[0][22:]}",
            "standard",
        ]
    pod = _get(tenancy, where, "pod", "db-0")
    assert pod["spec"]["volumes"][0] == {
        "name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}
    }  # fmt: skip
    _kubectl(tenancy, where, "delete", "statefulset/db", "--wait")
    assert len(_get(tenancy, where, "pvc", "-l", "app=db")["items"]) == 2  # retained
    _kubectl(tenancy, where, "delete", "pvc", "-l", "app=db")
    tenancy.wait(
        lambda: (
            not any(
                v["spec"].get("claimRef", {}).get("name", "").startswith("data-db-")
                for v in _get(tenancy, where, "pv")["items"]
            )
        ),
        "the released volumes deleted",
        timeout=60,
    )


def test_tenant_deployment_past_its_pod_quota(tenancy: Tenancy) -> None:
    _kubectl(tenancy, "apps-ai", "apply", "-f", "-", stdin=json.dumps(_deployment("big", 3)))

    def refused() -> list[str]:
        events = tenancy.tenant_json("apps-ai", "events")["items"]
        return [
            e["message"]
            for e in events
            if e.get("reason") == "FailedCreate"
            and (e.get("involvedObject") or {}).get("kind") == "ReplicaSet"
        ]

    messages = tenancy.wait(refused, "a FailedCreate event on the ReplicaSet", timeout=60)
    assert messages[0].startswith("Error creating: ")
    assert "exceeded quota" in messages[0]
    pods = _get(tenancy, "apps-ai", "pods", "-l", "app=big")["items"]
    assert len(pods) == 2
    sets = _get(tenancy, "apps-ai", "replicasets", "-l", "app=big")["items"]
    conditions = sets[0]["status"]["conditions"]
    assert conditions[0]["type"] == "ReplicaFailure"
    assert conditions[0]["reason"] == "FailedCreate"
    deployment = _get(tenancy, "apps-ai", "deployment", "big")
    reasons = {c["type"]: c["reason"] for c in deployment["status"]["conditions"]}
    assert reasons["ReplicaFailure"] == "FailedCreate"


AGENT = """apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-agent, labels: {app: node-agent}}
spec:
  selector: {matchLabels: {app: node-agent}}
  template:
    metadata: {labels: {app: node-agent}}
    spec:
      tolerations: [{operator: Exists}]   # the GPU nodes' taints too, as node agents do
      containers: [{name: agent, image: "busybox:1.36"}]
"""
SETTINGS = """apiVersion: v1
kind: ConfigMap
metadata: {name: agent-settings, labels: {app: node-agent}}
data: {interval: 10s}
"""


def test_prune_with_the_default_list_and_a_daemonset_rollout(
    tenancy: Tenancy, tmp_path: Path
) -> None:
    """``kubectl apply --prune -l`` with kubectl's built-in prune list (ReplicationController,
    PersistentVolume and DaemonSet included) applies and prunes; the DaemonSet puts one
    pod on every node and ``kubectl rollout status ds`` completes."""
    host = tenancy.cluster.kubectl
    (tmp_path / "agent.yaml").write_text(AGENT)
    (tmp_path / "settings.yaml").write_text(SETTINGS)
    applied = host("apply", "--prune", "-l", "app=node-agent", "-f", str(tmp_path)).stdout
    assert "daemonset.apps/node-agent created" in applied, applied
    assert "configmap/agent-settings created" in applied, applied
    rolled = host("rollout", "status", "ds/node-agent", TIMEOUT).stdout
    assert 'daemon set "node-agent" successfully rolled out' in rolled, rolled
    nodes = host("get", "nodes", "-o", "name").stdout.split()
    pods = _get(tenancy, "host", "pods", "-l", "app=node-agent")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(n.split("/")[1] for n in nodes)
    table = host("get", "ds", "node-agent").stdout
    header = "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE"
    assert " ".join(table.split()[:9]) == header, table
    count = str(len(nodes))
    assert table.split()[10:15] == [count] * 5, table
    (tmp_path / "settings.yaml").unlink()
    pruned = host("apply", "--prune", "-l", "app=node-agent", "-f", str(tmp_path)).stdout
    assert "configmap/agent-settings pruned" in pruned, pruned
    assert "daemonset.apps/node-agent unchanged" in pruned, pruned
    resources = host("api-resources").stdout
    for row in (
        r"daemonsets +ds +apps/v1 +true +DaemonSet",
        r"replicationcontrollers +rc +v1 +true +ReplicationController",
        r"persistentvolumes +pv +v1 +false +PersistentVolume",
    ):
        assert re.search(row, resources), resources
    host("delete", "ds", "node-agent")
