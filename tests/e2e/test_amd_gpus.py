"""NVIDIA and AMD GPUs in one fleet through the real kubectl (examples/mixed-vendors/, the
table tests/scenarios/amd-gpus.yaml): a pod asking for ``amd.com/gpu: 1`` runs on an AMD
GPU through DRA extended resources and lists it with ``amd-smi``; tenants are entitled to
classes of either vendor; the GPU-memory quota adds an H100's and an MI300X's memory; a
claim quota counts MI300X compute partitions; two partitions of one parent GPU come
together; ``/metrics`` counts AMD partition profiles as it counts MIG profiles."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import running_platform
from tests.e2e.tenancy import Tenancy
from tests.test_amdgpu import FLEET, SAME_PARENT, SCENARIO

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "mixed-vendors"


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    root = tmp_path_factory.mktemp("amd-gpus")
    with running_platform(root, FLEET) as cluster:
        cluster.kubectl("apply", "-f", str(REPO / SCENARIO["catalogue"]))
        tenancy = Tenancy(cluster, root / "data")
        for name in ("vision", "inference"):
            tenancy.create_tenant(name, "-f", str(EXAMPLES / f"{name}.yaml"))
        yield tenancy


def _pod(name: str, claim: str | None = None, limits: dict[str, str] | None = None) -> Any:
    container: dict[str, Any] = {"name": "main", "image": "rocm/pytorch"}
    spec: dict[str, Any] = {"containers": [container]}
    if claim is not None:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    if limits is not None:
        container["resources"] = {"limits": limits}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _claim(name: str, device_class: str, count: int, same_parent: bool = False) -> Any:
    devices: dict[str, Any] = {
        "requests": [
            {"name": f"r{i}", "exactly": {"deviceClassName": device_class}} for i in range(count)
        ]
    }
    if same_parent:
        devices["constraints"] = [{"matchAttribute": SAME_PARENT}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": devices},
    }


def _as(tenancy: Tenancy, tenant: str, *documents: Any, check: bool = True) -> str:
    stdin = "\n---\n".join(json.dumps(d) for d in documents)
    done = tenancy.as_tenant(tenant, "apply", "-f", "-", stdin=stdin, check=check)
    return done.stdout + done.stderr


def _scheduled(tenancy: Tenancy, namespace: str, pod: str) -> dict[str, Any]:
    def condition() -> dict[str, Any] | None:
        found = tenancy.host_json("pods", "-n", namespace)["items"]
        for item in found:
            if item["metadata"]["name"].startswith(pod):
                conditions = {c["type"]: c for c in item.get("status", {}).get("conditions", [])}
                if "PodScheduled" in conditions:
                    return dict(conditions["PodScheduled"])
        return None

    return dict(tenancy.wait(condition, f"{namespace}/{pod} considered by the scheduler"))


def _results(tenancy: Tenancy, tenant: str, claim: str) -> list[dict[str, Any]]:
    def allocated() -> list[dict[str, Any]] | None:
        found = tenancy.tenant_json(tenant, "resourceclaim", claim)
        allocation = (found.get("status") or {}).get("allocation")
        return list(allocation["devices"]["results"]) if allocation else None

    return list(tenancy.wait(allocated, f"{tenant}'s claim {claim} allocated"))


def test_amd_gpu_through_the_extended_resource(tenancy: Tenancy) -> None:
    cluster = tenancy.cluster
    cluster.apply(_pod("amd", limits={"amd.com/gpu": "1"}))
    cluster.kubectl("wait", "--for=condition=Ready", "pod/amd", "--timeout=20s")
    pod = cluster.get_json("pod", "amd")
    claim = cluster.get_json("resourceclaim", pod["status"]["extendedResourceClaimStatus"][
        "resourceClaimName"
    ])  # fmt: skip
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert result["driver"] == "gpu.amd.com"
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.amd.com"
    logs = cluster.kubectl("logs", "amd").stdout.splitlines()
    assert logs[1] == "[allot] its devices, as amd-smi list lists them:"
    assert logs[2] == "GPU: 0"
    assert logs[3].startswith("    BDF: 0000:")
    assert "GPU: 1" not in logs
    cluster.kubectl("delete", "pod", "amd")


def test_gpu_memory_quota_adds_both_vendors(tenancy: Tenancy) -> None:
    """vision: an MI250 GCD (64Gi) and an H100 (81559Mi) fit its 400Gi; two MI300Xs more
    (2 x 196592Mi) do not."""
    _as(tenancy, "vision", _claim("amd-one", "amd-whole", 1), _pod("amd-one", "amd-one"))
    _as(tenancy, "vision", _claim("h100-one", "nvidia-whole", 1), _pod("h100-one", "h100-one"))
    assert {r["driver"] for r in _results(tenancy, "vision", "amd-one")} == {"gpu.amd.com"}
    assert {r["driver"] for r in _results(tenancy, "vision", "h100-one")} == {"gpu.nvidia.com"}
    _as(tenancy, "vision", _claim("amd-two", "amd-whole", 2), _pod("amd-two", "amd-two"))
    namespace = tenancy.host_json("tenant", "vision")["status"]["namespace"]
    condition = _scheduled(tenancy, namespace, "amd-two")
    assert condition["status"] == "False"
    assert condition["message"] == (
        "0/5 nodes are available: 4 cannot allocate all claims, 1 would exceed the GPU memory "
        "quota of tenant 'vision' (147095Mi allocated + 393184Mi requested > 400Gi)."
    )


def test_claim_quota_counts_compute_partitions_of_one_parent(tenancy: Tenancy) -> None:
    pair = _claim("cpx-pair", "amd-cpx", 2, same_parent=True)
    _as(tenancy, "inference", pair, _pod("cpx-pair", "cpx-pair"))
    results = _results(tenancy, "inference", "cpx-pair")
    slices = tenancy.host_json("resourceslices")["items"]
    attributes = {
        (s["spec"]["pool"]["name"], d["name"]): d["attributes"]
        for s in slices
        for d in s["spec"].get("devices") or []
    }
    parents = {attributes[(r["pool"], r["device"])]["parentDeviceID"]["string"] for r in results}
    assert len(parents) == 1
    assert {r["pool"] for r in results} == {"mi300x-cpx-0"}
    refused = _as(tenancy, "inference", _claim("cpx-three", "amd-cpx", 3), check=False)
    assert "exceeded quota" in refused
    assert "amd-cpx.deviceclass.resource.k8s.io/devices" in refused
    denied = _as(tenancy, "inference", _claim("whole", "amd-whole", 1), check=False)
    assert (
        "device class amd-whole is not in the entitlement of tenant inference (entitled: amd-cpx)"
    ) in denied


def test_metrics_count_amd_partition_profiles(tenancy: Tenancy) -> None:
    scrape = tenancy.cluster.kubectl("get", "--raw", "/metrics").stdout
    row = SCENARIO["capacity"]["profiles"]["cpx_nps4"]
    line = 'allot_partition_profile_devices{driver="gpu.amd.com",node="mi300x-cpx-0",'
    assert any(
        entry.startswith(line) and entry.endswith(f" {float(row['devices'])}")
        for entry in scrape.splitlines()
    ), [e for e in scrape.splitlines() if "partition_profile" in e]
