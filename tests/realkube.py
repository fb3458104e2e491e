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
that tolerates the fleet's GPU taint; ``allot(...)`` runs the ``allot`` command.
"""

from __future__ import annotations

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


ALLOT = str(Path(sys.executable).with_name("allot"))
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
