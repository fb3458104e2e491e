"""Tenancy end to end with the real kubectl: seed 000's walkthrough on the embedded
platform, class sync following host changes, GPU quotas, deletes both ways, tenant
deletion releasing devices, and a restart that resyncs without duplicates."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.apiserver.server import ServerThread
from allot.cli.main import main as allot
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import publish
from allot.platform import build
from tests.e2e.conftest import Cluster
from tests.e2e.tenancy import REPO, Tenancy, seed_platform

pytestmark = pytest.mark.slow
LEGAL = str(REPO / "examples/tenancy/legal-ai-workload.yaml")
RESEARCH = str(REPO / "examples/tenancy/research-ai-workload.yaml")


@pytest.fixture
def tenancy(tmp_path: Path) -> Iterator[Tenancy]:
    with seed_platform(tmp_path, runtime="process") as running:
        yield running


def _allocated(tenancy: Tenancy, tenant: str, claim: str) -> dict[str, object] | None:
    status = tenancy.tenant_json(tenant, "resourceclaim", claim).get("status") or {}
    return status.get("allocation")


def test_seed_000_walkthrough(tenancy: Tenancy) -> None:
    # each tenant sees only its class
    assert tenancy.as_tenant("legal-ai", "get", "deviceclasses", "-o", "name").stdout.split() == [
        "deviceclass.resource.k8s.io/gpu-whole"
    ]
    assert tenancy.as_tenant(
        "research-ai", "get", "deviceclasses", "-o", "name"
    ).stdout.split() == ["deviceclass.resource.k8s.io/gpu-slice"]
    # and only the devices those classes select
    slices = tenancy.tenant_json("research-ai", "resourceslices")["items"]
    devices = [d["name"] for s in slices for d in s["spec"]["devices"]]
    assert len(devices) == 7
    assert all("-mig-1g5gb-" in d for d in devices)
    tenancy.as_tenant("legal-ai", "apply", "-f", LEGAL)
    tenancy.as_tenant("research-ai", "apply", "-f", RESEARCH)
    tenancy.wait(lambda: _allocated(tenancy, "legal-ai", "legal-whole-gpu"), "legal allocation")
    tenancy.wait(
        lambda: _allocated(tenancy, "research-ai", "research-gpu-slice"), "research allocation"
    )
    host_claims = tenancy.host_json("resourceclaims", "-A")["items"]
    by_name = {c["metadata"]["name"]: c for c in host_claims}
    assert set(by_name) == {"legal-whole-gpu.default", "research-gpu-slice.default"}
    legal = by_name["legal-whole-gpu.default"]
    assert legal["metadata"]["namespace"] == "tenant-legal-ai"
    assert legal["metadata"]["labels"]["allot.dev/tenant"] == "legal-ai"
    assert legal["metadata"]["labels"]["gpu.platform/allocation"] == "whole"
    assert legal["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    # the tenant's pod runs on the host node, its logs pass through
    pod = tenancy.wait(
        lambda: (
            tenancy.tenant_json("legal-ai", "pod", "contract-summarizer")["status"].get("phase")
            == "Running"
            and tenancy.tenant_json("legal-ai", "pod", "contract-summarizer")
        ),
        "legal pod running",
    )
    assert pod["spec"]["nodeName"] == "a100-whole-pool-0"
    claim = tenancy.tenant_json("legal-ai", "resourceclaim", "legal-whole-gpu")
    assert claim["status"]["reservedFor"][0]["name"] == "contract-summarizer"
    assert claim["status"]["reservedFor"][0]["uid"] == pod["metadata"]["uid"]
    logs = tenancy.wait(
        lambda: tenancy.as_tenant("legal-ai", "logs", "contract-summarizer").stdout,
        "legal logs",
    )
    assert "NVIDIA A100-SXM4-40GB" in logs
    assert "MIG" not in logs
    research_logs = tenancy.wait(
        lambda: tenancy.as_tenant("research-ai", "logs", "research-training-job").stdout,
        "research logs",
    )
    assert re.search(r"MIG 1g\.5gb\s+Device\s+0:", research_logs), research_logs


def test_class_sync_follows_host_changes(tenancy: Tenancy) -> None:
    cluster = tenancy.cluster
    cluster.kubectl(
        "label", "deviceclass", "gpu-slice", "gpu.platform/tenant=legal-ai", "--overwrite"
    )
    tenancy.wait(
        lambda: (
            "gpu-slice" in tenancy.as_tenant("legal-ai", "get", "deviceclasses").stdout
            and "gpu-slice" not in tenancy.as_tenant("research-ai", "get", "deviceclasses").stdout
        ),
        "gpu-slice moving from research-ai to legal-ai",
    )
    tenants = {t["metadata"]["name"]: t for t in tenancy.host_json("tenants")["items"]}
    assert tenants["legal-ai"]["status"]["entitledDeviceClasses"] == ["gpu-slice", "gpu-whole"]
    assert tenants["research-ai"]["status"]["conditions"][0]["reason"] == "NoMatchingDeviceClasses"
    cluster.kubectl("annotate", "deviceclass", "gpu-whole", "owner=platform-team")
    tenancy.wait(
        lambda: (
            tenancy.tenant_json("legal-ai", "deviceclass", "gpu-whole")["metadata"]
            .get("annotations", {})
            .get("owner")
            == "platform-team"
        ),
        "an annotation reaching the tenant",
    )
    tenancy.as_tenant("legal-ai", "apply", "-f", RESEARCH)
    cluster.kubectl("delete", "deviceclass", "gpu-slice")
    tenancy.wait(
        lambda: "gpu-slice" not in tenancy.as_tenant("legal-ai", "get", "deviceclasses").stdout,
        "a deleted host class disappearing",
    )
    events = tenancy.wait(
        lambda: [
            e for e in tenancy.tenant_events("legal-ai", "research-gpu-slice") if "Unavailable" in e
        ],
        "a warning on the claim that names the deleted class",
    )
    assert "device class gpu-slice was deleted on the host" in events[0]


def test_gpu_memory_quota_leaves_the_claim_pending(tmp_path: Path) -> None:
    with seed_platform(tmp_path) as tenancy:
        tenancy.create_tenant(
            "small",
            "-f",
            str(_values(tmp_path)),
            "--gpu-memory",
            "39Gi",
        )
        tenancy.as_tenant("small", "apply", "-f", LEGAL)
        message = tenancy.wait(
            lambda: next(
                (
                    c.get("message")
                    for c in tenancy.tenant_json("small", "pod", "contract-summarizer")[
                        "status"
                    ].get("conditions")
                    or []
                    if c.get("type") == "PodScheduled" and c.get("status") == "False"
                ),
                None,
            ),
            "an unschedulable pod",
        )
        assert "would exceed the GPU memory quota of tenant 'small'" in message
        assert "40Gi requested > 39Gi" in message
        assert _allocated(tenancy, "small", "legal-whole-gpu") is None


def _values(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(
        "sync:\n  fromHost:\n    deviceClasses:\n      enabled: true\n      selector:\n"
        "        matchLabels: {gpu.platform/allocation: whole}\n"
    )
    return path


def test_quota_and_deletes_both_ways(tenancy: Tenancy) -> None:
    tenancy.as_tenant("legal-ai", "apply", "-f", LEGAL)
    tenancy.wait(lambda: _allocated(tenancy, "legal-ai", "legal-whole-gpu"), "allocation")
    quota = tenancy.wait(
        lambda: (
            tenancy.host_json("resourcequota", "tenant-quota", "-n", "tenant-legal-ai")
            .get("status", {})
            .get("used", {})
            .get("gpu-whole.deviceclass.resource.k8s.io/devices")
            == "1"
            and tenancy.host_json("resourcequota", "tenant-quota", "-n", "tenant-legal-ai")
        ),
        "quota status",
    )
    assert quota["status"]["hard"]["count/resourceclaims.resource.k8s.io"] == "2"
    described = tenancy.cluster.kubectl("describe", "quota", "-n", "tenant-legal-ai").stdout
    assert "gpu-whole.deviceclass.resource.k8s.io/devices  1     1" in described
    # tenant delete -> host delete
    tenancy.as_tenant("legal-ai", "delete", "pod", "contract-summarizer", "--wait=false")
    tenancy.wait(
        lambda: "Pod/contract-summarizer.default" not in tenancy.host_objects("tenant-legal-ai"),
        "host pod deleted",
    )
    tenancy.wait(lambda: not _allocated(tenancy, "legal-ai", "legal-whole-gpu"), "release")
    # host delete -> tenant delete
    tenancy.cluster.kubectl(
        "delete", "resourceclaim", "legal-whole-gpu.default", "-n", "tenant-legal-ai"
    )
    tenancy.wait(
        lambda: (
            "legal-whole-gpu"
            not in tenancy.as_tenant("legal-ai", "get", "resourceclaims", "-o", "name").stdout
        ),
        "tenant claim deleted after its host twin",
    )


def test_tenant_delete_releases_everything(tenancy: Tenancy) -> None:
    tenancy.as_tenant("legal-ai", "apply", "-f", LEGAL)
    tenancy.wait(lambda: _allocated(tenancy, "legal-ai", "legal-whole-gpu"), "allocation")
    assert allot(["tenant", "delete", "legal-ai", "--data-dir", str(tenancy.data_dir)]) == 0
    tenancy.wait(
        lambda: tenancy.host_objects("tenant-legal-ai") == [], "host objects gone", timeout=5
    )
    namespaces = [n["metadata"]["name"] for n in tenancy.host_json("namespaces")["items"]]
    assert "tenant-legal-ai" not in namespaces
    bindings = [
        b["metadata"]["name"]
        for b in tenancy.host_json("validatingadmissionpolicybindings")["items"]
    ]
    assert not [b for b in bindings if b.endswith(".legal-ai")]
    assert not tenancy.kubeconfig("legal-ai").exists()
    # the whole A100 is free again: another tenant entitled to it gets it
    tenancy.cluster.kubectl(
        "label", "deviceclass", "gpu-whole", "gpu.platform/tenant=research-ai", "--overwrite"
    )
    tenancy.wait(
        lambda: "gpu-whole" in tenancy.as_tenant("research-ai", "get", "deviceclasses").stdout,
        "class moved",
    )
    tenancy.as_tenant("research-ai", "apply", "-f", LEGAL)
    allocation = tenancy.wait(
        lambda: _allocated(tenancy, "research-ai", "legal-whole-gpu"), "reallocation"
    )
    assert json.dumps(allocation).count("gpu-0") == 1


def test_restart_resyncs_without_duplicates(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with seed_platform(tmp_path) as tenancy:
        tenancy.as_tenant("legal-ai", "apply", "-f", LEGAL)
        tenancy.wait(lambda: _allocated(tenancy, "legal-ai", "legal-whole-gpu"), "allocation")
        before = tenancy.host_objects("tenant-legal-ai")
    with ServerThread(data, api=build(data).server) as server:
        publish(server.endpoint.kubeconfigs["host"], parse_fleet(SEED_000_FLEET))
        again = Tenancy(Cluster(server, tmp_path / "home"), data)
        time.sleep(1.0)
        again.as_tenant("legal-ai", "apply", "-f", LEGAL)
        time.sleep(0.5)
        assert again.host_objects("tenant-legal-ai") == before
        assert len(again.tenant_json("legal-ai", "deviceclasses")["items"]) == 1
        assert _allocated(again, "legal-ai", "legal-whole-gpu")


def test_tenant_deleted_while_its_objects_are_syncing(tenancy: Tenancy) -> None:
    """Claims and pods created and the tenant deleted at once: nothing is orphaned."""
    documents = []
    for index in range(5):
        name = f"burst-{index}"
        documents.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": name},
                "spec": {
                    "devices": {
                        "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu-slice"}}]
                    }
                },
            }
        )
    tenancy.as_tenant(
        "research-ai", "create", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in documents)
    )
    assert allot(["tenant", "delete", "research-ai", "--data-dir", str(tenancy.data_dir)]) == 0
    time.sleep(0.5)
    assert tenancy.host_objects("tenant-research-ai") == []
    claims = tenancy.host_json("resourceclaims", "-A")["items"]
    assert not [c for c in claims if c["metadata"]["namespace"] == "tenant-research-ai"]
    configmaps = tenancy.host_json("configmaps", "-n", "allot-system")["items"]
    assert [c["metadata"]["name"] for c in configmaps] == ["entitlement-legal-ai"]
    result = tenancy.as_tenant("research-ai", "get", "pods", check=False)
    assert result.returncode != 0
