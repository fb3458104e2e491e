"""``kubectl expose`` then "does my Service select my pods?" with the real kubectl, in the
host and in a tenant: ``kubectl get ep,endpointslices`` and ``kubectl describe svc`` show
the Ready pods' addresses, and ``kubectl apply --prune`` with kubectl's default prune list
(Endpoints among its kinds) works, as with an allowlist; ``kubectl describe ingress`` shows
its backends' endpoints."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.tenancy import Tenancy, seed_platform

pytestmark = pytest.mark.slow
TENANT = "legal-ai"
CONFIG = """apiVersion: v1
kind: ConfigMap
metadata: {name: pruned, labels: {team: blue}}
data: {a: b}
"""


def _check(run: Any, tenancy: Tenancy, prune_dir: Path) -> None:
    run("create", "deployment", "web", "--image=nginx", "--replicas=2", "--port=80")
    run("expose", "deployment", "web", "--port=8080", "--target-port=80")

    def endpoints() -> list[str] | None:
        lines: list[str] = run("get", "ep", "web", "--no-headers", check=False).stdout.split()
        return lines if lines[1:2] == ["127.0.0.1:80,127.0.0.1:80"] else None

    found = tenancy.wait(endpoints, "two ready addresses", timeout=40)
    assert found[0] == "web"
    table = run("get", "endpointslices", "--no-headers").stdout.splitlines()
    rows = [line.split() for line in table if line.startswith("web-")]
    assert [row[1:4] for row in rows] == [["IPv4", "80", "127.0.0.1,127.0.0.1"]]
    described = run("describe", "svc", "web").stdout
    assert re.search(r"\nEndpoints: +127\.0\.0\.1:80,127\.0\.0\.1:80\n", described), described
    (prune_dir / "cm.yaml").write_text(CONFIG)
    pruned = run("apply", "--prune", "-l", "team=blue", "-f", str(prune_dir))
    assert pruned.stdout.split() == ["configmap/pruned", "created"], pruned.stdout
    allowed = run(
        "apply",
        "--prune",
        "-l",
        "team=blue",
        "-f",
        str(prune_dir),
        "--prune-allowlist=core/v1/ConfigMap",
        "--prune-allowlist=core/v1/Endpoints",
    )
    assert allowed.stdout.split() == ["configmap/pruned", "unchanged"]
    run("create", "ingress", "web", "--rule=shop.example/=web:8080")
    ingress = run("describe", "ingress", "web").stdout
    assert "web:8080 (127.0.0.1:80,127.0.0.1:80)" in ingress, ingress
    resources = run("api-resources").stdout
    assert re.search(r"\nendpoints +ep +v1 +true +Endpoints\n", resources), resources
    assert re.search(r"\nendpointslices +discovery\.k8s\.io/v1 +true +EndpointSlice\n", resources)
    explained = run("explain", "endpointslice.endpoints.conditions").stdout
    assert "serving" in explained, explained
    run("delete", "svc", "web")
    assert run("get", "ep", "web", check=False).returncode != 0


def test_exposed_deployments_have_endpoints_in_host_and_tenant(tmp_path: Path) -> None:
    with seed_platform(tmp_path) as tenancy:

        def host(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
            return tenancy.cluster.kubectl(*args, check=check)

        def tenant(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
            return tenancy.as_tenant(TENANT, *args, check=check)

        (tmp_path / "host").mkdir()
        (tmp_path / "tenant").mkdir()
        _check(host, tenancy, tmp_path / "host")
        _check(tenant, tenancy, tmp_path / "tenant")
