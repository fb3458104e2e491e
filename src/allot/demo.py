"""``make demo``: seed 000's whole walkthrough on the embedded platform, with real kubectl.

1. ``allot validate`` and ``allot lint`` on the seed's manifests: the platform team's
   original classes are valid but wrong for the real NVIDIA driver (``gpu-slice`` names a
   driver that is never published, ``gpu-whole`` also takes MIG slices); lint says why
   and proposes the corrected selectors.
2. The platform starts (HTTPS on a free loopback port, process runtime) and the simulated
   NVIDIA driver publishes seed 000's fleet: a whole-A100 pool and an A100 split into
   seven 1g.5gb MIG slices.
3. The platform team applies the seed's original classes to the host: they are accepted,
   as Kubernetes accepts them, with kubectl warnings carrying lint's findings. It then
   switches to the corrected catalogue (``examples/tenancy``), which applies silently, and
   creates the tenants ``legal-ai`` and ``research-ai`` from the seed's own vCluster values
   files, with quotas.
4. Each tenant, from its own kubeconfig (``allot tenant connect``), applies its claim and
   workload; the sync carries them to the host, where they are allocated and run.
5. Each tenant's own controllers: research-ai runs a 3-way parallel Indexed Job, each
   pod with its own MIG slice from a template, to completion; legal-ai rolls out a
   2-replica Deployment whose pods share its whole GPU; ``kubectl get jobs,deploy,pods``
   and the pods' devices in each tenant.
6. The payoff: each tenant sees only its class; the host sees both claims with their
   devices and tenants; the logs show a whole A100 and ``MIG 1g.5gb Device 0``.
7. A denied escape (legal-ai claims the slice class) and an exhausted quota (a fifth
   slice for research-ai), with their messages.
8. Fair sharing: the platform team moves both tenants from hard quotas to guaranteed
   shares in one cohort; legal-ai goes idle, research-ai borrows its A100 for a Job; when
   legal-ai's pod comes back it reclaims the GPU: research-ai's pod is preempted
   (``PreemptionByAllot``), legal-ai's runs, and the Job's new pod waits, saying why.
9. Operations: the second slice claim, which no pod uses, stays pending and raises an alert
   (the demo lowers the threshold from 5 minutes to 3 seconds), beside the quota and
   capacity alerts (collected while the walkthrough ran and printed in their own section,
   not between kubectl's lines); the audit log of the walkthrough and usage per tenant.
   Then everything stops, or with ``--keep`` (``make demo DEMO_ARGS=--keep``) the platform
   and its dashboard keep running until Ctrl-C, with the URL, how to sign in and the
   kubeconfigs printed.

Run from the repository root.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from allot.apiserver.server import ServerThread
from allot.cli.main import main as allot_main
from allot.controllers.sandbox import Sandbox, SandboxUnavailable
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import publish
from allot.ops.rules import AlertSettings
from allot.platform import build

EXAMPLES = Path("examples")
KUBECTL = str(Path(sys.executable).with_name("kubectl"))
ORIGINAL_CLASSES = "examples/seeds/000-gpu-deviceclasses.yaml"
CLASSES = "examples/tenancy/platform-classes.yaml"
LINT = [
    "lint",
    ORIGINAL_CLASSES,
    "examples/nvidia/a100-40gb-x1-whole-gpu.yaml",
    "examples/nvidia/a100-40gb-static-mig-7x1g5gb.yaml",
]
HOST_CLAIMS = (
    "custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,"
    "TENANT:.metadata.labels.allot\\.dev/tenant,"
    "DRIVER:.status.allocation.devices.results[0].driver,"
    "POOL:.status.allocation.devices.results[0].pool,"
    "DEVICE:.status.allocation.devices.results[0].device"
)
STEAL = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: borrow-a-slice}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu-slice}}]}}
"""
EXTRA_SLICE = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: research-gpu-slice-NUMBER}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu-slice}}]}}
"""
DEMO_ALERTS = AlertSettings(pending_claim_seconds=3, interval_seconds=0.5)


class AlertLines(logging.Handler):
    """Keeps the alert manager's log lines for the demo's own section."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m allot.demo", description=__doc__)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the platform and its dashboard running after the walkthrough, until Ctrl-C",
    )
    keep = parser.parse_args(argv).keep
    if not EXAMPLES.is_dir():
        print("error: run the demo from the repository root (examples/ not found)", file=sys.stderr)
        return 1
    _allot(
        "Seed 000: the platform team's classes and the tenants' claims are valid objects",
        [
            "validate",
            ORIGINAL_CLASSES,
            "examples/seeds/000-legal-whole-gpu-resourceclaim.yaml",
            "examples/seeds/000-research-gpu-slice-resourceclaim.yaml",
        ],
    )
    _allot("...but the classes are wrong for what the NVIDIA driver publishes", LINT)
    with tempfile.TemporaryDirectory() as scratch:
        previous_home = os.environ.get("HOME")
        os.environ["HOME"] = scratch  # kubectl's discovery cache stays in the scratch folder
        alerts = AlertLines()
        logger = logging.getLogger("allot.alerts")
        logger.addHandler(alerts)
        logger.propagate = False  # not between kubectl's lines: see _operations
        try:
            _platform(Path(scratch) / "data", alerts, keep)
        finally:
            logger.removeHandler(alerts)
            logger.propagate = True
            if previous_home is not None:
                os.environ["HOME"] = previous_home
    print("\n(platform stopped; nothing left running)", flush=True)
    if not keep:
        print("(make demo DEMO_ARGS=--keep keeps the platform and its dashboard running)")
    return 0


def _platform(data: Path, alerts: AlertLines, keep: bool) -> None:
    print("\n=== The embedded platform: host cluster, simulated NVIDIA driver, tenants")
    try:
        Sandbox.find(hidden=[data])
        sandboxed = True
        print("(pods run sandboxed by bubblewrap: no view of the data directory)")
    except SandboxUnavailable as err:
        sandboxed = False
        print(f"warning: pods run unsandboxed here: {err}")
    platform = build(data, runtime="process", alert_settings=DEMO_ALERTS, sandboxed=sandboxed)
    with ServerThread(data, api=platform.server) as server:
        host = server.endpoint.kubeconfigs["host"]
        print(f"(allot API server on {server.endpoint.url}; host KUBECONFIG={host})")
        report = publish(host, parse_fleet(SEED_000_FLEET))
        print(f"(seed 000 fleet: {len(report.nodes_created)} nodes, {report.devices} devices)")
        _kubectl(host, "get", "resourceslices", "-o", "wide")
        print("\n=== The seed's original classes on the host: accepted, but with warnings")
        _kubectl(host, "apply", "-f", ORIGINAL_CLASSES)
        print(f"\n=== The platform team switches to the corrected catalogue ({CLASSES})")
        _kubectl(host, "apply", "-f", CLASSES)
        _kubectl(host, "get", "deviceclasses", "--show-labels")
        _tenants(data)
        _workloads(data)
        _controllers(data)
        _payoff(data, host)
        _refusals(data)
        _fair_sharing(data, host)
        _operations(data, alerts)
        if keep:
            _keep_running(server, data)


def _tenants(data: Path) -> None:
    quotas = {
        "legal-ai": ["--quota", "gpu-whole.deviceclass.resource.k8s.io/devices=1"],
        "research-ai": ["--quota", "gpu-slice.deviceclass.resource.k8s.io/devices=4"],
    }
    for tenant, quota in quotas.items():
        values = f"examples/seeds/000-{tenant}-vcluster-config.yaml"
        _allot(
            f"Tenant {tenant} from the seed's vCluster values file",
            ["tenant", "create", tenant, "-f", values, *quota, "--data-dir", str(data)],
        )
    _allot("The tenants", ["tenant", "list", "--data-dir", str(data)])


def _workloads(data: Path) -> None:
    for tenant in ("legal-ai", "research-ai"):
        print(f"\n=== {tenant} applies its claim and workload from its own kubeconfig")
        workload = f"examples/tenancy/{tenant}-workload.yaml"
        _as(data, tenant, "apply", "-f", workload)
        _as(data, tenant, "wait", "--for=condition=Ready", "pod", "--all", "--timeout=60s")
        _as(data, tenant, "get", "resourceclaims,pods")


def _controllers(data: Path) -> None:
    print("\n=== research-ai's Job controller runs a 3-way parallel Indexed Job on MIG slices")
    _as(data, "research-ai", "apply", "-f", "examples/tenancy/research-ai-indexed-job.yaml")
    _as(data, "research-ai", "wait", "--for=condition=complete", "job/sweep", "--timeout=90s")
    _as(data, "research-ai", "get", "jobs,deploy,pods")
    _as(data, "research-ai", "logs", "-l", "job-name=sweep", "--prefix")
    print("\n=== legal-ai's Deployment controller rolls out 2 replicas sharing its whole GPU")
    _as(data, "legal-ai", "apply", "-f", "examples/tenancy/legal-ai-inference.yaml")
    _as(data, "legal-ai", "rollout", "status", "deployment/contract-search", "--timeout=60s")
    _as(data, "legal-ai", "get", "jobs,deploy,pods")
    _wait_for_logs(data, "legal-ai", "deployment/contract-search")
    _wait_for_claims(data, "research-ai", 1)  # the Job's claims go once its pods are done


def _wait_for_claims(data: Path, tenant: str, count: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        names = _capture(data, tenant, "get", "resourceclaims", "-o", "name").split()
        if len(names) <= count:
            return
        time.sleep(0.2)


def _payoff(data: Path, host: Path) -> None:
    print("\n=== The payoff: each tenant sees only its class ...")
    for tenant in ("legal-ai", "research-ai"):
        _as(data, tenant, "get", "deviceclasses", "--show-labels")
    print("\n=== ... and the host sees both claims, their tenants and devices")
    _kubectl(host, "get", "resourceclaims", "-A", "-o", HOST_CLAIMS)
    print("\n=== The workloads' logs: a whole A100, and one MIG slice")
    _wait_for_logs(data, "legal-ai", "contract-summarizer")
    _wait_for_logs(data, "research-ai", "research-training-job")


def _refusals(data: Path) -> None:
    print("\n=== legal-ai tries to claim the research team's slice class")
    _as(data, "legal-ai", "create", "-f", "-", stdin=STEAL)
    print(
        "\n=== research-ai claims slices 2 to 4 (no pod uses them), then a fifth: its quota is four"
    )
    for number in range(2, 6):
        claim = EXTRA_SLICE.replace("NUMBER", str(number))
        _as(data, "research-ai", "create", "-f", "-", stdin=claim)


WAITING = (
    "custom-columns=POD:.metadata.name,"
    "WAITING:.status.conditions[?(@.type=='QuotaReserved')].message"
)
ENTITLED_BOTH = {
    "matchExpressions": [
        {"key": "gpu.platform/tenant", "operator": "In", "values": ["legal-ai", "research-ai"]}
    ]
}
SHARING = {
    "legal-ai": {"cohort": "gpu-pool", "deviceClasses": [{"name": "gpu-whole", "guaranteed": "1"}]},
    "research-ai": {
        "cohort": "gpu-pool",
        "deviceClasses": [
            {"name": "gpu-slice", "guaranteed": "4"},
            {"name": "gpu-whole", "guaranteed": "0", "borrowingLimit": "1"},
        ],
    },
}


def _fair_sharing(data: Path, host: Path) -> None:
    print("\n=== Fair sharing: the platform team puts both teams in one cohort")
    for tenant, sharing in SHARING.items():
        spec: dict[str, object] = {"quota": None, "sharing": sharing}
        if tenant == "research-ai":  # may now borrow the A100 class too
            spec["deviceClassSelector"] = ENTITLED_BOTH
        patch = json.dumps({"spec": spec}, separators=(",", ":"))
        _kubectl(host, "patch", "tenant", tenant, "--type", "merge", "-p", patch)
    print("\n=== legal-ai goes idle for the night: its guaranteed A100 is lent to the cohort")
    _as(data, "legal-ai", "delete", "deployment/contract-search", "pod/contract-summarizer")
    print("\n=== research-ai borrows it for a training run (a Job asking for a whole GPU)")
    _as(data, "research-ai", "apply", "-f", "examples/tenancy/research-ai-borrow.yaml")
    _as(data, "research-ai", "wait", "--for=condition=Ready", "pod", "-l",
        "job-name=night-training", "--timeout=60s")  # fmt: skip
    _allot(
        "The cohort: research-ai borrows legal-ai's A100",
        ["top", "--once", "--data-dir", str(data)],
    )
    print("\n=== Morning: legal-ai wants its A100 back; its pod reclaims the guarantee")
    _as(data, "legal-ai", "apply", "-f", "examples/tenancy/legal-ai-workload.yaml")
    _as(data, "legal-ai", "wait", "--for=condition=Ready", "pod/contract-summarizer",
        "--timeout=90s")  # fmt: skip
    _as(data, "legal-ai", "get", "events", "--field-selector",
        "involvedObject.name=contract-summarizer", "--sort-by=.lastTimestamp")  # fmt: skip
    print("\n=== research-ai's side: its pod was preempted; the Job's new pod waits for quota")
    _as(data, "research-ai", "get", "events", "--field-selector", "reason=Preempted")
    _as(data, "research-ai", "get", "pods", "-l", "job-name=night-training")
    _as(data, "research-ai", "wait", "--for=condition=QuotaReserved=False", "pod", "-l",
        "job-name=night-training", "--timeout=30s")  # fmt: skip
    _as(data, "research-ai", "get", "pods", "-l", "job-name=night-training", "-o", WAITING)


def _operations(data: Path, alerts: AlertLines) -> None:
    time.sleep(DEMO_ALERTS.pending_claim_seconds + 2 * DEMO_ALERTS.interval_seconds)
    print("\n=== Alerts raised while the walkthrough ran (the platform's log)")
    for line in alerts.lines:
        print(f"  {line}")
    _allot(
        "Alerts (the pending-claim threshold is 3 seconds in the demo)",
        ["alerts", "--data-dir", str(data)],
    )
    _as(data, "research-ai", "describe", "resourceclaim", "research-gpu-slice-2")
    _allot("The audit log of the walkthrough", ["audit", "--data-dir", str(data)])
    _allot("Usage per tenant", ["usage", "--data-dir", str(data)])
    _allot("Capacity per pool and tenant", ["top", "--once", "--data-dir", str(data)])


def _keep_running(server: ServerThread, data: Path) -> None:
    """``--keep``: the platform stays up for the dashboard and kubectl until Ctrl-C."""
    print(f"\n=== The platform keeps running: dashboard at {server.endpoint.url}/ui")
    print(f"  sign in with the host token: allot kubeconfig --token --data-dir {data}")
    for path in sorted((data / "kubeconfigs").glob("*.yaml")):
        print(f"  cluster {path.stem}: export KUBECONFIG={path}")
    # Ctrl-C stops it even when the demo was started with SIGINT ignored (a background
    # job of a script, a CI step), as ``allot up``'s server does for itself
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        print("Ctrl-C stops it.", flush=True)
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        print()


def _wait_for_logs(data: Path, tenant: str, pod: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        result = _capture(data, tenant, "logs", pod)
        if result.strip():
            break
        time.sleep(0.2)
    _as(data, tenant, "logs", pod)


def _capture(data: Path, tenant: str, *args: str) -> str:
    kubeconfig = data / "kubeconfigs" / f"{tenant}.yaml"
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    result = subprocess.run(
        [KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return result.stdout


def _as(data: Path, tenant: str, *args: str, stdin: str | None = None) -> None:
    """``allot tenant connect TENANT -- kubectl ARGS``, shown and run."""
    print(f"[{tenant}]$ kubectl " + " ".join(args), flush=True)
    if stdin is not None:
        kubeconfig = data / "kubeconfigs" / f"{tenant}.yaml"
        _show(
            subprocess.run(
                [KUBECTL, *args],
                input=stdin,
                env={**os.environ, "KUBECONFIG": str(kubeconfig)},
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        )
        return
    allot_main(["tenant", "connect", tenant, "--data-dir", str(data), "--", KUBECTL, *args])
    sys.stdout.flush()


def _kubectl(kubeconfig: Path, *args: str) -> None:
    print("[host]$ kubectl " + " ".join(args), flush=True)
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    _show(
        subprocess.run(
            [KUBECTL, *args], env=env, capture_output=True, text=True, timeout=120, check=False
        )
    )


def _show(result: subprocess.CompletedProcess[str]) -> None:
    print((result.stdout + result.stderr).rstrip(), flush=True)


def _allot(title: str, argv: list[str]) -> None:
    print(f"\n=== {title}")
    print("$ allot " + " ".join(argv), flush=True)
    code = allot_main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    print(f"(exit status {code})", flush=True)


if __name__ == "__main__":
    sys.exit(run())
