"""The workload API through the real kubectl, on the host and in a tenant cluster:
``kubectl apply`` of ordinary Deployment/StatefulSet/Job/CronJob/Service/ServiceAccount/
Secret manifests, ``kubectl get`` with upstream's columns, ``/status`` writes and
``kubectl explain``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import running_platform
from tests.e2e.tenancy import CLASSES, Tenancy

MANIFEST = Path(__file__).resolve().parents[1] / "data" / "workloads" / "all-kinds.yaml"
Kubectl = Callable[..., Any]


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    root = tmp_path_factory.mktemp("workload-api")
    with running_platform(root) as cluster:
        cluster.kubectl("apply", "-f", str(CLASSES))
        running = Tenancy(cluster, root / "data")
        running.create_tenant("legal-ai")
        yield running


def kubectl_for(tenancy: Tenancy, where: str) -> Kubectl:
    if where == "host":
        return tenancy.cluster.kubectl
    return lambda *args, **kw: tenancy.as_tenant(where, *args, **kw)


def header(output: str) -> list[list[str]]:
    """The header line of each table in ``kubectl get`` output."""
    blocks = [b for b in output.strip().split("\n\n") if b.strip()]
    return [b.splitlines()[0].split() for b in blocks]


@pytest.mark.parametrize("where", ["host", "legal-ai"])
def test_apply_and_get_every_workload_kind(tenancy: Tenancy, where: str) -> None:
    kubectl = kubectl_for(tenancy, where)
    created = kubectl("apply", "-f", str(MANIFEST)).stdout.splitlines()
    assert created == [
        "deployment.apps/web created",
        "statefulset.apps/trainer created",
        "job.batch/pi created",
        "cronjob.batch/nightly created",
        "service/web created",
        "service/trainer created",
        "serviceaccount/trainer created",
        "secret/registry-token created",
    ]
    again = kubectl("apply", "-f", str(MANIFEST)).stdout
    assert "deployment.apps/web unchanged" in again
    assert "job.batch/pi unchanged" in again
    tables = kubectl("get", "deploy,rs,sts,job,cronjob,svc,sa,secret").stdout
    assert header(tables) == [
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        ["NAME", "READY", "AGE"],
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"],
        ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
        ["NAME", "AGE"],
        ["NAME", "TYPE", "DATA", "AGE"],
    ]
    assert "deployment.apps/web   0/2" in tables
    assert "job.batch/pi   Running   0/3" in tables
    assert "cronjob.batch/nightly   @daily     Europe/Paris   False" in tables
    assert "secret/registry-token   Opaque   1" in tables
    service = json.loads(kubectl("get", "svc", "web", "-o", "json").stdout)
    assert service["spec"]["clusterIP"].startswith("10.")
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}
    ]
    assert kubectl("get", "svc", "trainer", "-o", "jsonpath={.spec.clusterIP}").stdout == "None"


@pytest.mark.parametrize("where", ["host", "legal-ai"])
def test_status_subresource_and_explain(tenancy: Tenancy, where: str) -> None:
    kubectl = kubectl_for(tenancy, where)
    kubectl("apply", "-f", str(MANIFEST))
    status = '{"status":{"replicas":2,"readyReplicas":1,"updatedReplicas":2}}'
    kubectl("patch", "deploy/web", "--subresource=status", "--type=merge", "-p", status)
    row = kubectl("get", "deploy", "web", "--no-headers").stdout.split()
    assert row[:3] == ["web", "1/2", "2"]
    explained = kubectl("explain", "deployment.spec.strategy").stdout
    assert "rollingUpdate" in explained
    assert "KIND:       Deployment" in explained
