"""A tenant pod's claims stay in its cluster: the twin waits for them with the
scheduler's words, mounts an ``emptyDir`` in their place, and takes its bound volumes'
node affinity, ANDed with its own (:mod:`allot.tenancy.volumes`, :mod:`allot.tenancy.translate`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.controllers.context import ControllerContext
from allot.registry.clusters import Registry
from allot.tenancy.translate import to_host
from allot.tenancy.volumes import add_volume_affinity, claims_waiting
from allot.types import Obj

TENANT = "legal-ai"


@pytest.fixture
def tenant(tmp_path: Path) -> Iterator[ControllerContext]:
    registry = Registry(tmp_path)
    registry.add_cluster(TENANT)
    yield ControllerContext(TENANT, registry.store, registry.handlers, registry.clock)
    registry.close()


def _claim(ctx: ControllerContext, name: str, klass: str | None = None) -> Obj:
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if klass is not None:
        spec["storageClassName"] = klass
    doc = {"metadata": {"name": name, "namespace": "default"}, "spec": spec}
    return ctx.create(
        "PersistentVolumeClaim", {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **doc}, "t"
    )


def _pod(*claims: str, affinity: Obj | None = None) -> Obj:
    spec: Obj = {
        "containers": [{"name": "c", "image": "busybox"}],
        "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims],
    }
    if affinity:
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": affinity}
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "app", "namespace": "default"},
        "spec": spec,
    }


def _bind(ctx: ControllerContext, claim: Obj, node: str) -> None:
    volume: Obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pv-{claim['metadata']['name']}"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/x"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            },
        },
    }
    ctx.create("PersistentVolume", volume, "t")
    claim = ctx.get("PersistentVolumeClaim", "default", claim["metadata"]["name"]) or {}
    claim["spec"]["volumeName"] = volume["metadata"]["name"]
    claim = ctx.update("PersistentVolumeClaim", claim, "t")
    claim["status"] = {"phase": "Bound"}
    ctx.update_status("PersistentVolumeClaim", claim, "t")


def test_the_twin_waits_for_missing_and_unbound_immediate_claims(tenant: ControllerContext) -> None:
    assert claims_waiting(tenant.client, _pod("data")) == 'persistentvolumeclaim "data" not found'
    tenant.create(
        "StorageClass",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "now"},
            "provisioner": "example.com/x",
        },
        "t",
    )
    _claim(tenant, "data", "now")
    assert (
        claims_waiting(tenant.client, _pod("data"))
        == "pod has unbound immediate PersistentVolumeClaims"
    )
    _claim(tenant, "later")  # the tenant's own default class waits for the first consumer
    assert claims_waiting(tenant.client, _pod("later")) == ""
    tenant.delete("PersistentVolumeClaim", "default", "later")  # kept by pvc-protection
    assert (
        claims_waiting(tenant.client, _pod("later"))
        == 'persistentvolumeclaim "later" is being deleted'
    )


def test_the_twin_mounts_empty_dirs_and_follows_its_volumes_nodes(
    tenant: ControllerContext,
) -> None:
    data = _claim(tenant, "data", "")
    _bind(tenant, data, "node-2")
    own = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
            {"matchExpressions": [{"key": "cpu", "operator": "Exists"}]},
        ]
    }
    pod = _pod("data", affinity=own)
    pod["spec"]["volumes"].append({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}})
    twin = to_host("Pod", pod, TENANT)
    assert twin["spec"]["volumes"] == [
        {"name": "data", "emptyDir": {}},
        {"name": "scratch", "emptyDir": {}},
    ]
    del pod["spec"]["volumes"][1]
    assert claims_waiting(tenant.client, pod) == ""
    add_volume_affinity(tenant.client, pod, twin)
    terms = twin["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    pinned = [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]
    assert terms == [
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}], "matchFields": pinned},
        {"matchExpressions": [{"key": "cpu", "operator": "Exists"}], "matchFields": pinned},
    ]
    assert pod["spec"]["volumes"][0]["persistentVolumeClaim"] == {"claimName": "data"}
