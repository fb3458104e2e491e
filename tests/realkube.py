"""Real Kubernetes 1.36 for tests: a control plane started from ``make kube``'s binaries.

``running_real_kube(root)`` starts etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok on loopback (``allot.kubeengine.cluster.start``, etcd without
fsync: a test's data is thrown away), publishes a fleet (seed 000's by default) through the
API as ``allot up --engine kubernetes`` does, yields a :class:`RealKube` (kubeconfig, the
real kubectl, the Python client) and stops every process. The ``real_kube`` fixture
(tests/conftest.py) does this once per test module. Nothing here builds: where the
binaries are absent or of another version, ``MISSING`` says why and the tests skip
(``make test`` builds them first, so in CI they are there). ``wait_for`` and the object
builders are what the real-engine tests share: a claim, a claim template, a pod using one
that tolerates the fleet's GPU taint; ``allot(...)`` runs the ``allot`` command;
``allot_up`` runs ``allot up --engine kubernetes`` as a user types it, for the tests of what
only that process does (its banner, Ctrl-C, the tenants' control planes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import Publisher
from allot.kube.client import Client
from allot.kube.remote import RemoteClient
from allot.kubeengine.binaries import bin_dir, missing_or_wrong
from allot.kubeengine.cluster import RealCluster, start
from allot.kubeengine.components import Options
from tests.e2e.conftest import KubectlUser


def _missing() -> str | None:
    problems = missing_or_wrong(bin_dir())
    if not problems:
        return None
    return f"real Kubernetes binaries in {bin_dir()}: {'; '.join(problems)} (run `make kube`)"


ALLOT = str(Path(sys.executable).with_name("allot"))
MISSING = _missing()
needs_real_kube = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
TEST_OPTIONS = Options(unsafe_no_fsync=True, job_seconds=2.0)


@dataclass
class RealKube(KubectlUser):
    cluster: RealCluster
    home: Path

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

    def client(self) -> Client:
        """A new client of the host cluster (close it when done)."""
        return self.cluster.client()


@contextmanager
def running_real_kube(
    root: Path, fleet: Any = SEED_000_FLEET, *, passthrough: bool = False
) -> Iterator[RealKube]:
    """A real control plane on ``root / "data"`` with ``fleet`` published (by the driver
    with ``PassthroughSupport`` when ``passthrough``), until exit."""
    cluster = start(root / "data", port=0, options=TEST_OPTIONS)
    try:
        client = cluster.client()
        try:
            Publisher(RemoteClient(client)).reconcile(parse_fleet(fleet), passthrough=passthrough)
        finally:
            client.close()
        cluster.ready()
        yield RealKube(cluster, root / "home")
    finally:
        cluster.stop()


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def allot(*args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The ``allot`` command as a user types it (``--kubeconfig`` added when given)."""
    extra = ["--kubeconfig", str(kubeconfig)] if kubeconfig else []
    return subprocess.run(
        [ALLOT, *args, *extra], capture_output=True, text=True, timeout=120, check=False
    )


def wait_for(check: Callable[[], Any], what: str, timeout: float = 90) -> Any:
    """``check()``'s first truthy answer, asked every half second; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def requests(device_class: str, count: int = 1) -> list[Any]:
    """One request ``gpu`` for ``count`` devices of ``device_class``."""
    return [{"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}]


def resource_claim(name: str, namespace: str, spec_requests: list[Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": spec_requests}},
    }


def claim_template(name: str, namespace: str, device_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": requests(device_class)}}},
    }


def claim_pod(
    name: str, namespace: str, reference: dict[str, str], **metadata: Any
) -> dict[str, Any]:
    """A pod whose container uses the pod claim ``gpu`` (``reference``:
    ``resourceClaimName`` or ``resourceClaimTemplateName``), tolerating the GPU taint."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, **metadata},
        "spec": {
            "tolerations": [GPU_TOLERATION],
            "resourceClaims": [{"name": "gpu", **reference}],
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}
            ],
        },
    }


@dataclass
class Up(KubectlUser):
    """A running ``allot up --engine kubernetes`` and what its banner said."""

    process: subprocess.Popen[str]
    banner: list[str]
    data_dir: Path
    home: Path

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfigs" / "host.yaml"

    def children(self) -> dict[int, str]:
        """The processes allot started (pid: program), read from /proc, not from allot."""
        pid = self.process.pid
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return {int(child): program_of(int(child)) for child in listed}


def up_environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "ALLOT_DATA_DIR")}
    return {**env, "ALLOT_KUBE_UNSAFE_NO_FSYNC": "1", **extra}


@contextmanager
def allot_up(data_dir: Path, home: Path, **env: str) -> Iterator[Up]:
    """``allot up --engine kubernetes --port 0`` until its last banner line; Ctrl-C after."""
    process = subprocess.Popen(
        [ALLOT, "up", "--engine", "kubernetes", "--port", "0", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=up_environment(**env),
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        while not lines or lines[-1] != "Ctrl-C stops it.":
            line = process.stdout.readline()
            assert line, f"allot up ended early: {lines} {process.communicate()}"
            lines.append(line.rstrip("\n"))
        yield Up(process, lines, data_dir, home)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)


def program_of(pid: int) -> str:
    """The file name of the program process ``pid`` runs ("" once it has ended)."""
    try:
        return Path(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()).name
    except (FileNotFoundError, IndexError):
        return ""
