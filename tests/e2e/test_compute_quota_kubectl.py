"""ResourceQuota on cpu and memory with the real kubectl (the tester's report: a pod past
``requests.cpu`` was admitted and ``kubectl describe quota`` showed 0 used): the quota is
applied with ``kubectl apply -f``, a pod without requests and a pod past the quota are
refused with kube-apiserver's texts, an admitted pod shows in ``describe``'s Used column,
and deleting it gives the share back."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Cluster, running_platform

pytestmark = pytest.mark.slow

QUOTA = """\
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
  namespace: compute
spec:
  hard:
    requests.cpu: "1"
    requests.memory: 1Gi
    limits.memory: 2Gi
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_platform(tmp_path) as running:
        running.kubectl("create", "namespace", "compute")
        running.kubectl("apply", "-f", "-", stdin=QUOTA)
        yield running


def _pod(name: str, resources: dict[str, Any] | None) -> str:
    container: dict[str, Any] = {"name": "main", "image": "busybox", "command": ["sleep", "60"]}
    if resources is not None:
        container["resources"] = resources
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "compute"},
            "spec": {"containers": [container]},
        }
    )


def _used(cluster: Cluster) -> dict[str, tuple[str, str]]:
    """``kubectl describe quota``'s rows: resource -> (used, hard)."""
    text = cluster.kubectl("describe", "quota", "compute", "-n", "compute").stdout
    rows = [line.split() for line in text.splitlines()]
    return {row[0]: (row[1], row[2]) for row in rows if len(row) == 3 and "." in row[0]}


def _described(cluster: Cluster, expected: dict[str, tuple[str, str]]) -> None:
    deadline = time.monotonic() + 20
    while _used(cluster) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _used(cluster) == expected


def test_compute_quota_is_charged_enforced_and_described(cluster: Cluster) -> None:
    _described(
        cluster,
        {
            "limits.memory": ("0", "2Gi"),
            "requests.cpu": ("0", "1"),
            "requests.memory": ("0", "1Gi"),
        },
    )
    bare = cluster.kubectl("apply", "-f", "-", stdin=_pod("bare", None), check=False)
    assert bare.returncode == 1
    assert bare.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "bare" is '
        "forbidden: failed quota: compute: must specify limits.memory for: main; "
        "requests.cpu for: main; requests.memory for: main"
    )
    big = {"limits": {"cpu": "2", "memory": "512Mi"}}  # requests defaulted from limits
    refused = cluster.kubectl("apply", "-f", "-", stdin=_pod("big", big), check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "big" is '
        "forbidden: exceeded quota: compute, requested: requests.cpu=2, "
        "used: requests.cpu=0, limited: requests.cpu=1"
    )
    fits = {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}
    cluster.kubectl("apply", "-f", "-", stdin=_pod("fits", fits))
    _described(
        cluster,
        {
            "limits.memory": ("512Mi", "2Gi"),
            "requests.cpu": ("500m", "1"),
            "requests.memory": ("256Mi", "1Gi"),
        },
    )
    cluster.kubectl("delete", "pod", "fits", "-n", "compute", "--grace-period=0", "--force")
    _described(
        cluster,
        {
            "limits.memory": ("0", "2Gi"),
            "requests.cpu": ("0", "1"),
            "requests.memory": ("0", "1Gi"),
        },
    )
