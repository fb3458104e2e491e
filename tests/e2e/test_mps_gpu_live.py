"""MPS on a real GPU (the device machine; skips cleanly elsewhere): three pods share one
ResourceClaim whose ``GpuConfig`` asks for MPS with a 50% thread percentage and a 2 GiB
pinned device memory limit. allot starts one ``nvidia-cuda-mps-control`` for the claim;
two pods allocate 256 MiB through libcuda (ctypes, no toolkit needed) and hold it at the
same time, the third asks for 3 GiB and fails with ``CUDA_ERROR_OUT_OF_MEMORY`` (2), as
MPS makes an allocation over the pinned limit fail; once the last pod is done the daemon
is gone and its directories with it. Nothing GPU-wide changes (no compute mode, no
compute policy): the GPU may be shared with others.

Run it with ``-s`` to print what each pod saw and the daemon's control log (the closing
note quotes them)::

    .venv/bin/python -m pytest -q -n 0 -s tests/e2e/test_mps_gpu_live.py

Uses HTTPS with the host token, not kubectl, so it needs only allot's runtime
dependencies on the GPU machine. Sandboxed where bubblewrap is installed, else not.
"""

from __future__ import annotations

import ctypes
import json
import shutil
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from allot.apiserver.server import ServerThread
from allot.driver import nvml
from allot.driver.devicenodes import DeviceNodes
from allot.driver.fleet import parse_fleet
from allot.driver.publisher import publish
from allot.platform import build
from tests.e2e.conftest import processes_naming, wait_until
from tests.e2e.test_sandbox_gpu_live import _client

pytestmark = pytest.mark.slow
LOCAL_FLEET = {"pools": [{"name": "local", "local": True}]}
MIB = 1 << 20
LIMIT = "2Gi"
UNDER, OVER = 256 * MIB, 3 * 1024 * MIB
CUDA_ERROR_OUT_OF_MEMORY = 2
SCRIPT = """
import ctypes, json, os, sys, time
size, hold = int(sys.argv[1]), float(sys.argv[2])
cuda = ctypes.CDLL("libcuda.so.1")
seen = {"size": size}
seen["init"] = cuda.cuInit(0)
device, context, pointer = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
seen["device"] = cuda.cuDeviceGet(ctypes.byref(device), 0)
seen["context"] = cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device)
seen["start"] = time.time()
seen["alloc"] = cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size))
if seen["alloc"] == 0:
    time.sleep(hold)
seen["end"] = time.time()
seen["env"] = {k: v for k, v in os.environ.items() if "MPS" in k or k.startswith("CUDA_")}
print(json.dumps(seen), flush=True)
sys.exit(0 if seen["alloc"] == 0 else 1)
"""


def _machine() -> bool:
    """Skip unless this machine has an NVIDIA GPU, MPS and libcuda; True when sandboxed."""
    try:
        nvml.check_available()
    except nvml.NvmlUnavailable as err:
        pytest.skip(f"no NVIDIA GPU here: {err}")
    if not DeviceNodes().gpus():
        pytest.skip("no NVIDIA GPU in /proc/driver/nvidia/gpus")
    if shutil.which("nvidia-cuda-mps-control") is None:
        pytest.skip("nvidia-cuda-mps-control is not installed")
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as err:
        pytest.skip(f"libcuda.so.1 cannot be loaded: {err}")
    return shutil.which("bwrap") is not None


def _claim() -> dict[str, Any]:
    mps = {"defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": LIMIT}
    config = {
        "opaque": {
            "driver": "gpu.nvidia.com",
            "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "GpuConfig",
                "sharing": {"strategy": "MPS", "mpsConfig": mps},
            },
        }
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "mps-shared", "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
                "config": [config],
            }
        },
    }


def _pod(name: str, size: int, hold: float) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "restartPolicy": "Never",
            "tolerations": [{"operator": "Exists"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "mps-shared"}],
            "containers": [
                {
                    "name": "main",
                    "image": "cuda",
                    "command": [sys.executable, "-c", SCRIPT, str(size), str(hold)],
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }


def _phase(client: httpx.Client, name: str) -> str:
    pod = client.get(f"/api/v1/namespaces/default/pods/{name}").json()
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _started(client: httpx.Client, name: str) -> bool:
    return _phase(client, name) != "Pending"


def _finished(client: httpx.Client, name: str) -> str | None:
    phase = _phase(client, name)
    return phase if phase in ("Succeeded", "Failed") else None


def _daemon_root(client: httpx.Client, data: Path, uid: str) -> list[Path]:
    """The claim's daemon directory once it exists; a refused prepare fails at once."""
    for event in client.get("/api/v1/namespaces/default/events").json()["items"]:
        if event["reason"] == "FailedPrepareDynamicResources":
            raise AssertionError(f"the driver refused: {event['message']}")
    return list((data / "mps").glob(f"{uid}-*"))


def test_pods_sharing_an_mps_claim_run_under_its_limits(tmp_path: Path) -> None:
    sandboxed = _machine()
    data = tmp_path / "data"
    gates = {"MPSSupport": True}
    platform = build(data, runtime="process", driver_gates=gates, sandboxed=sandboxed)
    with ServerThread(data, api=platform.server) as server, _client(server) as client:
        publish(server.endpoint.kubeconfigs["host"], parse_fleet(LOCAL_FLEET))
        base = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
        assert client.post(base, json=_claim()).status_code == 201
        pods = {"mps-a": (UNDER, 8.0), "mps-b": (UNDER, 8.0), "mps-over": (OVER, 0.0)}
        for name, (size, hold) in pods.items():
            answer = client.post("/api/v1/namespaces/default/pods", json=_pod(name, size, hold))
            assert answer.status_code == 201, answer.text
        uid = client.get(f"{base}/mps-shared").json()["metadata"]["uid"]
        [root] = wait_until(lambda: _daemon_root(client, data, uid), "the claim's MPS daemon", 120)
        for name in ("mps-a", "mps-b"):
            wait_until(partial(_started, client, name), f"{name} started", 120)
        time.sleep(3)  # both hold their memory now; the log goes with the daemon
        control = (root / "log" / "control.log").read_text(errors="replace")
        print(f"control.log of {root.name} while mps-a and mps-b run:\n{control}")
        seen, phases = {}, {}
        for name in pods:
            phases[name] = wait_until(partial(_finished, client, name), f"{name} done", 120)
            log = client.get(f"/api/v1/namespaces/default/pods/{name}/log").text
            print(f"{name} (sandboxed: {sandboxed}): {log.strip()}")
            seen[name] = json.loads(log.strip().splitlines()[-1])
        events = client.get("/api/v1/namespaces/default/events").json()["items"]
        for event in events:
            if event["reason"] in ("SharingApplied", "FailedPrepareDynamicResources"):
                print(f"event {event['reason']}: {event['message']}")
        assert phases == {"mps-a": "Succeeded", "mps-b": "Succeeded", "mps-over": "Failed"}
        assert (seen["mps-a"]["alloc"], seen["mps-b"]["alloc"]) == (0, 0)
        assert seen["mps-over"]["alloc"] == CUDA_ERROR_OUT_OF_MEMORY
        a, b = seen["mps-a"], seen["mps-b"]
        assert max(a["start"], b["start"]) < min(a["end"], b["end"])  # at the same time
        pipe = "/tmp/nvidia-mps" if sandboxed else str(root / "pipe")
        for name in pods:
            assert seen[name]["env"]["CUDA_MPS_PIPE_DIRECTORY"] == pipe
        wait_until(
            lambda: not root.exists() and not processes_naming(str(root)), "the daemon gone", 30
        )
