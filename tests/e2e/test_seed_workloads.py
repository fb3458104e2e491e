"""The seeds' workloads run verbatim in tenants (issue 16): seed 001's Job and Deployment
in research-ai and seed 004's template and pod in legal-ai, applied with the real kubectl
through each tenant's own kubeconfig, with only the class names changed to the tenant's
entitlement. They run on seed 000's GPUs (without the GKE node taint, which the seeds'
manifests do not tolerate) and show their devices in ``kubectl logs``: each container of
the Deployment only the slice of its own request.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from tests.e2e.conftest import running_platform
from tests.e2e.tenancy import CLASSES, REPO, SEEDS, Tenancy

pytestmark = pytest.mark.slow
DATA = REPO / "tests" / "data" / "seed-workloads"


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    root = tmp_path_factory.mktemp("seed-workloads")
    fleet = yaml.safe_load((DATA / "fleet.yaml").read_text())
    with running_platform(root, fleet=fleet) as cluster:
        cluster.kubectl("apply", "-f", str(CLASSES))
        tenancy = Tenancy(cluster, root / "data")
        for tenant in ("legal-ai", "research-ai"):
            values = SEEDS / f"000-{tenant}-vcluster-config.yaml"
            tenancy.create_tenant(tenant, "-f", str(values))
        yield tenancy


def _seed_001(kind: str) -> str:
    """One document of seed 001's workloads, as the seed wrote it."""
    documents = yaml.safe_load_all((SEEDS / "001-workloads.yaml").read_text())
    (document,) = [d for d in documents if d["kind"] == kind]
    return yaml.safe_dump(document)


def test_seed_001_job_runs_to_completion_on_a_mig_slice(tenancy: Tenancy) -> None:
    templates = str(DATA / "research-ai-templates.yaml")
    tenancy.as_tenant("research-ai", "apply", "-f", templates)
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=_seed_001("Job"))
    tenancy.as_tenant(
        "research-ai", "wait", "--for=condition=complete", "job/finetune-qwen", "--timeout=60s"
    )
    job = tenancy.tenant_json("research-ai", "job", "finetune-qwen")
    assert job["status"]["succeeded"] == 1
    logs = tenancy.as_tenant("research-ai", "logs", "job/finetune-qwen").stdout
    assert "MIG 1g.5gb" in logs
    listing = tenancy.as_tenant("research-ai", "get", "jobs").stdout
    assert "finetune-qwen   Complete   1/1" in listing


def test_seed_001_deployment_becomes_available_with_two_slices_per_pod(
    tenancy: Tenancy,
) -> None:
    templates = str(DATA / "research-ai-templates.yaml")
    tenancy.as_tenant("research-ai", "apply", "-f", templates)
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=_seed_001("Deployment"))
    tenancy.as_tenant(
        "research-ai", "rollout", "status", "deployment/mig-inference", "--timeout=60s"
    )
    deployment = tenancy.tenant_json("research-ai", "deployment", "mig-inference")
    assert deployment["status"]["availableReplicas"] == 2
    pods = tenancy.tenant_json("research-ai", "pods", "-l", "app=mig-inference")["items"]
    assert len(pods) == 2
    for pod in pods:
        name = pod["metadata"]["name"]
        slices = []
        for container in ("primary-model", "embedding-model"):
            logs = tenancy.as_tenant("research-ai", "logs", name, "-c", container).stdout
            (line,) = [line for line in logs.splitlines() if "MIG 1g.5gb" in line]  # its own
            slices.append(line.split("UUID: ")[1])
        assert slices[0] != slices[1]
        statuses = pod["status"]["resourceClaimStatuses"]
        claim = statuses[0]["resourceClaimName"]
        generated = tenancy.tenant_json("research-ai", "resourceclaim", claim)
        devices = generated["status"]["allocation"]["devices"]["results"]
        assert sorted(d["request"] for d in devices) == ["large-slice", "small-slice"]


def test_seed_004_template_and_pod_run_in_their_namespace(tenancy: Tenancy) -> None:
    text = (SEEDS / "004-gpu-40g.yaml").read_text()
    entitled = text.replace("deviceClassName: gpu.nvidia.com", "deviceClassName: gpu-whole")
    assert entitled != text
    tenancy.as_tenant("legal-ai", "create", "namespace", "ml")
    tenancy.as_tenant("legal-ai", "apply", "-f", "-", stdin=entitled)

    def logs() -> str:
        result = tenancy.as_tenant("legal-ai", "logs", "dra-train", "-n", "ml", check=False)
        return result.stdout if "GPU 0" in result.stdout else ""

    text = tenancy.wait(logs, "dra-train's logs", timeout=30)
    assert "NVIDIA A100-SXM4-40GB" in text
