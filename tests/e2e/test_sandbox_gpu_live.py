"""GPU isolation on real GPUs (the device machine; skips cleanly elsewhere): each pod that
claims one GPU and drops ``CUDA_VISIBLE_DEVICES`` still sees exactly its claimed GPU through
NVML, CUDA and ``/dev``, while another pod holds the other GPU at the same time.

On a machine with one GPU, a second, fake device node (``/dev/nvidia1``, made here with
``mknod`` as root) stands for the GPU the sandbox must hide. Run with ``-s`` to print what
each pod saw (the closing note quotes it). Uses HTTPS with the host token, not kubectl, so
it needs only allot's runtime dependencies on the GPU machine.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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

pytestmark = pytest.mark.slow
LOCAL_FLEET = {"pools": [{"name": "local", "local": True}]}
FAKE_NODE = Path("/dev/nvidia1")
SCRIPT = """
import glob, json, os
for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
    os.environ.pop(name, None)
seen = {"dev": sorted(glob.glob("/dev/nvidia*"))}
seen["proc"] = sorted(os.listdir("/proc/driver/nvidia/gpus"))
import pynvml
pynvml.nvmlInit()
seen["nvml"] = [pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i))
                for i in range(pynvml.nvmlDeviceGetCount())]
try:
    import torch
    count = torch.cuda.device_count()
    seen["cuda"] = [str(torch.cuda.get_device_properties(i).uuid) for i in range(count)]
except ImportError:
    seen["cuda"] = None
print(json.dumps(seen), flush=True)
import time; time.sleep(3)  # both pods hold their GPUs at once
"""


def _real_gpus() -> list[str]:
    try:
        nvml.check_available()
    except nvml.NvmlUnavailable as err:
        pytest.skip(f"no NVIDIA GPU here: {err}")
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    return sorted(DeviceNodes().gpus())


@contextmanager
def _fake_second_gpu(real: list[str]) -> Iterator[bool]:
    """A ``/dev/nvidia1`` for a one-GPU machine (root only); removed afterwards."""
    made = len(real) == 1 and not FAKE_NODE.exists() and os.geteuid() == 0
    if made:
        os.mknod(FAKE_NODE, 0o666 | 0o020000, os.makedev(195, 1))
        FAKE_NODE.chmod(0o666)
    try:
        yield made
    finally:
        if made:
            FAKE_NODE.unlink()


def _claimed_pod(name: str) -> list[dict[str, Any]]:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]
            }
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "restartPolicy": "Never",
            "tolerations": [{"operator": "Exists"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
            "containers": [
                {
                    "name": "main",
                    "image": "cuda",
                    "command": [sys.executable, "-c", SCRIPT],
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }
    return [claim, pod]


def _client(server: ServerThread) -> httpx.Client:
    return httpx.Client(
        base_url=f"{server.endpoint.url}/clusters/host",
        verify=ssl.create_default_context(cafile=server.endpoint.tls.ca_cert),
        headers={"Authorization": f"Bearer {server.api.registry.tokens.ensure('host')}"},
        timeout=30,
    )


def _finished(client: httpx.Client, name: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pod: dict[str, Any] = client.get(f"/api/v1/namespaces/default/pods/{name}").json()
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return pod
        time.sleep(0.2)
    raise AssertionError(f"pod {name} did not finish")


def test_each_pod_sees_exactly_its_claimed_gpu(tmp_path: Path) -> None:
    real = _real_gpus()
    with _fake_second_gpu(real) as faked:
        data = tmp_path / "data"
        with ServerThread(data, api=build(data, runtime="process").server) as server:
            publish(server.endpoint.kubeconfigs["host"], parse_fleet(LOCAL_FLEET))
            names = [f"gpu-user-{i}" for i in range(min(2, len(real)))]
            with _client(server) as client:
                for name in names:
                    claim, pod = _claimed_pod(name)
                    base = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
                    assert client.post(base, json=claim).status_code == 201
                    assert (
                        client.post("/api/v1/namespaces/default/pods", json=pod).status_code == 201
                    )
                allocated = {name: _allocation(client, name) for name in names}
                for name in names:
                    pod = _finished(client, name)
                    log = client.get(f"/api/v1/namespaces/default/pods/{name}/log").text
                    print(f"{name} (fake /dev/nvidia1: {faked}): {log.strip()}")
                    assert pod["status"]["phase"] == "Succeeded", log
                    _check_sees_only(json.loads(log.splitlines()[-1]), allocated[name])


def _allocation(client: httpx.Client, name: str) -> dict[str, Any]:
    """The claim's allocated device, read while its pod runs (it is released after)."""
    path = f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{name}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        allocation = (client.get(path).json().get("status") or {}).get("allocation")
        if allocation:
            result: dict[str, Any] = allocation["devices"]["results"][0]
            return result
        time.sleep(0.05)
    raise AssertionError(f"claim {name} was not allocated")


def _check_sees_only(seen: dict[str, Any], result: dict[str, Any]) -> None:
    minor = int(result["device"].removeprefix("gpu-"))
    uuid = next(u for u, g in DeviceNodes().gpus().items() if g.minor == minor)
    common = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}
    assert set(seen["dev"]) - common == {f"/dev/nvidia{minor}"}
    assert seen["nvml"] == [uuid]
    assert len(seen["proc"]) == 1
    if seen["cuda"] is not None:
        assert [f"GPU-{u}" for u in seen["cuda"]] == [uuid]
