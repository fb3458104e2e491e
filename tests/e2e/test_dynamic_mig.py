"""An 8 x H100 node with DynamicMIG through the real kubectl: MIG slices carved on demand
from shared counters, two slices on one parent GPU, whole GPUs exhausting the counters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from allot.apiserver.server import ServerThread
from allot.driver.fleet import parse_fleet
from allot.driver.publisher import Publisher
from allot.kube.client import Client
from allot.platform import build
from tests.e2e.conftest import Cluster

pytestmark = pytest.mark.slow
FLEET = {
    "pools": [
        {
            "name": "h100",
            "nodes": 1,
            "gpu": "H100-80GB-HBM3",
            "gpusPerNode": 8,
            "mig": {"dynamic": True},
        }
    ]
}
PROFILE = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
FULL_PROFILE = "device.attributes['gpu.nvidia.com'].profile == '7g.80gb'"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("dynamic-mig")
    data = root / "data"
    with ServerThread(data, api=build(data)) as server:
        client = Client.from_kubeconfig(server.endpoint.kubeconfigs["host"])
        Publisher(client).reconcile(parse_fleet(FLEET))
        client.close()
        yield Cluster(server, root / "home")


def _apply(cluster: Cluster, *documents: Any) -> None:
    cluster.kubectl("apply", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in documents))


def _json(cluster: Cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def _claim(name: str, requests: list[dict[str, Any]], **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": requests, **devices}},
    }


def _slice_request(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "exactly": {
            "deviceClassName": "mig.nvidia.com",
            "selectors": [{"cel": {"expression": PROFILE}}],
        },
    }


def _pod(name: str, claim: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
            "containers": [
                {"name": "main", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}
            ],
        },
    }


def _attributes(cluster: Cluster) -> dict[str, dict[str, Any]]:
    return {
        device["name"]: device.get("attributes", {})
        for slice_ in _json(cluster, "resourceslices")["items"]
        for device in slice_["spec"].get("devices") or []
    }


def test_two_slices_on_one_parent_gpu(platform: Cluster) -> None:
    claim = _claim(
        "pair",
        [_slice_request("a"), _slice_request("b")],
        constraints=[{"matchAttribute": "gpu.nvidia.com/parentUUID"}],
    )
    _apply(platform, claim, _pod("pair-user", "pair"))
    platform.kubectl("wait", "--for=condition=Ready", "pod/pair-user", "--timeout=20s")
    results = _json(platform, "resourceclaim", "pair")["status"]["allocation"]["devices"]["results"]
    attributes = _attributes(platform)
    parents = {attributes[r["device"]]["parentUUID"]["string"] for r in results}
    profiles = {attributes[r["device"]]["profile"]["string"] for r in results}
    assert len(results) == 2
    assert len(parents) == 1
    assert profiles == {"1g.10gb"}
    assert results[0]["device"] != results[1]["device"]


def test_whole_gpus_use_up_the_counters_until_released(platform: Cluster) -> None:
    whole = _claim(
        "seven-whole",
        [
            {
                "name": "gpus",
                "exactly": {
                    "deviceClassName": "gpu.nvidia.com",
                    "allocationMode": "ExactCount",
                    "count": 7,
                },
            }
        ],
    )
    _apply(platform, whole, _pod("trainer", "seven-whole"))
    platform.kubectl("wait", "--for=condition=Ready", "pod/trainer", "--timeout=20s")
    # Seven whole GPUs plus the GPU carrying the pair: a full 7g.80gb slice fits nowhere.
    big = _claim(
        "big-slice",
        [
            {
                "name": "gpu",
                "exactly": {
                    "deviceClassName": "mig.nvidia.com",
                    "selectors": [{"cel": {"expression": FULL_PROFILE}}],
                },
            }
        ],
    )
    _apply(platform, big, _pod("big-user", "big-slice"))
    platform.kubectl("wait", "--for=condition=PodScheduled=false", "pod/big-user", "--timeout=20s")
    message = {c["type"]: c for c in _json(platform, "pod", "big-user")["status"]["conditions"]}[
        "PodScheduled"
    ]["message"]
    assert message == "0/1 nodes are available: 1 cannot allocate all claims."
    platform.kubectl("delete", "pod", "trainer")
    platform.kubectl("wait", "--for=condition=Ready", "pod/big-user", "--timeout=20s")
    result = _json(platform, "resourceclaim", "big-slice")["status"]["allocation"]["devices"][
        "results"
    ][0]
    pair_parent = {
        _attributes(platform)[r["device"]]["parentUUID"]["string"]
        for r in _json(platform, "resourceclaim", "pair")["status"]["allocation"]["devices"][
            "results"
        ]
    }
    assert _attributes(platform)[result["device"]]["parentUUID"]["string"] not in pair_parent
