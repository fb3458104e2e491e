"""Seed 000 on real components: allot's tenant sync between real API servers.

``allot up --engine kubernetes`` with seed 000's classes and both tenants' values files
unchanged; each tenant's own kube-apiserver sees only its entitled class (``kubectl get
deviceclasses`` per tenant); the seed's claims, applied with the tenant's kubectl, get host
twins under vCluster-style translated names in ``tenant-<tenant>`` (``kubectl get
resourceclaims -A`` on the host); with a pod using each, the host's real kube-scheduler
gives the seed's results: legal-ai's whole GPU is allocated and its pod Running, the
allocation and node binding back in the tenant; research-ai's ``gpu-slice`` selects no
device (seed 000's class names the driver ``mig.nvidia.com``, which no driver publishes:
the flaw ``allot lint`` reports), so its pod stays Pending and kube-scheduler's
FailedScheduling event is relayed into the tenant; a claim for the other tenant's class
is refused in the tenant's own kubectl call. Nothing here builds: without ``make kube``'s
binaries these skip.
"""

from __future__ import annotations

import json
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.realkube import ALLOT, Up, allot_up, claim_pod, needs_real_kube, wait_for

pytestmark = [pytest.mark.slow, needs_real_kube]
SEEDS = Path(__file__).resolve().parents[2] / "examples" / "seeds"
CLAIMS = {"legal-ai": "legal-whole-gpu", "research-ai": "research-gpu-slice"}
CLASSES = {"legal-ai": "gpu-whole", "research-ai": "gpu-slice"}
FILES = {
    "legal-ai": ("000-legal-ai-vcluster-config.yaml", "000-legal-whole-gpu-resourceclaim.yaml"),
    "research-ai": (
        "000-research-ai-vcluster-config.yaml",
        "000-research-gpu-slice-resourceclaim.yaml",
    ),
}


def _create(up: Up, tenant: str) -> None:
    values = str(SEEDS / FILES[tenant][0])
    done = subprocess.run(
        [ALLOT, "tenant", "create", tenant, "-f", values, "--data-dir", str(up.data_dir)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _get(up: Up, kubeconfig: Path, *args: str) -> Any:
    return json.loads(up.kubectl("get", *args, "-o", "json", kubeconfig=kubeconfig).stdout)


def _classes(up: Up, kubeconfig: Path) -> list[str]:
    return up.kubectl("get", "deviceclasses", "-o", "name", kubeconfig=kubeconfig).stdout.split()


def _running(up: Up, kubeconfig: Path) -> Any:
    pod = _get(up, kubeconfig, "pod", "work")
    return pod["status"].get("phase") == "Running" and pod


def _failed_scheduling(up: Up, kubeconfig: Path) -> Any:
    events = _get(up, kubeconfig, "events")["items"]
    return next((e for e in events if e["reason"] == "FailedScheduling"), None)


def _claim_state(up: Up, tenant: str, kubeconfig: Path) -> Any:
    claim = _get(up, kubeconfig, "resourceclaim", CLAIMS[tenant])
    status = claim.get("status") or {}
    return status.get("allocation") and status.get("reservedFor") and claim


def test_seed_000_runs_on_real_api_servers_with_allot_s_open_sync(tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    with allot_up(data, home) as up:
        up.kubectl("apply", "-f", str(SEEDS / "000-gpu-deviceclasses.yaml"))
        for tenant in FILES:
            _create(up, tenant)
        configs = {tenant: data / "kubeconfigs" / f"{tenant}.yaml" for tenant in FILES}
        for tenant, kubeconfig in configs.items():
            seen = wait_for(partial(_classes, up, kubeconfig), f"{tenant}'s classes")
            assert seen == [f"deviceclass.resource.k8s.io/{CLASSES[tenant]}"]
        for tenant, kubeconfig in configs.items():
            up.kubectl("apply", "-f", str(SEEDS / FILES[tenant][1]), kubeconfig=kubeconfig)
            pod = claim_pod("work", "default", {"resourceClaimName": CLAIMS[tenant]})
            up.kubectl("apply", "-f", "-", stdin=json.dumps(pod), kubeconfig=kubeconfig)
        legal = configs["legal-ai"]
        claim = wait_for(partial(_claim_state, up, "legal-ai", legal), "legal-ai's allocation")
        result = claim["status"]["allocation"]["devices"]["results"][0]
        running = wait_for(partial(_running, up, legal), "legal-ai's pod running")
        assert running["spec"]["nodeName"] == result["pool"]  # bound where allocated
        research = configs["research-ai"]
        event = wait_for(partial(_failed_scheduling, up, research), "research-ai's event")
        assert "cannot allocate all claims" in event["message"]  # the host scheduler's words
        assert _get(up, research, "pod", "work")["status"]["phase"] == "Pending"
        listed = up.get_json("resourceclaims", "-A")["items"]
        assert sorted((c["metadata"]["namespace"], c["metadata"]["name"]) for c in listed) == [
            ("tenant-legal-ai", "legal-whole-gpu.default"),
            ("tenant-research-ai", "research-gpu-slice.default"),
        ]
        other = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "borrowed", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu-whole"}}]
                }
            },
        }
        refused = up.kubectl(
            "create",
            "-f",
            "-",
            stdin=json.dumps(other),
            check=False,
            kubeconfig=configs["research-ai"],
        )
        assert refused.returncode == 1
        assert (
            "device class gpu-whole is not in the entitlement of tenant research-ai (entitled: "
            "gpu-slice)"
        ) in refused.stderr
