"""ResourceQuota on cpu and memory with the real kubectl, on the host and in a tenant (the
tester's report: a pod past ``requests.cpu`` was admitted and ``kubectl describe quota``
showed 0 used): the quota is applied with ``kubectl apply -f``, a pod without requests and
a pod past the quota are refused with kube-apiserver's texts, an admitted pod shows in
``describe``'s Used column, and deleting it gives the share back."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import running_platform
from tests.e2e.tenancy import seed_platform

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


Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(params=["host", "tenant"])
def kubectl(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kubectl]:
    """kubectl on the host, or with tenant legal-ai's kubeconfig."""
    if request.param == "host":
        with running_platform(tmp_path) as running:
            yield running.kubectl
    else:
        with seed_platform(tmp_path) as tenancy:
            yield lambda *args, **kwargs: tenancy.as_tenant("legal-ai", *args, **kwargs)


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


def _used(kubectl: Kubectl) -> dict[str, tuple[str, str]]:
    """``kubectl describe quota``'s rows: resource -> (used, hard)."""
    text = kubectl("describe", "quota", "compute", "-n", "compute").stdout
    rows = [line.split() for line in text.splitlines()]
    return {row[0]: (row[1], row[2]) for row in rows if len(row) == 3 and "." in row[0]}


def _described(kubectl: Kubectl, expected: dict[str, tuple[str, str]]) -> None:
    deadline = time.monotonic() + 20
    while _used(kubectl) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _used(kubectl) == expected


def test_compute_quota_is_charged_enforced_and_described(kubectl: Kubectl) -> None:
    kubectl("create", "namespace", "compute")
    kubectl("apply", "-f", "-", stdin=QUOTA)
    _described(
        kubectl,
        {
            "limits.memory": ("0", "2Gi"),
            "requests.cpu": ("0", "1"),
            "requests.memory": ("0", "1Gi"),
        },
    )
    bare = kubectl("apply", "-f", "-", stdin=_pod("bare", None), check=False)
    assert bare.returncode == 1
    assert bare.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "bare" is '
        "forbidden: failed quota: compute: must specify limits.memory for: main; "
        "requests.cpu for: main; requests.memory for: main"
    )
    big = {"limits": {"cpu": "2", "memory": "512Mi"}}  # requests defaulted from limits
    refused = kubectl("apply", "-f", "-", stdin=_pod("big", big), check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "big" is '
        "forbidden: exceeded quota: compute, requested: requests.cpu=2, "
        "used: requests.cpu=0, limited: requests.cpu=1"
    )
    fits = {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}
    kubectl("apply", "-f", "-", stdin=_pod("fits", fits))
    _described(
        kubectl,
        {
            "limits.memory": ("512Mi", "2Gi"),
            "requests.cpu": ("500m", "1"),
            "requests.memory": ("256Mi", "1Gi"),
        },
    )
    kubectl("delete", "pod", "fits", "-n", "compute", "--grace-period=0", "--force")
    _described(
        kubectl,
        {
            "limits.memory": ("0", "2Gi"),
            "requests.cpu": ("0", "1"),
            "requests.memory": ("0", "1Gi"),
        },
    )
