"""Consumable shares on the real engine (``allot up --engine kubernetes``): the driver's
shares-mode devices (``consumableShares: memory``) are accepted by the real kube-apiserver
1.36 and real kube-scheduler allocates two claims of 30Gi on the one H100 with their own
share IDs and ``consumedCapacity``, and leaves a third, which does not fit, unscheduled.
What the real engine cannot do, having no kubelet (kwok plays it): prepare the devices, so
no MPS daemon, time-slice, sharing variables or GPU-memory quota (allot's scheduler's)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import unschedulable, wait_until
from tests.realkube import RealKube, needs_real_kube, running_real_kube

pytestmark = [pytest.mark.slow, needs_real_kube]
FLEET = {
    "driver": {"version": "580.95.5", "cudaVersion": "13.0.0", "consumableShares": "memory"},
    "pools": [{"name": "shared", "nodes": 1, "gpu": "H100-80GB-HBM3", "gpusPerNode": 1}],
}


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKube]:
    root: Path = tmp_path_factory.mktemp("shares")
    with running_real_kube(root, FLEET) as running:
        yield running


def _claim_and_pod(name: str) -> str:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "capacity": {"requests": {"memory": "30Gi"}},
        }}]}},
    }  # fmt: skip
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"allot.dev/pool": "shared"},
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
            "containers": [
                {"name": "main", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}
            ],
        },
    }
    return "\n---\n".join(json.dumps(d) for d in (claim, pod))


def _allocated(kube: RealKube, name: str) -> Any:
    claim = kube.get_json("resourceclaim", name)
    return claim if claim.get("status", {}).get("allocation") else None


def test_kube_scheduler_shares_one_gpu_by_memory(kube: RealKube) -> None:
    [slice_] = kube.get_json("resourceslices")["items"]
    [device] = slice_["spec"]["devices"]
    assert device["allowMultipleAllocations"] is True
    assert device["capacity"]["memory"]["requestPolicy"]["validRange"]["step"] == "1Mi"
    for name in ("share-a", "share-b"):
        kube.kubectl("apply", "-f", "-", stdin=_claim_and_pod(name))
    results = {}
    for name in ("share-a", "share-b"):
        claim = wait_until(partial(_allocated, kube, name), f"{name} allocated", 60)
        [results[name]] = claim["status"]["allocation"]["devices"]["results"]
    a, b = results["share-a"], results["share-b"]
    assert (a["device"], b["device"]) == ("gpu-0", "gpu-0")
    assert a["consumedCapacity"] == b["consumedCapacity"] == {"memory": "30Gi"}
    assert a["shareID"] != b["shareID"]
    kube.kubectl("apply", "-f", "-", stdin=_claim_and_pod("share-c"))
    condition = wait_until(lambda: unschedulable(kube, "share-c"), "share-c unschedulable", 60)
    assert "cannot allocate all claims" in condition["message"]
    assert not kube.get_json("resourceclaim", "share-c").get("status", {}).get("allocation")
