"""The isolation suite: every escape in tests/scenarios/isolation.yaml, attempted by a
tenant through the real kubectl with its own kubeconfig, fails with its clear error (or,
for `expect: empty`, finds nothing of the others') and leaves nothing new on the host.
The same attempts below kubectl, over raw HTTPS, are in test_api_escapes.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.tenancy import HOST_JOB, REPO, Tenancy, seed_platform

pytestmark = pytest.mark.slow
SCENARIOS = yaml.safe_load((REPO / "tests" / "scenarios" / "isolation.yaml").read_text())
LONG_NAME = "x" * 250


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    with seed_platform(tmp_path_factory.mktemp("isolation")) as running:
        running.as_tenant(
            "research-ai", "apply", "-f", str(REPO / "examples/tenancy/research-ai-workload.yaml")
        )
        running.as_tenant(
            "legal-ai", "apply", "-f", str(REPO / "examples/tenancy/legal-ai-workload.yaml")
        )
        running.cluster.apply(HOST_JOB)
        running.wait(
            lambda: (
                running.host_objects("tenant-research-ai")
                and running.host_objects("tenant-legal-ai")
            ),
            "both tenants' workloads on the host",
        )
        yield running


def _with_server(tenancy: Tenancy, tenant: str, server: str, tmp_path: Path) -> Path:
    """The tenant's kubeconfig pointed at another cluster's URL (its token unchanged)."""
    config = yaml.safe_load(tenancy.kubeconfig(tenant).read_text())
    url = config["clusters"][0]["cluster"]["server"]
    config["clusters"][0]["cluster"]["server"] = url.rsplit("/", 1)[0] + f"/{server}"
    path = tmp_path / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _host_snapshot(tenancy: Tenancy) -> dict[str, Any]:
    return {
        "tenant": tenancy.host_objects("tenant-legal-ai"),
        "other": tenancy.host_objects("tenant-research-ai"),
        "classes": [c["metadata"]["name"] for c in tenancy.host_json("deviceclasses")["items"]],
        "slices": len(tenancy.host_json("resourceslices")["items"]),
        "tenants": [t["metadata"]["name"] for t in tenancy.host_json("tenants")["items"]],
    }


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_escape_fails(tenancy: Tenancy, scenario: dict[str, Any], tmp_path: Path) -> None:
    before = _host_snapshot(tenancy)
    tenant = scenario["tenant"]
    kubeconfig = tenancy.kubeconfig(tenant)
    if "server" in scenario:
        kubeconfig = _with_server(tenancy, tenant, scenario["server"], tmp_path)
    stdin: str | None
    if "manifest" in scenario:
        text = json.dumps(scenario["manifest"]).replace("LONG_NAME", LONG_NAME)
        args, stdin = ["create", "-f", "-"], text
    else:
        args, stdin = list(scenario["kubectl"]), scenario.get("stdin")
    result = tenancy.cluster.kubectl(*args, stdin=stdin, check=False, kubeconfig=kubeconfig)
    if scenario.get("expect") == "held":
        assert result.returncode == 0, result.stderr
        name = scenario["manifest"]["metadata"]["name"]
        events = tenancy.wait(
            lambda: [e for e in tenancy.tenant_events(tenant, name) if "SyncWaiting" in e],
            f"a SyncWaiting event on {name}",
        )
        assert re.search(scenario["error"], events[0]), events
        assert _host_snapshot(tenancy) == before
        tenancy.as_tenant(tenant, "delete", "pod", name, "--wait=false")
        return
    if scenario.get("expect") == "empty":  # nothing of the others' is in its cluster
        assert result.returncode == 0, result.stderr
        output = result.stdout + result.stderr
        assert re.search(scenario["error"], output), output
        assert not re.search(
            r"research-training-job|research-gpu-slice|host-job|\.default", output
        ), output
        assert _host_snapshot(tenancy) == before
        return
    assert result.returncode != 0, f"the escape succeeded:\n{result.stdout}"
    assert re.search(scenario["error"], result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    assert "Internal error" not in result.stderr
    assert _host_snapshot(tenancy) == before


def test_the_entitled_path_still_works(tenancy: Tenancy) -> None:
    """The suite's baseline: each tenant's own workload is allocated its own class."""
    legal = tenancy.wait(
        lambda: (
            (tenancy.tenant_json("legal-ai", "resourceclaim", "legal-whole-gpu").get("status"))
            or None
        ),
        "legal-ai's claim allocated",
    )
    device = legal["allocation"]["devices"]["results"][0]
    assert device["pool"] == "a100-whole-pool-0"
    research = tenancy.wait(
        lambda: (
            (
                tenancy.tenant_json("research-ai", "resourceclaim", "research-gpu-slice").get(
                    "status"
                )
            )
            or None
        ),
        "research-ai's claim allocated",
    )
    assert research["allocation"]["devices"]["results"][0]["pool"] == "a100-mig-1g5gb-pool-0"


def test_admin_access_through_its_own_namespace_label(tenancy: Tenancy) -> None:
    """Labelling its own namespace for admin access changes nothing on the host."""
    before = _host_snapshot(tenancy)
    tenancy.as_tenant(
        "legal-ai", "label", "namespace", "default", "resource.kubernetes.io/admin-access=true"
    )
    try:
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "admin-again"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {"deviceClassName": "gpu-whole", "adminAccess": True},
                        }
                    ]
                }
            },
        }
        result = tenancy.as_tenant(
            "legal-ai", "create", "-f", "-", stdin=json.dumps(claim), check=False
        )
        assert result.returncode != 0
        assert "the host refuses it" in result.stderr
        assert "admin access to devices requires" in result.stderr
        assert _host_snapshot(tenancy) == before
    finally:
        tenancy.as_tenant(
            "legal-ai", "label", "namespace", "default", "resource.kubernetes.io/admin-access-"
        )
