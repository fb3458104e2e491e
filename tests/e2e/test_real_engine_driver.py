"""The driver's passthrough and health taints on real Kubernetes 1.36 (issue 19's engine).

allot's driver publishes through the API, so kube-scheduler reads the same slices: with
PassthroughSupport it allocates a ``vfio.gpu.nvidia.com`` claim a VFIO twin (kwok runs the
pod), and a device ``allot fleet inject-xid`` tainted ``NoSchedule`` is one it never gives
to a claim that does not tolerate the taint, while a tolerating claim gets it. What this
engine cannot do: kwok nodes prepare nothing, so twins are not hidden after a prepare and
driver configs are not checked (docs/conformance.md). Skips without ``make kube``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from allot.cli.main import main
from allot.driver.files import save_driver_gates
from tests.e2e.test_driver_passthrough_health import claim_and_pod
from tests.realkube import RealKube, needs_real_kube, running_real_kube

pytestmark = [pytest.mark.slow, needs_real_kube]
FLEET = {"pools": [{"name": "h100", "nodes": 1, "gpu": "H100-80GB-HBM3", "gpusPerNode": 2}]}


def _allocated(kube: RealKube, claim: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = kube.get_json("resourceclaim", claim).get("status") or {}
        if status.get("allocation"):
            return str(status["allocation"]["devices"]["results"][0]["device"])
        time.sleep(0.5)
    raise AssertionError(f"claim {claim} was not allocated within {timeout}s")


def _pending_unallocated(kube: RealKube, claim: str, seconds: float = 5) -> bool:
    time.sleep(seconds)
    return not (kube.get_json("resourceclaim", claim).get("status") or {}).get("allocation")


def test_kube_scheduler_allocates_a_vfio_twin(tmp_path: Path) -> None:
    with running_real_kube(tmp_path, FLEET, passthrough=True) as kube:
        classes = [c["metadata"]["name"] for c in kube.get_json("deviceclasses")["items"]]
        assert "vfio.gpu.nvidia.com" in classes
        kube.apply(*claim_and_pod("vm", "vfio.gpu.nvidia.com"))
        assert _allocated(kube, "vm") in ("gpu-vfio-0", "gpu-vfio-1")


def test_kube_scheduler_avoids_a_device_the_health_check_tainted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_real_kube(tmp_path, FLEET) as kube:
        data = tmp_path / "data"
        save_driver_gates(data, {"NVMLDeviceHealthCheck": True})
        assert main(["fleet", "inject-xid", "h100-0", "gpu-0", "79", "--data-dir", str(data)]) == 0
        assert capsys.readouterr().out == "h100-0/gpu-0: tainted gpu.nvidia.com/xid=79:NoSchedule\n"
        (slice_,) = kube.get_json("resourceslices")["items"]
        (taint,) = next(d for d in slice_["spec"]["devices"] if d["name"] == "gpu-0")["taints"]
        assert {k: taint[k] for k in ("key", "value", "effect")} == {
            "key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule",
        }  # fmt: skip
        assert taint["timeAdded"]  # the driver leaves it unset; kube-apiserver stamps it
        kube.apply(*claim_and_pod("first", "gpu.nvidia.com"))
        assert _allocated(kube, "first") == "gpu-1"
        kube.apply(*claim_and_pod("second", "gpu.nvidia.com"))
        assert _pending_unallocated(kube, "second")  # only the tainted GPU is left
        tolerates = [{"key": "gpu.nvidia.com/xid", "operator": "Exists", "effect": "NoSchedule"}]
        kube.apply(*claim_and_pod("tolerant", "gpu.nvidia.com", tolerations=tolerates))
        assert _allocated(kube, "tolerant") == "gpu-0"
