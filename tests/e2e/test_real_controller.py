"""``allot controller`` against real Kubernetes 1.36, judged by what it leaves behind.

The command runs as a user starts it (its own process, README's step 6) against the real
control plane of the ``real_kube`` fixture with seed 000's platform applied. Only what the
controller is for is checked, not how it learns of changes (it is due to watch instead of
polling): a claim unallocated past ``--alert-pending-after`` becomes a
``ClaimPendingTooLong`` Event on the claim (``source.component: allot-controller``);
``/metrics`` has the cluster's figures (devices per class and node, the claims per tenant
and state, the alert firing); the audit file has kube-scheduler's allocation and its
release, as ``allot audit`` prints them. Without ``make kube``'s binaries the module skips.
"""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from allot.apiserver.server import free_port
from tests.realkube import (
    ALLOT,
    RealKube,
    allot,
    claim_pod,
    needs_real_kube,
    requests,
    resource_claim,
    wait_for,
)

pytestmark = [pytest.mark.slow, needs_real_kube]
REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "examples" / "platform" / "seed-000.yaml"
LEGAL = "tenant-legal-ai"
WHOLE = requests("gpu-whole")


def _scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            return str(response.read().decode())
    except OSError:
        return ""


def _series(text: str, name: str) -> dict[str, float]:
    """The samples of metric ``name``: their label text (``{...}``) -> value."""
    found = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line[len(name) :].rsplit(" ", 1)
            found[labels] = float(value)
    return found


@pytest.fixture(scope="module")
def controller(real_kube: RealKube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``allot controller`` on the cluster with the platform applied; (port, data dir)."""
    applied = allot("apply", "-f", str(PLATFORM), kubeconfig=real_kube.kubeconfig)
    assert applied.returncode == 0, applied.stderr
    data_dir = tmp_path_factory.mktemp("controller")
    port = free_port()
    command = [
        ALLOT, "controller", "--kubeconfig", str(real_kube.kubeconfig),
        "--data-dir", str(data_dir), "--interval", "1", "--metrics-port", str(port),
        "--alert-pending-after", "2s",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: "allot_class_devices{" in _scrape(port), "the controller's /metrics")
        yield port, data_dir
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert "Traceback" not in err, err


def test_a_claim_left_pending_raises_the_alert_as_an_event_and_in_the_metrics(
    real_kube: RealKube, controller: Any
) -> None:
    port, _ = controller
    real_kube.apply(resource_claim("forgotten", LEGAL, WHOLE))

    def raised() -> list[Any]:
        events = real_kube.get_json("events", "-n", LEGAL)["items"]
        return [
            e
            for e in events
            if (e.get("source") or {}).get("component") == "allot-controller"
            and e["involvedObject"]["name"] == "forgotten"
        ]

    [event] = wait_for(raised, "the ClaimPendingTooLong Event")
    assert (event["type"], event["reason"]) == ("Warning", "ClaimPendingTooLong")
    assert event["involvedObject"]["kind"] == "ResourceClaim"
    assert event["message"].startswith("claim forgotten of tenant legal-ai has been pending")
    text = wait_for(
        lambda: (t := _scrape(port)) and 'rule="ClaimPendingTooLong"' in t and t, "the alert series"
    )
    alerts = _series(text, "allot_alert")
    assert any('rule="ClaimPendingTooLong"' in k and v == 1 for k, v in alerts.items()), alerts
    claims = _series(text, "allot_claims")
    assert claims['{class="gpu-whole",state="pending",tenant="legal-ai"}'] == 1, claims
    real_kube.kubectl("delete", "resourceclaim", "forgotten", "-n", LEGAL)


def test_metrics_show_the_real_clusters_devices(controller: Any) -> None:
    port, _ = controller
    devices = _series(_scrape(port), "allot_class_devices")
    per_class: dict[str, float] = {}
    for labels, value in devices.items():
        name = labels.split('class="')[1].split('"')[0]
        per_class[name] = per_class.get(name, 0) + value
    assert per_class == {"gpu-slice": 7, "gpu-whole": 1, "gpu.nvidia.com": 1, "mig.nvidia.com": 7}
    assert any('node="a100-whole-pool-0"' in k for k in devices if 'class="gpu-whole"' in k)


def test_the_audit_records_kube_schedulers_allocation_and_its_release(
    real_kube: RealKube, controller: Any
) -> None:
    _, data_dir = controller
    real_kube.apply(
        resource_claim("audited", LEGAL, WHOLE),
        claim_pod("audited", LEGAL, {"resourceClaimName": "audited"}),
    )
    wait_for(
        lambda: (
            real_kube.get_json("pod", "audited", "-n", LEGAL)["status"].get("phase") == "Running"
        ),
        "the pod to run",
    )

    def audit() -> list[Any]:
        done = allot("audit", "-o", "json", "--data-dir", str(data_dir))
        return list(json.loads(done.stdout)["items"]) if done.returncode == 0 else []

    def entries(action: str) -> list[Any]:
        return [e for e in audit() if e["action"] == action and e["claim"] == "audited"]

    [allocated] = wait_for(lambda: entries("allocate"), "the allocation in the audit")
    picked = {k: allocated[k] for k in ("tenant", "node", "pool", "device", "device_class")}
    assert picked == {
        "tenant": "legal-ai",
        "node": "a100-whole-pool-0",
        "pool": "a100-whole-pool-0",
        "device": "gpu-0",
        "device_class": "gpu-whole",
    }, allocated
    assert allocated["pod"] == "audited"
    real_kube.kubectl("delete", "pod", "audited", "-n", LEGAL)
    real_kube.kubectl("delete", "resourceclaim", "audited", "-n", LEGAL)
    [released] = wait_for(lambda: entries("release"), "the release in the audit")
    assert (released["tenant"], released["device"]) == ("legal-ai", "gpu-0")
