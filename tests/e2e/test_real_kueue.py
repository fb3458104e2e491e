"""Kueue v0.19 on real Kubernetes 1.36: allot's rendered queues admit a tenant's pod.

``make kube`` builds Kueue from the module proxy (tools/kube/kueue); tests/realkueue.py
installs it on the ``real_kube`` control plane as its manifests do (CRDs, webhooks by URL
on 127.0.0.1, its Configuration being allot's rendered ``kueue/configuration.yaml``).
``allot apply`` of ``examples/platform/fair-sharing.yaml`` then creates the Cohort,
ResourceFlavor, WorkloadPriorityClasses, ClusterQueues and LocalQueues in v1beta2 with no
warning from the API server (kubectl's server-side dry run of the rendered file neither;
``--kueue-api v1beta1``'s objects are taken too, each with Kueue's deprecation warning);
Kueue reports the ClusterQueues active and ``allot doctor`` finds them as rendered (and
one edited with kubectl as differing); a pod in legal-ai's namespace naming its LocalQueue,
with a claim template for ``gpu-whole``, is gated by Kueue's pod webhook, admitted in the
ClusterQueue ``legal-ai`` as one ``allot.dev/gpu-whole`` device (the rendered DeviceClass
mapping), released to kube-scheduler, allocated and Running. Without Kueue's binary the
module skips.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.realkube import RealKube, allot, claim_pod, claim_template, wait_for
from tests.realkueue import needs_kueue, running_kueue

pytestmark = [pytest.mark.slow, needs_kueue]
REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "examples" / "platform" / "fair-sharing.yaml"
LEGAL = "tenant-legal-ai"
GATE = "kueue.x-k8s.io/admission"
DEPRECATED = "Warning: This version is deprecated. Use v1beta2 instead."
"""What Kueue's CRDs (0.16 and later) say of every ``kueue.x-k8s.io/v1beta1`` request:
``allot render --kueue-api v1beta1`` is for Kueue 0.14, where v1beta2 is not served."""
UNENFORCED = "GPU-memory share"  # allot's own warning for this file, not the API server's
QUEUES = "30-kueue.yaml"


def _render(out: Path, *options: str) -> Path:
    done = allot("render", "-f", str(PLATFORM), "--out", str(out), *options)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _render(tmp_path_factory.mktemp("rendered"))


@pytest.fixture(scope="module")
def kueue(
    real_kube: RealKube, rendered: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    configuration = yaml.safe_load((rendered / "kueue" / "configuration.yaml").read_text())
    with running_kueue(real_kube, tmp_path_factory.mktemp("kueue"), configuration) as log:
        yield log


def test_the_rendered_queues_are_applied_and_active(real_kube: RealKube, kueue: Path) -> None:
    done = allot("apply", "-f", str(PLATFORM), kubeconfig=real_kube.kubeconfig)
    assert done.returncode == 0, done.stderr
    for line in (
        "cohort/gpu-pool created",
        "resourceflavor/allot-devices created",
        "clusterqueue/legal-ai created",
        "clusterqueue/research-ai created",
        "localqueue/tenant-legal-ai/default created",
    ):
        assert line in done.stdout, done.stdout
    assert [w for w in done.stderr.splitlines() if UNENFORCED not in w] == [], done.stderr

    def active() -> Any:
        queue = real_kube.get_json("clusterqueues.kueue.x-k8s.io", "legal-ai")
        conditions = (queue.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Active" and c["status"] == "True" for c in conditions) and queue

    wait_for(active, "ClusterQueue legal-ai to be active")


def test_kubectl_takes_the_rendered_queues_without_a_warning(
    real_kube: RealKube, kueue: Path, rendered: Path, tmp_path: Path
) -> None:
    def server_dry_run(path: Path) -> str:
        done = real_kube.kubectl(
            "apply", "--server-side", "--dry-run=server", "--field-manager=allot", "-f", str(path)
        )
        assert "clusterqueue.kueue.x-k8s.io/legal-ai serverside-applied" in done.stdout
        return str(done.stderr)

    assert server_dry_run(rendered / QUEUES) == ""
    older = _render(tmp_path / "v1beta1", "--kueue-api", "v1beta1") / QUEUES
    assert server_dry_run(older).splitlines() == [DEPRECATED]  # kubectl prints it once


def _queue_problems(real_kube: RealKube) -> list[str]:
    done = allot("doctor", "-o", "json", kubeconfig=real_kube.kubeconfig)
    assert done.returncode in (0, 1), done.stderr
    found = json.loads(done.stdout)["fairSharing"]
    return [p["message"] for p in found if p["problem"].startswith("clusterQueue")]


def test_doctor_reads_the_queues_as_rendered(real_kube: RealKube, kueue: Path) -> None:
    assert _queue_problems(real_kube) == []
    strategy = '{"spec": {"queueingStrategy": "%s"}}'
    queue = ("patch", "clusterqueues.kueue.x-k8s.io", "research-ai", "--type", "merge", "-p")
    real_kube.kubectl(*queue, strategy % "StrictFIFO")
    try:
        assert _queue_problems(real_kube) == [
            "ClusterQueue research-ai differs from Tenant research-ai in spec.queueingStrategy "
            "(allot apply makes them match)"
        ]
    finally:
        real_kube.kubectl(*queue, strategy % "BestEffortFIFO")


def test_a_tenants_pod_is_admitted_by_its_queue_and_allocated_by_kube_scheduler(
    real_kube: RealKube, kueue: Path
) -> None:
    template = claim_template("one-gpu", LEGAL, "gpu-whole")
    pod = claim_pod(
        "queued",
        LEGAL,
        {"resourceClaimTemplateName": "one-gpu"},
        labels={"kueue.x-k8s.io/queue-name": "default"},
    )
    real_kube.apply(template)
    created = real_kube.kubectl("create", "-f", "-", "-o", "json", stdin=json.dumps(pod))
    gates = [g["name"] for g in json.loads(created.stdout)["spec"].get("schedulingGates") or []]
    assert GATE in gates, gates  # Kueue's pod webhook holds it for its queue

    def admitted() -> Any:
        items = real_kube.get_json("workloads.kueue.x-k8s.io", "-n", LEGAL)["items"]
        return [w for w in items if (w.get("status") or {}).get("admission")]

    [workload] = wait_for(admitted, "Kueue to admit the pod's workload", timeout=120)
    admission = workload["status"]["admission"]
    assert admission["clusterQueue"] == "legal-ai"
    [assignment] = admission["podSetAssignments"]
    assert assignment["resourceUsage"] == {"allot.dev/gpu-whole": "1"}, assignment
    wait_for(
        lambda: (
            real_kube.get_json("pod", "queued", "-n", LEGAL)["status"].get("phase") == "Running"
        ),
        "the admitted pod to run",
    )
    claims = real_kube.get_json("resourceclaims", "-n", LEGAL)["items"]
    [result] = claims[0]["status"]["allocation"]["devices"]["results"]
    assert (result["pool"], result["device"]) == ("a100-whole-pool-0", "gpu-0")
