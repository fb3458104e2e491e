"""The mixed-vendor fleet (examples/mixed-vendors/) on real Kubernetes 1.36: the real API
server accepts the AMD driver's slices and class as allot publishes them, and the real
kube-scheduler serves ``amd.com/gpu: 1`` through the class's extended resource and keeps
two compute partitions on one parent GPU by ``gpu.amd.com/parentDeviceID``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.realkube import RealKube, needs_real_kube, running_real_kube
from tests.test_amdgpu import FLEET, SAME_PARENT, SCENARIO

pytestmark = [pytest.mark.slow, needs_real_kube]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKube]:
    with running_real_kube(tmp_path_factory.mktemp("real-vendors"), FLEET) as found:
        found.kubectl("apply", "-f", str(REPO / SCENARIO["catalogue"]))
        yield found


def _wait_scheduled(kube: RealKube, pod: str) -> dict[str, Any]:
    kube.kubectl("wait", "--for=condition=PodScheduled", f"pod/{pod}", "--timeout=60s")
    found: dict[str, Any] = kube.get_json("pod", pod)
    return found


def test_the_real_api_server_takes_the_amd_slices(kube: RealKube) -> None:
    slices = kube.get_json("resourceslices")["items"]
    amd = {s["spec"]["nodeName"]: s for s in slices if s["spec"]["driver"] == "gpu.amd.com"}
    assert sorted(amd) == sorted(SCENARIO["published"])
    for node, expected in SCENARIO["published"].items():
        names = {d["name"] for d in amd[node]["spec"]["devices"]}
        assert names == set(expected["devices"])
    amd_class = kube.get_json("deviceclass", "gpu.amd.com")
    assert amd_class["spec"]["extendedResourceName"] == "amd.com/gpu"


def test_the_real_scheduler_serves_amd_com_gpu(kube: RealKube) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "amd"},
        "spec": {
            "containers": [
                {"name": "main", "image": "rocm/pytorch",
                 "resources": {"limits": {"amd.com/gpu": "1"}}}
            ]
        },
    }  # fmt: skip
    kube.kubectl("apply", "-f", "-", stdin=json.dumps(pod))
    scheduled = _wait_scheduled(kube, "amd")
    assert scheduled["spec"]["nodeName"] in SCENARIO["published"]
    name = scheduled["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
    claim = kube.get_json("resourceclaim", name)
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert result["driver"] == "gpu.amd.com"


def test_the_real_scheduler_keeps_partitions_on_one_parent(kube: RealKube) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "cpx-pair"},
        "spec": {"devices": {
            "requests": [{"name": f"r{i}", "exactly": {"deviceClassName": "amd-cpx"}}
                         for i in range(2)],
            "constraints": [{"matchAttribute": SAME_PARENT}],
        }},
    }  # fmt: skip
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "cpx"},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "cpx-pair"}],
            "containers": [
                {
                    "name": "main",
                    "image": "rocm/pytorch",
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }
    kube.kubectl("apply", "-f", "-", stdin=json.dumps(claim) + "\n---\n" + json.dumps(pod))
    assert _wait_scheduled(kube, "cpx")["spec"]["nodeName"] == "mi300x-cpx-0"
    results = kube.get_json("resourceclaim", "cpx-pair")["status"]["allocation"]["devices"][
        "results"
    ]
    assert len({r["device"] for r in results}) == 2
