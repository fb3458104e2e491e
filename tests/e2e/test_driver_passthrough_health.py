"""The NVIDIA driver's passthrough and health check through ``allot up`` and the real kubectl.

``--driver-feature-gates PassthroughSupport=true`` publishes the ``vfio.gpu.nvidia.com``
class and each whole GPU's VFIO twin; a pod on the twin hides the full GPU from the slice
(a pod for the full GPU waits) until it ends; a VfioDeviceConfig the driver refuses is the
pod's event in the driver's words. ``NVMLDeviceHealthCheck=true`` and ``allot fleet
inject-xid`` taint a device: a running pod keeps it, a new pod that does not tolerate a
``NoSchedule`` taint is not given it, one that tolerates it is, an ignored XID only informs;
the ``DeviceTainted`` alert names the device and the claims on it. With the gates off the
command and the class are refused, not ignored.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import KubectlUser, wait_until
from tests.e2e.test_first_run import ALLOT, CLEAN_ENV, allot_up

pytestmark = pytest.mark.slow
FLEET = {
    "pools": [
        {"name": "h100", "nodes": 1, "gpu": "H100-80GB-HBM3", "gpusPerNode": 2},
        {"name": "mig", "nodes": 1, "gpu": "A100-SXM4-40GB", "mig": {"profile": "3g.20gb"}},
    ]
}


class Kubectl(KubectlUser):
    def __init__(self, data_dir: Path, home: Path) -> None:
        self.data_dir = data_dir
        self.home = home

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfigs" / "host.yaml"


def claim_and_pod(name: str, device_class: str, **request: Any) -> list[dict[str, Any]]:
    """A claim of one device of ``device_class`` (``config``: the claim's) and its pod."""
    config = request.pop("config", None)
    devices: dict[str, Any] = {
        "requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class, **request}}]
    }
    if config:
        devices["config"] = config
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": devices},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}
            ],
        },
    }
    return [claim, pod]


def _phase(kubectl: Kubectl, pod: str) -> str:
    return str(kubectl.get_json("pod", pod).get("status", {}).get("phase"))


def _devices(kubectl: Kubectl, node: str) -> dict[str, Any]:
    slices = kubectl.get_json("resourceslices", f"--field-selector=spec.nodeName={node}")
    return {d["name"]: d for s in slices["items"] for d in s["spec"].get("devices") or []}


def _allocated(kubectl: Kubectl, claim: str) -> str:
    results = kubectl.get_json("resourceclaim", claim)["status"]["allocation"]["devices"]
    return str(results["results"][0]["device"])


def _allot(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ALLOT, *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env=CLEAN_ENV,
        timeout=60,
        check=False,
    )


def _up(tmp_path: Path, gates: str) -> Any:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(FLEET))
    data = tmp_path / "data"
    return data, allot_up(data, "--fleet", str(fleet), "--driver-feature-gates", gates)


def test_passthrough_twins_their_exclusion_and_the_drivers_refusal(tmp_path: Path) -> None:
    data, up = _up(tmp_path, "PassthroughSupport=true")
    with up:
        kubectl = Kubectl(data, tmp_path / "home")
        classes = kubectl.get_json("deviceclasses")["items"]
        assert "vfio.gpu.nvidia.com" in [c["metadata"]["name"] for c in classes]
        assert sorted(_devices(kubectl, "h100-0")) == [
            "gpu-0", "gpu-1", "gpu-vfio-0", "gpu-vfio-1",
        ]  # fmt: skip
        assert sorted(_devices(kubectl, "mig-0")) == [
            "gpu-0-mig-3g20gb-9-0",
            "gpu-0-mig-3g20gb-9-4",
        ]  # fmt: skip: a GPU with MIG devices has no twin
        bus = "device.attributes['resource.kubernetes.io'].pciBusID"
        on_gpu0 = {"cel": {"expression": f"{bus} == '0000:07:00.0'"}}
        kubectl.apply(*claim_and_pod("vm", "vfio.gpu.nvidia.com", selectors=[on_gpu0]))
        wait_until(lambda: _phase(kubectl, "vm") == "Running", "the VFIO pod running", 30)
        assert _allocated(kubectl, "vm") == "gpu-vfio-0"
        assert sorted(_devices(kubectl, "h100-0")) == ["gpu-1", "gpu-vfio-0", "gpu-vfio-1"]
        kubectl.apply(*claim_and_pod("cuda", "gpu.nvidia.com", selectors=[on_gpu0]))
        time.sleep(2)
        assert _phase(kubectl, "cuda") == "Pending"  # its GPU is passed through
        kubectl.kubectl("delete", "pod", "vm", "--wait=true")
        kubectl.kubectl("delete", "resourceclaim", "vm", "--wait=true")
        wait_until(lambda: _phase(kubectl, "cuda") == "Running", "the full GPU's pod running", 30)
        assert sorted(_devices(kubectl, "h100-0")) == ["gpu-0", "gpu-1", "gpu-vfio-1"]
        bad = {
            "opaque": {
                "driver": "gpu.nvidia.com",
                "parameters": {
                    "apiVersion": "resource.nvidia.com/v1beta1",
                    "kind": "VfioDeviceConfig",
                    "iommu": {"backendPolicy": "Always"},
                },
            }
        }
        kubectl.apply(*claim_and_pod("bad", "vfio.gpu.nvidia.com", config=[bad]))
        uid = wait_until(lambda: _claim_uid(kubectl, "bad"), "the bad claim allocated", 30)
        message = wait_until(lambda: _event(kubectl, "bad"), "the driver's refusal", 30)
        assert message == (
            f"error preparing devices for claim default/bad:{uid}: prepare devices failed: "
            "error validating config: unknown IOMMU backend policy: Always, supported IOMMU "
            "backend policies: LegacyOnly, PreferIommuFD"
        )
        assert _phase(kubectl, "bad") == "Pending"
        refused = _allot(data, "fleet", "inject-xid", "h100-0", "gpu-1", "79")
        assert refused.returncode == 1
        assert refused.stderr.startswith(
            "error: the driver's NVMLDeviceHealthCheck feature gate is off on "
        )


def _claim_uid(kubectl: Kubectl, name: str) -> str | None:
    claim = kubectl.get_json("resourceclaim", name)
    return claim["metadata"]["uid"] if (claim.get("status") or {}).get("allocation") else None


def _event(kubectl: Kubectl, pod: str) -> str | None:
    events = kubectl.get_json(
        "events", f"--field-selector=involvedObject.name={pod},reason=FailedPrepareDynamicResources"
    )["items"]
    return str(events[0]["message"]) if events else None


def test_health_taints_keep_new_claims_away_and_alert(tmp_path: Path) -> None:
    data, up = _up(tmp_path, "NVMLDeviceHealthCheck=true")
    with up:
        kubectl = Kubectl(data, tmp_path / "home")
        kubectl.apply(*claim_and_pod("first", "gpu.nvidia.com"))
        wait_until(lambda: _phase(kubectl, "first") == "Running", "the first pod running", 30)
        held = _allocated(kubectl, "first")
        other = "gpu-1" if held == "gpu-0" else "gpu-0"
        done = _allot(data, "fleet", "inject-xid", "h100-0", held, "79")
        assert (done.returncode, done.stdout) == (
            0, f"h100-0/{held}: tainted gpu.nvidia.com/xid=79:NoSchedule\n",
        )  # fmt: skip
        again = _allot(data, "fleet", "inject-xid", "h100-0", held, "79")
        assert again.stdout == f"h100-0/{held}: already tainted gpu.nvidia.com/xid=79:NoSchedule\n"
        taints = _devices(kubectl, "h100-0")[held]["taints"]
        assert [{k: t[k] for k in ("key", "value", "effect")} for t in taints] == [
            {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
        ]
        ignored = _allot(data, "fleet", "inject-xid", "h100-0", other, "13")
        assert ignored.stdout == f"h100-0/{other}: tainted gpu.nvidia.com/xid=13:None\n"
        kubectl.apply(*claim_and_pod("second", "gpu.nvidia.com"))
        wait_until(
            lambda: _phase(kubectl, "second") == "Running", "a pod on the informing taint", 30
        )
        assert _allocated(kubectl, "second") == other
        alert = wait_until(lambda: _alert(kubectl, held), "the DeviceTainted alert", 30)
        assert alert["spec"]["severity"] == "critical"
        assert alert["spec"]["message"] == (
            f"device {held} of driver gpu.nvidia.com on node h100-0 is tainted "
            "gpu.nvidia.com/xid=79:NoSchedule: new claims that do not tolerate it cannot be "
            "allocated it; claims allocated on it: default/first"
        )
        assert _phase(kubectl, "first") == "Running"  # NoSchedule evicts nothing
        kubectl.kubectl("delete", "pod", "first", "--wait=true")
        kubectl.kubectl("delete", "resourceclaim", "first", "--wait=true")
        kubectl.apply(*claim_and_pod("third", "gpu.nvidia.com"))
        time.sleep(2)
        assert _phase(kubectl, "third") == "Pending"  # the only free GPU is tainted
        tolerates = [{"key": "gpu.nvidia.com/xid", "operator": "Exists", "effect": "NoSchedule"}]
        kubectl.apply(*claim_and_pod("tolerant", "gpu.nvidia.com", tolerations=tolerates))
        wait_until(
            lambda: _phase(kubectl, "tolerant") == "Running", "the tolerating pod running", 30
        )
        assert _allocated(kubectl, "tolerant") == held
        unknown = _allot(data, "fleet", "inject-xid", "h100-0", "gpu-7", "79")
        assert (unknown.returncode, unknown.stderr) == (
            1, "error: node h100-0 publishes no device gpu-7 (its devices: gpu-0, gpu-1)\n",
        )  # fmt: skip
        kubectl.apply(*claim_and_pod("vm", "vfio.gpu.nvidia.com"))
        time.sleep(1)
        assert _phase(kubectl, "vm") == "Pending"  # no passthrough: no such class
        assert "vfio.gpu.nvidia.com" not in kubectl.kubectl("get", "deviceclasses").stdout


def _alert(kubectl: Kubectl, device: str) -> dict[str, Any] | None:
    alerts = json.loads(kubectl.kubectl("get", "alerts", "-o", "json").stdout)["items"]
    for alert in alerts:
        spec = alert["spec"]
        if spec["rule"] == "DeviceTainted" and spec["subject"]["name"] == device:
            return dict(alert)
    return None
