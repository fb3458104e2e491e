"""``allot controller``'s rounds against a cluster (the embedded platform, over HTTPS with
the official client): the mirror feeds the same capacity view, alerts and audit as the
embedded platform (a class revoked under an allocated claim included); alerts become
Events on the cluster; Tenants' objects are kept applied."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.apiserver.server import free_port
from allot.cluster.controller import ClusterController
from allot.kube.client import Client
from allot.ops.audit import AuditLog
from allot.ops.rules import AlertSettings
from tests.e2e.tenancy import REPO, Tenancy, seed_platform

pytestmark = pytest.mark.slow
LEGAL = str(REPO / "examples/tenancy/legal-ai-workload.yaml")
RESEARCH = REPO / "examples/tenancy/research-ai-workload.yaml"


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Tenancy, ClusterController]]:
    with seed_platform(tmp_path / "platform") as tenancy:
        client = Client.from_kubeconfig(tenancy.cluster.kubeconfig)
        controller = ClusterController(
            client, tmp_path / "controller", AlertSettings(pending_claim_seconds=1)
        )
        yield tenancy, controller
        controller.close()
        client.close()


async def _round(controller: ClusterController) -> list[str]:
    report = await controller.round()
    await controller.manager.idle()
    return report.applied


def test_metrics_alerts_and_audit_from_the_mirror(
    setup: tuple[Tenancy, ClusterController],
) -> None:
    tenancy, controller = setup

    async def scenario() -> None:
        controller.manager.start()
        try:
            await _round(controller)
            text = controller.metrics.render().decode()
            assert (
                'allot_class_devices{class="gpu-whole",driver="gpu.nvidia.com",'
                'node="a100-whole-pool-0"' in text
            )
            claim_only = RESEARCH.read_text().split("\n---\n")[0]
            tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=claim_only)
            await asyncio.sleep(1.5)
            await _round(controller)
            assert [f.rule for f in controller.alerts.current()] == ["ClaimPendingTooLong"]
            tenancy.as_tenant("legal-ai", "apply", "-f", LEGAL)
            tenancy.wait(lambda: _allocated(tenancy), "the whole GPU allocated")
            await _round(controller)
            tenancy.cluster.kubectl("label", "deviceclass", "gpu-whole", "gpu.platform/tenant-")
            await _round(controller)  # the params follow the class
            await _round(controller)  # the mirror reads them
            rules = [f.rule for f in controller.alerts.current()]
            assert "RevokedClassAllocated" in rules, rules
        finally:
            await controller.manager.stop()

    asyncio.run(scenario())
    events = tenancy.host_json("events", "-n", "tenant-research-ai")["items"]
    mine = [e for e in events if (e.get("source") or {}).get("component") == "allot-controller"]
    assert [e["reason"] for e in mine] == ["ClaimPendingTooLong"]
    assert "claim research-gpu-slice of tenant research-ai has been pending" in mine[0]["message"]
    log = AuditLog(controller.log_path, read_only=True)
    entries = [(e.action, e.tenant, e.device, e.claim) for e in log.entries()]
    log.close()
    assert ("allocate", "legal-ai", "gpu-0", "legal-whole-gpu") in entries


def _allocated(tenancy: Tenancy) -> bool:
    claim = tenancy.tenant_json("legal-ai", "resourceclaim", "legal-whole-gpu")
    return bool((claim.get("status") or {}).get("allocation"))


def test_tenant_objects_are_kept_applied(setup: tuple[Tenancy, ClusterController]) -> None:
    tenancy, controller = setup

    async def scenario() -> list[str]:
        controller.manager.start()
        try:
            await _round(controller)
            # an edit (the embedded platform's own tenant controller also makes a deleted
            # object again, at once, so a delete would leave this controller nothing to do)
            tenancy.cluster.kubectl(
                "patch", "configmap", "-n", "allot-system", "entitlement-legal-ai",
                "--type=merge", "-p", '{"data": {"deviceClasses": "gpu-whole gpu-slice"}}',
            )  # fmt: skip
            return await _round(controller)
        finally:
            await controller.manager.stop()

    applied = asyncio.run(scenario())
    assert "configmap/allot-system/entitlement-legal-ai configured" in applied
    params = tenancy.host_json("configmap", "-n", "allot-system", "entitlement-legal-ai")
    assert params["data"]["deviceClasses"] == "gpu-whole"
    tenant = tenancy.host_json("tenant", "legal-ai")
    assert tenant["status"]["entitledDeviceClasses"] == ["gpu-whole"]


def test_the_command_serves_metrics(
    setup: tuple[Tenancy, ClusterController], tmp_path: Path
) -> None:
    tenancy, _ = setup
    port = free_port()
    command = [
        sys.executable, "-m", "allot.cli.main", "controller",
        "--kubeconfig", str(tenancy.cluster.kubeconfig), "--data-dir", str(tmp_path / "cli"),
        "--interval", "0.5", "--metrics-port", str(port),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        text = tenancy.wait(lambda: _scrape(port), "the controller's /metrics")
        assert 'allot_class_devices{class="gpu-slice"' in text
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    assert "allot controller: rounds every 0.5s" in out
    assert "Traceback" not in err


def _scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            text = str(response.read().decode())
    except OSError:
        return ""
    return text if "allot_class_devices{" in text else ""
