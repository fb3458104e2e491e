"""Issue 17's end-to-end story through the real ``allot tenant create`` and ``kubectl``:
seed 000's two tenants in one cohort; research-ai borrows legal-ai's idle A100, then
legal-ai reclaims it: research-ai's pod gets ``DisruptionTarget`` (``PreemptionByAllot``)
and goes, legal-ai's pod runs within seconds, and each tenant's ``kubectl describe`` tells
its side (conditions and Events); ``allot explain`` says what a waiting pod waits for."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from allot.cli.main import main as allot
from tests.e2e.conftest import running_platform
from tests.e2e.tenancy import CLASSES, Tenancy, gpu_pod_spec

pytestmark = pytest.mark.slow
BOTH = {"matchExpressions": [
    {"key": "gpu.platform/tenant", "operator": "In", "values": ["legal-ai", "research-ai"]}
]}  # fmt: skip
SYNC = {"fromHost": {"deviceClasses": {"enabled": True, "selector": BOTH}}}
TENANTS = {
    "legal-ai": {
        "cohort": "gpu-pool",
        "deviceClasses": [{"name": "gpu-whole", "guaranteed": "1"}],
    },
    "research-ai": {
        "cohort": "gpu-pool",
        "deviceClasses": [{"name": "gpu-slice", "guaranteed": "2"}],
        "defaultPriority": 0,
    },
}


def _template() -> dict[str, object]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "a100"},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu-whole"}}
        ]}}},
    }  # fmt: skip


def _pod(name: str, keep: bool = False) -> dict[str, object]:
    metadata: dict[str, object] = {"name": name}
    if keep:  # the preempted pod stays Terminating until the test has read its story
        metadata["finalizers"] = ["example.com/keep"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": gpu_pod_spec("a100", container="main"),
    }


@pytest.fixture(scope="module")
def sharing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    root: Path = tmp_path_factory.mktemp("fair-sharing")
    with running_platform(root) as cluster:
        cluster.kubectl("apply", "-f", str(CLASSES))
        tenancy = Tenancy(cluster, root / "data")
        for name, spec in TENANTS.items():
            path = root / f"{name}.yaml"
            path.write_text(yaml.safe_dump({
                "apiVersion": "allot.dev/v1alpha1", "kind": "Tenant", "metadata": {"name": name},
                "spec": {"deviceClassSelector": BOTH, "sync": SYNC, "sharing": spec},
            }))  # fmt: skip
            tenancy.create_tenant(name, "-f", str(path))
        yield tenancy


def _phase(tenancy: Tenancy, tenant: str, pod: str) -> str:
    found = tenancy.as_tenant(tenant, "get", "pod", pod, "-o", "json", check=False)
    return json.loads(found.stdout)["status"].get("phase", "") if found.returncode == 0 else ""


def _explain(tenancy: Tenancy, tenant: str, pod: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        code = allot(["explain", f"pod/{pod}", "--tenant", tenant,
                      "--data-dir", str(tenancy.data_dir)])  # fmt: skip
    assert code in (0, 1), out.getvalue()
    return out.getvalue()


def test_research_borrows_legals_idle_a100_and_legal_reclaims_it(sharing: Tenancy) -> None:
    tenancy = sharing
    documents = "\n---\n".join(json.dumps(d) for d in (_template(), _pod("trainer", keep=True)))
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=documents)
    tenancy.wait(
        lambda: _phase(tenancy, "research-ai", "trainer") == "Running",
        "research-ai's trainer running on the borrowed A100",
    )
    research = tenancy.as_tenant("research-ai", "describe", "pod", "trainer").stdout
    assert "QuotaReserved" in research
    assert "Quota reserved for pod trainer in research-ai: 1 gpu-whole, 40Gi gpuMemory" in research

    documents = "\n---\n".join(json.dumps(d) for d in (_template(), _pod("contract-summarizer")))
    started = time.monotonic()
    tenancy.as_tenant("legal-ai", "apply", "-f", "-", stdin=documents)
    tenancy.wait(
        lambda: _phase(tenancy, "legal-ai", "contract-summarizer") == "Running",
        "legal-ai's pod running on its reclaimed A100",
    )
    assert time.monotonic() - started < 10, "legal-ai waited more than seconds"

    trainer = tenancy.wait(
        lambda: (
            (pod := tenancy.tenant_json("research-ai", "pod", "trainer"))["metadata"].get(
                "deletionTimestamp"
            )
            and pod
        ),
        "research-ai's trainer terminating",
    )
    (target,) = [c for c in trainer["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"]) == ("True", "PreemptionByAllot")
    reclaim = (
        "Preempted by allot: tenant legal-ai reclaims its guaranteed share borrowed by "
        "research-ai, for legal-ai/default/pod/contract-summarizer"
    )
    assert target["message"] == reclaim
    research = tenancy.as_tenant("research-ai", "describe", "pod", "trainer").stdout
    assert "DisruptionTarget" in research
    assert "Preempted" in research
    assert reclaim in research.replace("\n ", " ") or "tenant legal-ai reclaims" in research

    legal = tenancy.as_tenant("legal-ai", "describe", "pod", "contract-summarizer").stdout
    for told in (
        "waiting for preemption: evicting research-ai/default/pod/trainer (research-ai)",
        "Preempting pod trainer of tenant research-ai",
        "Quota reserved for pod contract-summarizer in legal-ai",
        "Successfully assigned default/contract-summarizer",
    ):
        assert told in legal, (told, legal)
    assert "QuotaReserved" in legal

    tenancy.as_tenant(
        "research-ai", "patch", "pod", "trainer", "--type", "json",
        "-p", json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]),
    )  # fmt: skip


def test_a_borrower_waits_and_explain_says_for_what(sharing: Tenancy) -> None:
    """While legal-ai holds its A100, research-ai's next pod waits for quota: its
    condition, its Event and ``allot explain`` say what is missing."""
    tenancy = sharing
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=json.dumps(_pod("second")))
    waiting = (
        "waiting for quota: needs 1 gpu-whole; research-ai has 0 of 0 guaranteed free; the "
        "cohort gpu-pool lends 0 (legal-ai lends at most 1)"
    )
    pod = tenancy.wait(
        lambda: (
            (p := tenancy.tenant_json("research-ai", "pod", "second"))
            and any(c.get("message") == waiting for c in p["status"].get("conditions") or [])
            and p
        ),
        "research-ai's second pod waiting for quota",
    )
    (reserved,) = [c for c in pod["status"]["conditions"] if c["type"] == "QuotaReserved"]
    assert (reserved["status"], reserved["reason"]) == ("False", "Pending")
    assert waiting in tenancy.as_tenant("research-ai", "describe", "pod", "second").stdout
    explained = _explain(tenancy, "research-ai", "second")
    assert "waits for quota" in explained
    assert waiting in explained


def _explain_error(tenancy: Tenancy, *argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err):
        code = allot(["explain", *argv, "--data-dir", str(tenancy.data_dir)])
    return code, err.getvalue().strip()


def test_explain_of_an_unknown_tenant_names_the_tenants(sharing: Tenancy) -> None:
    code, error = _explain_error(sharing, "pod/contract-summarizer", "--tenant", "nosuch")
    assert code == 1
    assert error == 'error: tenant "nosuch" not found (tenants: legal-ai, research-ai)'


def test_explain_of_a_missing_pod_or_claim_fails_like_kubectl_get(sharing: Tenancy) -> None:
    code, error = _explain_error(sharing, "pod/nosuch", "--tenant", "legal-ai")
    assert code == 1
    assert error == (
        'error: pod "nosuch" not found in namespace default of tenant legal-ai '
        "(or not synced to the host yet)"
    )
    claim = ("resourceclaim/nosuch", "--tenant", "legal-ai", "-n", "ml")
    code, error = _explain_error(sharing, *claim)
    assert code == 1
    assert error.startswith('error: resourceclaim "nosuch" not found in namespace ml of tenant')


HUNGRY_CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "too-many", "namespace": "default"},
    "spec": {
        "devices": {
            "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu-whole", "count": 20}}]
        }
    },
}
HUNGRY_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "hungry", "namespace": "default"},
    "spec": {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        "resourceClaims": [{"name": "g", "resourceClaimName": "too-many"}],
        "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "g"}]}}],
    },
}


def test_explain_without_a_tenant_explains_a_host_pod(sharing: Tenancy) -> None:
    """A platform team's own pod on the host: ``allot explain pod/NAME -n NS`` reads it as
    it reads a tenant's twin (no admission on the host: it just waits for capacity)."""
    documents = "\n---\n".join(json.dumps(d) for d in (HUNGRY_CLAIM, HUNGRY_POD))
    sharing.cluster.kubectl("apply", "-f", "-", stdin=documents)

    def judged() -> bool:
        conditions = sharing.host_json("pod", "hungry", "-n", "default").get("status") or {}
        return any(
            c.get("type") == "PodScheduled" and c.get("status") == "False"
            for c in conditions.get("conditions") or []
        )

    sharing.wait(judged, "the scheduler's verdict on the host pod")
    for target in ("pod/hungry", "resourceclaim/too-many"):
        out = io.StringIO()
        with redirect_stdout(out):
            code = allot(["explain", target, "-n", "default", "--data-dir", str(sharing.data_dir)])
        lines = out.getvalue().splitlines()
        assert code == 1
        assert lines[0] == "pod default/hungry on the host waits for capacity:"
        assert "cannot allocate all claims" in lines[1]
    code, error = _explain_error(sharing, "pod/nosuch", "-n", "default")
    assert code == 1
    assert error == 'error: pod "nosuch" not found in namespace default on the host'
    sharing.cluster.kubectl("delete", "pod", "hungry", "-n", "default")
    sharing.cluster.kubectl("delete", "resourceclaim", "too-many", "-n", "default")
