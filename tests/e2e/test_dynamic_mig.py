"""An 8 x H100 node with DynamicMIG through the real kubectl: MIG slices carved on demand
from shared counters, two slices on one parent GPU, whole GPUs exhausting the counters."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Cluster, running_platform

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
    with running_platform(tmp_path_factory.mktemp("dynamic-mig"), FLEET) as cluster:
        yield cluster


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
        for slice_ in cluster.get_json("resourceslices")["items"]
        for device in slice_["spec"].get("devices") or []
    }


def test_two_slices_on_one_parent_gpu(platform: Cluster) -> None:
    claim = _claim(
        "pair",
        [_slice_request("a"), _slice_request("b")],
        constraints=[{"matchAttribute": "gpu.nvidia.com/parentUUID"}],
    )
    platform.apply(claim, _pod("pair-user", "pair"))
    platform.kubectl("wait", "--for=condition=Ready", "pod/pair-user", "--timeout=20s")
    results = platform.get_json("resourceclaim", "pair")["status"]["allocation"]["devices"][
        "results"
    ]
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
    platform.apply(whole, _pod("trainer", "seven-whole"))
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
    platform.apply(big, _pod("big-user", "big-slice"))
    platform.kubectl("wait", "--for=condition=PodScheduled=false", "pod/big-user", "--timeout=20s")
    message = {c["type"]: c for c in platform.get_json("pod", "big-user")["status"]["conditions"]}[
        "PodScheduled"
    ]["message"]
    assert message == "0/1 nodes are available: 1 cannot allocate all claims."
    platform.kubectl("delete", "pod", "trainer")
    platform.kubectl("wait", "--for=condition=Ready", "pod/big-user", "--timeout=20s")
    result = platform.get_json("resourceclaim", "big-slice")["status"]["allocation"]["devices"][
        "results"
    ][0]
    pair_parent = {
        _attributes(platform)[r["device"]]["parentUUID"]["string"]
        for r in platform.get_json("resourceclaim", "pair")["status"]["allocation"]["devices"][
            "results"
        ]
    }
    assert _attributes(platform)[result["device"]]["parentUUID"]["string"] not in pair_parent
