"""``allot controller`` in two replicas with leader election on a Lease: one leads; killed
with SIGKILL, the other takes over within the lease duration (plus a retry period), raises
the alert that came up meanwhile, raises none twice, and records every allocation and
release once in the audit log they share. Both replicas are processes started and stopped
by PID against the embedded HTTPS API server, on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from allot.apiserver.server import ServerThread, free_port
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import Publisher
from allot.kube.client import Client
from allot.kube.remote import RemoteClient
from allot.ops.audit import AuditLog
from tests.engines import gpu_claim, set_allocated

pytestmark = pytest.mark.slow
LEASE_SECONDS, RENEW_SECONDS, RETRY_SECONDS = 3.0, 2.0, 0.5
MANAGER = "failover-test"


def _until(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {timeout}s")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RemoteClient]:
    with ServerThread(tmp_path / "data") as server:
        api = Client.from_kubeconfig(server.endpoint.kubeconfigs["host"])
        client = RemoteClient(api)
        Publisher(client).reconcile(parse_fleet(SEED_000_FLEET))
        for name in ("allot-system", "team"):
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            client.create(namespace, field_manager=MANAGER)
        client.kubeconfig = server.endpoint.kubeconfigs["host"]  # type: ignore[attr-defined]
        try:
            yield client
        finally:
            api.close()


def _replica(kubeconfig: Path, data: Path, identity: str, log: Path) -> subprocess.Popen[str]:
    command = [
        sys.executable, "-m", "allot.cli.main", "controller",
        "--kubeconfig", str(kubeconfig), "--data-dir", str(data),
        "--metrics-port", str(free_port()), "--interval", "0.3", "--alert-pending-after", "1s",
        "--leader-elect-identity", identity,
        "--leader-elect-lease-duration", f"{LEASE_SECONDS:g}s",
        "--leader-elect-renew-deadline", f"{RENEW_SECONDS:g}s",
        "--leader-elect-retry-period", f"{RETRY_SECONDS:g}s",
    ]  # fmt: skip
    with log.open("w") as stream:  # the child keeps its own descriptor
        return subprocess.Popen(command, stdout=stream, stderr=subprocess.STDOUT, text=True)


def _holder(client: RemoteClient) -> str:
    lease = client.get("Lease", "allot-system", "allot-controller")
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def _alert_for(client: RemoteClient, claim: str) -> bool:
    return any(
        a["spec"]["subject"].get("name") == claim and a["spec"]["rule"] == "ClaimPendingTooLong"
        for a in client.list("Alert")
    )


def _raised(client: RemoteClient, claim: str) -> int:
    events = client.list("Event", "team")
    return sum(
        e.get("count") or 1
        for e in events
        if e["reason"] == "ClaimPendingTooLong" and e["involvedObject"]["name"] == claim
    )


def test_the_passive_replica_takes_over_after_kill_9(cluster: RemoteClient, tmp_path: Path) -> None:
    kubeconfig: Path = cluster.kubeconfig  # type: ignore[attr-defined]
    data = tmp_path / "controller"
    replicas = {
        name: _replica(kubeconfig, data, name, tmp_path / f"{name}.log") for name in ("a", "b")
    }
    try:
        leader = _until(lambda: _holder(cluster), "a replica leading")
        other = "b" if leader == "a" else "a"
        cluster.create(gpu_claim("early"), field_manager=MANAGER)
        _until(lambda: _alert_for(cluster, "early"), "the leader's alert on the early claim")
        cluster.create(gpu_claim("held"), field_manager=MANAGER)
        set_allocated(cluster, "held", True)
        log = data / "audit.db"
        _until(lambda: log.exists() and _actions(log, "held") == ["allocate"], "the allocation")

        os.kill(replicas[leader].pid, signal.SIGKILL)
        killed = time.monotonic()
        replicas[leader].wait(timeout=10)
        cluster.create(gpu_claim("during"), field_manager=MANAGER)  # while nobody leads
        _until(lambda: _holder(cluster) == other, "the takeover", timeout=30)
        took = time.monotonic() - killed
        print(f"takeover after kill -9: {took:.2f}s (lease {LEASE_SECONDS:g}s)")
        _until(lambda: _alert_for(cluster, "during"), "the alert raised after the takeover")
        set_allocated(cluster, "held", False)
        _until(lambda: _actions(log, "held") == ["allocate", "release"], "the release")
        time.sleep(1.0)  # a few more evaluations: nothing is raised twice
        assert _raised(cluster, "early") == 1
        assert _raised(cluster, "during") == 1
        assert _actions(log, "held") == ["allocate", "release"]
    finally:
        for process in replicas.values():
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in replicas.values():
            process.wait(timeout=30)
    assert took <= LEASE_SECONDS + 2 * RETRY_SECONDS + 2.0, took
    lease = cluster.get("Lease", "allot-system", "allot-controller")
    assert lease is not None
    assert lease["spec"]["leaseTransitions"] >= 1
    assert lease["spec"]["holderIdentity"] == ""  # the survivor gave it up on SIGINT
    assert replicas[other].returncode == 130  # interrupted (SIGINT), not failed
    assert "Traceback" not in (tmp_path / f"{other}.log").read_text()


def _actions(path: Path, claim: str) -> list[str]:
    log = AuditLog(path, read_only=True)
    try:
        return [e.action for e in log.entries() if e.host_claim == claim]
    finally:
        log.close()
