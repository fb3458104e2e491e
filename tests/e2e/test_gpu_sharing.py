"""GPU sharing applied, through the real kubectl, on the simulated runtime (issue 31, items 1
and 2): an MPS claim two pods share gets one control daemon, its thread percentage and
pinned memory limit in both containers' ``nvidia-smi -q`` and variables, and the daemon
goes with the last pod; time-slicing shows the interval and the command the driver runs;
with the driver's consumable shares (``consumableShares: memory``) claims share one GPU by
``capacity.requests.memory``, each with its own share ID, the scheduler refuses what does
not fit and what would exceed a GPU-memory quota counted by consumed memory, ``/metrics``
and the audit log count the consumed memory, MPS pins each claim to its share, and claims
of one GPU with different configs are refused with the driver's text."""

from __future__ import annotations

import json
import ssl
import time
import urllib.request
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest

from allot.api.quantity import Quantity
from allot.apiserver.server import ServerThread
from allot.cli.main import main as allot
from allot.controllers.nodeagent import NodeAgent
from allot.driver.fleet import parse_fleet
from allot.driver.publisher import publish
from allot.platform import Platform, build
from tests.e2e.conftest import Cluster, unschedulable, wait_until

pytestmark = pytest.mark.slow
GATES = {"TimeSlicingSettings": True, "MPSSupport": True, "ConsumableShares": True}
FLEET = {
    "driver": {"version": "580.95.5", "cudaVersion": "13.0.0", "consumableShares": "memory"},
    "pools": [
        {"name": "shared", "nodes": 1, "gpu": "H100-80GB-HBM3", "gpusPerNode": 1},
        {"name": "whole", "nodes": 1, "gpu": "H100-80GB-HBM3", "gpusPerNode": 2},
    ],
}
GIB = 1 << 30


class Sharing(Cluster):
    platform: Platform

    def agent(self) -> NodeAgent:
        return next(
            w.controller
            for w in self.platform.controllers.workers
            if isinstance(w.controller, NodeAgent)
        )

    def wait(self, condition: Callable[[], Any], what: str) -> Any:
        return wait_until(condition, what)

    def running(self, *pods: str) -> None:
        for pod in pods:
            self.wait(partial(lambda p: self.phase(p) == "Running", pod), f"{pod} running")

    def phase(self, pod: str) -> str:
        return str(self.get_json("pod", pod).get("status", {}).get("phase", ""))

    def events(self, pod: str) -> list[tuple[str, str]]:
        listed = self.get_json("events", "--field-selector", f"involvedObject.name={pod}")
        return [(e["reason"], e["message"]) for e in listed["items"]]

    def gone(self, *names: str) -> None:
        for name in names:
            self.kubectl("delete", "pod", name, "--wait=false")
        self.wait(
            lambda: not any(p["metadata"]["name"] in names for p in self.get_json("pods")["items"]),
            f"{names} gone",
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sharing]:
    root = tmp_path_factory.mktemp("sharing")
    data = root / "data"
    platform = build(data, driver_gates=GATES)
    with ServerThread(data, api=platform.server) as server:
        publish(server.endpoint.kubeconfigs["host"], parse_fleet(FLEET))
        sharing = Sharing(server, root / "home")
        sharing.platform = platform
        yield sharing


def _config(sharing: dict[str, Any], requests: list[str] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "opaque": {
            "driver": "gpu.nvidia.com",
            "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "GpuConfig",
                "sharing": sharing,
            },
        }
    }
    if requests:
        entry["requests"] = requests
    return entry


def _claim(
    name: str, sharing: dict[str, Any] | None = None, memory: str | None = None
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com"}
    if memory:
        exactly["capacity"] = {"requests": {"memory": memory}}
    devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": exactly}]}
    if sharing:
        devices["config"] = [_config(sharing)]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": devices},
    }


def _pod(name: str, claim: str, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"allot.dev/pool": pool},
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
            "containers": [
                {
                    "name": "main",
                    "image": "cuda",
                    "command": ["./infer"],
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }


def _results(cluster: Sharing, claim: str) -> list[dict[str, Any]]:
    allocation = (cluster.get_json("resourceclaim", claim).get("status") or {}).get("allocation")
    return list(allocation["devices"]["results"]) if allocation else []


def test_two_pods_share_an_mps_claim_and_its_daemon_goes_with_the_last(cluster: Sharing) -> None:
    mps = {
        "strategy": "MPS",
        "mpsConfig": {
            "defaultActiveThreadPercentage": 50,
            "defaultPinnedDeviceMemoryLimit": "10Gi",
        },
    }
    cluster.apply(_claim("mps", mps), _pod("mps-a", "mps", "whole"), _pod("mps-b", "mps", "whole"))
    cluster.running("mps-a", "mps-b")
    uid = cluster.get_json("resourceclaim", "mps")["metadata"]["uid"]
    [result] = _results(cluster, "mps")
    slices = cluster.get_json("resourceslices")["items"]
    uuid = next(
        d["attributes"]["uuid"]["string"]
        for s in slices
        if s["spec"]["pool"]["name"] == result["pool"]
        for d in s["spec"]["devices"]
        if d["name"] == result["device"]
    )
    for pod in ("mps-a", "mps-b"):
        log = cluster.kubectl("logs", pod).stdout
        assert "Compute Mode                          : Exclusive_Process" in log
        assert f"Control Daemon                    : mps-control-daemon-{uid}-" in log
        assert "Active Thread Percentage          : 50" in log
        assert "Pinned Device Memory Limit        : 10240M" in log
        assert "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps" in log
        assert f"ALLOT_GPU_SHARING={uuid}=MPS" in log
        assert f"ALLOT_MPS_PINNED_DEVICE_MEM_LIMIT={uuid}=10240M" in log
    started = [
        message
        for pod in ("mps-a", "mps-b")
        for reason, message in cluster.events(pod)
        if reason == "SharingApplied"
    ]
    assert len(started) == 1, started  # one daemon for the claim, not one per pod
    assert started[0].startswith(f"MPS control daemon mps-control-daemon-{uid}-")
    assert (
        f"(simulated) for {uuid}: set_default_active_thread_percentage 50; "
        f"set_default_device_pinned_mem_limit {uuid} 10240M"
    ) in started[0]
    agent = cluster.agent()
    assert list(agent.preparer.sharing.active()) == [uid]
    cluster.gone("mps-a")
    time.sleep(0.3)
    assert list(agent.preparer.sharing.active()) == [uid]  # mps-b still uses it
    cluster.gone("mps-b")
    cluster.wait(lambda: not agent.preparer.sharing.active(), "the daemon stopped")
    cluster.kubectl("delete", "resourceclaim", "mps")


def test_time_slicing_shows_its_interval_and_the_command_the_driver_runs(
    cluster: Sharing,
) -> None:
    slicing = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}
    cluster.apply(_claim("ts", slicing), _pod("ts", "ts", "whole"))
    cluster.running("ts")
    log = cluster.kubectl("logs", "ts").stdout
    assert "Timeslice                         : Long" in log
    assert "ALLOT_GPU_TIMESLICE=GPU-" in log
    [message] = [m for r, m in cluster.events("ts") if r == "SharingApplied"]
    uuid = message.split("simulated ")[1].split(" ")[0]
    assert message == (
        f"TimeSlicing interval Long set on simulated {uuid} as the driver does: "
        f"nvidia-smi -i {uuid} -c DEFAULT; nvidia-smi compute-policy -i {uuid} --set-timeslice 3"
    )
    cluster.gone("ts")
    cluster.kubectl("delete", "resourceclaim", "ts")


def _scrape(cluster: Sharing) -> str:
    server = cluster.server
    token = server.api.registry.tokens.ensure("host")
    request = urllib.request.Request(
        server.endpoint.url + "/clusters/host/metrics",
        headers={"Authorization": f"Bearer {token}"},
    )
    context = ssl.create_default_context(cafile=str(server.endpoint.tls.ca_cert))
    with urllib.request.urlopen(request, context=context) as response:
        return str(response.read().decode())


def _metric(text: str, line_start: str) -> float:
    return float(
        next(line for line in text.splitlines() if line.startswith(line_start)).split()[-1]
    )


def test_claims_share_one_gpu_by_memory_and_are_counted_by_what_they_consumed(
    cluster: Sharing, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("cap-a", "cap-b"):
        cluster.apply(_claim(name, memory="30Gi"), _pod(name, name, "shared"))
    cluster.running("cap-a", "cap-b")
    [a], [b] = _results(cluster, "cap-a"), _results(cluster, "cap-b")
    assert (a["pool"], a["device"]) == (b["pool"], b["device"]) == ("shared-0", "gpu-0")
    assert a["shareID"] != b["shareID"]
    assert a["consumedCapacity"] == b["consumedCapacity"] == {"memory": "30Gi"}
    log = cluster.kubectl("logs", "cap-a").stdout
    assert "Memory Share                      : 30Gi" in log
    assert "ALLOT_GPU_MEMORY_SHARE=GPU-" in log
    cluster.apply(_claim("cap-c", memory="30Gi"), _pod("cap-c", "cap-c", "shared"))
    scheduled = cluster.wait(
        lambda: unschedulable(cluster, "cap-c"), "cap-c unschedulable: 20119Mi are left"
    )
    assert "cannot allocate all claims" in scheduled["message"]
    held = _metric(_scrape(cluster), 'allot_tenant_gpu_memory_allocated_bytes{tenant="host"}')
    assert held == 60 * GIB  # the two shares, not twice the GPU's 81559Mi
    time.sleep(0.3)
    assert (
        allot(["audit", "-o", "json", "--data-dir", str(cluster.platform.registry.data_dir)]) == 0
    )
    entries = json.loads(capsys.readouterr().out)["items"]
    memory = {e["claim"]: e["memory"] for e in entries if e["action"] == "allocate"}
    assert memory["cap-a"] == memory["cap-b"] == 30 * GIB
    cluster.gone("cap-a", "cap-b", "cap-c")
    cluster.kubectl("delete", "resourceclaim", "cap-a", "cap-b", "cap-c")


def test_a_gpu_memory_quota_counts_consumed_memory(cluster: Sharing) -> None:
    cluster.kubectl("create", "namespace", "team")
    scheduler = cluster.platform.scheduler
    before = scheduler.memory_limit
    scheduler.memory_limit = lambda ns: (
        ("tenant 'team'", Quantity.parse("50Gi")) if ns == "team" else None
    )
    try:
        for name in ("q-a", "q-b"):
            cluster.kubectl(
                "apply", "-n", "team", "-f", "-",
                stdin="\n---\n".join(
                    json.dumps(d) for d in (_claim(name, memory="30Gi"), _pod(name, name, "shared"))
                ),
            )  # fmt: skip
        cluster.wait(
            lambda: (
                cluster.get_json("pod", "q-a", "-n", "team")["status"].get("phase") == "Running"
            ),
            "q-a running",
        )
        condition = cluster.wait(
            lambda: unschedulable(cluster, "q-b", "-n", "team"), "q-b refused by the quota"
        )
        assert condition["message"].endswith(
            "would exceed the GPU memory quota of tenant 'team' (30Gi allocated + 30Gi "
            "requested > 50Gi)."
        ), condition["message"]
    finally:
        scheduler.memory_limit = before
        cluster.kubectl("delete", "namespace", "team", "--wait=false")


def test_mps_pins_each_claim_to_its_share_and_conflicting_configs_are_refused(
    cluster: Sharing,
) -> None:
    cluster.wait(
        lambda: (
            not any(
                p["metadata"]["namespace"] == "team"
                for p in cluster.get_json("pods", "-A")["items"]
            )
        ),
        "the quota test's pods gone",
    )
    cluster.apply(_claim("pin", {"strategy": "MPS"}, "20Gi"), _pod("pin", "pin", "shared"))
    cluster.running("pin")
    assert "Pinned Device Memory Limit        : 20480M" in cluster.kubectl("logs", "pin").stdout
    other = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}}
    cluster.apply(_claim("other", other, "20Gi"), _pod("other", "other", "shared"))
    pin = cluster.get_json("resourceclaim", "pin")["metadata"]["uid"]
    refusal = cluster.wait(
        lambda: [m for r, m in cluster.events("other") if r == "FailedPrepareDynamicResources"],
        "the conflicting claim refused",
    )[0]
    uid = cluster.get_json("resourceclaim", "other")["metadata"]["uid"]
    assert refusal == (
        f"error preparing devices for claim default/other:{uid}: unable to prepare claim "
        f"{uid}: requested device gpu-0 has conflicting configuration with already prepared "
        f"claim {pin}"
    )
    assert cluster.phase("other") == "Pending"
    cluster.gone("pin", "other")
    cluster.kubectl("delete", "resourceclaim", "pin", "other")


def test_the_published_shares_mode_devices(cluster: Sharing) -> None:
    slices = cluster.get_json("resourceslices")["items"]
    device = next(
        d for s in slices if s["spec"]["nodeName"] == "shared-0" for d in s["spec"]["devices"]
    )
    assert device["allowMultipleAllocations"] is True
    assert device["capacity"]["memory"] == {
        "value": "81559Mi",
        "requestPolicy": {
            "default": "81559Mi",
            "validRange": {"min": "1Mi", "max": "81559Mi", "step": "1Mi"},
        },
    }
