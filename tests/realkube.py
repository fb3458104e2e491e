"""Real Kubernetes 1.36 for tests: a control plane started from ``make kube``'s binaries.

``running_real_kube(root)`` starts etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok on loopback (``allot.kubeengine.cluster.start``, etcd without
fsync: a test's data is thrown away), publishes a fleet (seed 000's by default) through the
API as ``allot up --engine kubernetes`` does, yields a :class:`RealKube` (kubeconfig, the
real kubectl, the Python client) and stops every process. The ``real_kube`` fixture
(tests/conftest.py) does this once per test module. Nothing here builds: where the
binaries are absent or of another version, ``MISSING`` says why and the tests skip
(``make test`` builds them first, so in CI they are there).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import Publisher
from allot.kube.client import Client
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
            Publisher(client).reconcile(parse_fleet(fleet), passthrough=passthrough)
        finally:
            client.close()
        cluster.ready()
        yield RealKube(cluster, root / "home")
    finally:
        cluster.stop()
