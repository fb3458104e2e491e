"""``allot controller`` against a cluster (the embedded platform, over HTTPS with the
official client), by watch: its informers feed the same capacity view, alerts and audit as
the embedded platform (a class revoked under an allocated claim included); alerts become
Alerts and Events on the cluster; Tenants' objects are kept applied when they drift; a
refused permission names the RBAC rule missing."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.apiserver.server import free_port
from allot.cluster.controller import ClusterController, Controllers
from allot.kube.client import Client
from allot.ops.audit import AuditLog
from allot.ops.rules import AlertSettings
from tests.e2e.tenancy import REPO, Tenancy, seed_platform

pytestmark = pytest.mark.slow
LEGAL = str(REPO / "examples/tenancy/legal-ai-workload.yaml")
RESEARCH = REPO / "examples/tenancy/research-ai-workload.yaml"


class Running:
    """A controller run on its own loop in a thread (the test's calls block)."""

    def __init__(self, controller: ClusterController) -> None:
        self.controller = controller
        self.loop = asyncio.new_event_loop()
        self.stop = asyncio.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.failure: BaseException | None = None

    def _run(self) -> None:
        try:
            self.loop.run_until_complete(self.controller.run(self.stop))
        except BaseException as err:
            self.failure = err

    def __enter__(self) -> Controllers:
        self.thread.start()
        tries = 0
        while self.controller.running is None and self.failure is None and tries < 600:
            threading.Event().wait(0.05)
            tries += 1
        if self.failure is not None:
            raise self.failure
        assert self.controller.running is not None, "the controller did not start"
        return self.controller.running

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(timeout=30)
        self.loop.close()


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Tenancy, ClusterController]]:
    with seed_platform(tmp_path / "platform") as tenancy:
        api = Client.from_kubeconfig(tenancy.cluster.kubeconfig)
        settings = AlertSettings(pending_claim_seconds=1, interval_seconds=0.2)
        yield tenancy, ClusterController(api, tmp_path / "controller", settings)
        api.close()


def test_metrics_alerts_and_audit_by_watch(setup: tuple[Tenancy, ClusterController]) -> None:
    tenancy, controller = setup
    with Running(controller) as running:
        text = controller.metrics_text().decode()
        assert (
            'allot_class_devices{class="gpu-whole",driver="gpu.nvidia.com",'
            'node="a100-whole-pool-0"' in text
        )
        assert "allot_controller_leader 1" in text
        claim_only = RESEARCH.read_text().split("\n---\n")[0]
        tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=claim_only)
        tenancy.wait(
            lambda: [f.rule for f in running.alerts.current()] == ["ClaimPendingTooLong"],
            "the pending-claim alert",
        )
        tenancy.as_tenant("legal-ai", "apply", "-f", LEGAL)
        tenancy.wait(lambda: _allocated(tenancy), "the whole GPU allocated")
        tenancy.wait(lambda: _audited(running.log_path), "the allocation audited")
        tenancy.cluster.kubectl("label", "deviceclass", "gpu-whole", "gpu.platform/tenant-")
        tenancy.wait(  # the params follow the class, the alert follows the params
            lambda: "RevokedClassAllocated" in [f.rule for f in running.alerts.current()],
            "the revoked-class alert",
        )
    events = tenancy.host_json("events", "-n", "tenant-research-ai")["items"]
    pending = [e for e in events if e["reason"] == "ClaimPendingTooLong"]
    assert len(pending) == 1
    assert (
        "claim research-gpu-slice of tenant research-ai has been pending" in pending[0]["message"]
    )
    assert _audited(controller.data_dir / "audit.db")


def _audited(path: Path) -> bool:
    if not path.exists():
        return False
    log = AuditLog(path, read_only=True)
    entries = [(e.action, e.tenant, e.device, e.claim) for e in log.entries()]
    log.close()
    return ("allocate", "legal-ai", "gpu-0", "legal-whole-gpu") in entries


def _allocated(tenancy: Tenancy) -> bool:
    claim = tenancy.tenant_json("legal-ai", "resourceclaim", "legal-whole-gpu")
    return bool((claim.get("status") or {}).get("allocation"))


def test_tenant_objects_are_kept_applied(setup: tuple[Tenancy, ClusterController]) -> None:
    tenancy, controller = setup
    with Running(controller) as running:
        tenancy.wait(lambda: running.tenants.specs, "the first pass")
        # an edit (the embedded platform's own tenant controller also makes a deleted
        # object again, at once, so a delete would leave this controller nothing to do)
        tenancy.cluster.kubectl(
            "patch", "configmap", "-n", "allot-system", "entitlement-legal-ai",
            "--type=merge", "-p", '{"data": {"deviceClasses": "gpu-whole gpu-slice"}}',
        )  # fmt: skip
        tenancy.wait(
            lambda: (
                "configmap/allot-system/entitlement-legal-ai configured" in running.tenants.applied
            ),
            "the drift taken back",
        )
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
        "--interval", "0.5", "--metrics-port", str(port), "--no-leader-elect",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        text = tenancy.wait(lambda: _scrape(port), "the controller's /metrics")
        assert 'allot_class_devices{class="gpu-slice"' in text
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    assert "allot controller: alerts every 0.5s" in out
    assert "no leader election" in out
    assert "Traceback" not in err
    assert process.returncode == 130  # interrupted, as a shell reports Ctrl-C


def test_a_refused_permission_names_the_rbac_rule(
    setup: tuple[Tenancy, ClusterController], tmp_path: Path
) -> None:
    """A tenant's kubeconfig may not list the host's slices: the command says which rule
    its account lacks and exits 1."""
    tenancy, _ = setup
    command = [
        sys.executable, "-m", "allot.cli.main", "controller", "--no-leader-elect",
        "--kubeconfig", str(_limited_kubeconfig(tenancy, tmp_path)),
        "--data-dir", str(tmp_path / "cli"), "--metrics-port", str(free_port()),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1, result.stderr
    assert "is forbidden" in result.stderr
    assert "missing RBAC rule: apiGroups: [" in result.stderr
    assert "Traceback" not in result.stderr


def _limited_kubeconfig(tenancy: Tenancy, tmp_path: Path) -> Path:
    """A kubeconfig for a host ServiceAccount that may only read DeviceClasses."""
    cluster = tenancy.cluster
    cluster.kubectl("create", "serviceaccount", "limited", "-n", "default")
    cluster.kubectl(
        "create", "clusterrole", "limited", "--verb=get,list,watch",
        "--resource=deviceclasses.resource.k8s.io",
    )  # fmt: skip
    cluster.kubectl(
        "create", "clusterrolebinding", "limited", "--clusterrole=limited",
        "--serviceaccount=default:limited",
    )  # fmt: skip
    token = cluster.kubectl("create", "token", "limited", "-n", "default").stdout.strip()
    path = tmp_path / "limited.kubeconfig"
    source = cluster.kubeconfig.read_text()
    import yaml

    document = yaml.safe_load(source)
    context = document["current-context"]
    user = next(c["context"]["user"] for c in document["contexts"] if c["name"] == context)
    for entry in document["users"]:
        if entry["name"] == user:
            entry["user"] = {"token": token}
    path.write_text(yaml.safe_dump(document))
    return path


def _scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            text = str(response.read().decode())
    except OSError:
        return ""
    return text if "allot_class_devices{" in text else ""
