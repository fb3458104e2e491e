"""What a tenant sees, with the real kubectl through the tenant's kubeconfig: the host nodes
its pods run on (and only while they do), the kubelet's lifecycle events and container ids,
claims generated from templates (read-only, gone with their pod), and a pod's Terminating
state in ``kubectl get pods -w``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import KUBECTL
from tests.e2e.tenancy import REPO, SLICE_TEMPLATE, Tenancy, seed_platform, slice_trainer

pytestmark = pytest.mark.slow
LEGAL = str(REPO / "examples/tenancy/legal-ai-workload.yaml")
NODE = "a100-whole-pool-0"
TEMPLATE = SLICE_TEMPLATE
TRAINER = slice_trainer()


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    with seed_platform(tmp_path_factory.mktemp("views")) as running:
        running.as_tenant("legal-ai", "apply", "-f", LEGAL)
        running.wait(
            lambda: (
                running.tenant_json("legal-ai", "pod", "contract-summarizer")["status"].get("phase")
                == "Running"
            ),
            "the legal pod running",
        )
        yield running


def test_the_nodes_a_tenants_pods_run_on(tenancy: Tenancy) -> None:
    names = tenancy.as_tenant("legal-ai", "get", "nodes", "-o", "name").stdout.split()
    assert names == [f"node/{NODE}"]
    mine = tenancy.tenant_json("legal-ai", "node", NODE)
    host = tenancy.host_json("node", NODE)
    assert mine["metadata"]["labels"] == host["metadata"]["labels"]
    for field in ("capacity", "allocatable", "conditions", "addresses"):
        assert mine["status"][field] == host["status"][field], field
    wide = tenancy.as_tenant("legal-ai", "get", "nodes", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:6] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP"]
    assert wide[1].split()[:2] == [NODE, "Ready"]
    assert tenancy.as_tenant("research-ai", "get", "nodes", "-o", "name").stdout.split() == []


def test_tenants_may_not_write_nodes(tenancy: Tenancy) -> None:
    refused = tenancy.as_tenant("legal-ai", "label", "node", NODE, "mine=yes", check=False)
    assert refused.returncode != 0
    assert "nodes are the host's and read-only in a tenant cluster" in refused.stderr
    deleted = tenancy.as_tenant("legal-ai", "delete", "node", NODE, check=False)
    assert "read-only in a tenant cluster" in deleted.stderr
    assert "mine" not in tenancy.host_json("node", NODE)["metadata"]["labels"]


def test_describe_pod_shows_the_kubelets_events(tenancy: Tenancy) -> None:
    described = tenancy.wait(
        lambda: (
            out
            if "Started"
            in (
                out := tenancy.as_tenant(
                    "legal-ai", "describe", "pod", "contract-summarizer"
                ).stdout
            )
            else None
        ),
        "the Started event relayed",
    )
    events = described.split("Events:", 1)[1]
    for reason, source, message in (
        (
            "Scheduled",
            "default-scheduler",
            f"Successfully assigned default/contract-summarizer to {NODE}",
        ),
        *_pull_events("python:3.12-slim", pulled_here=" Pulling " in events),
        ("Created", "kubelet", "Container created"),
        ("Started", "kubelet", "Container started"),
    ):
        if source == "kubelet":  # kubectl describe names the container the event is about
            message = f"spec.containers{{summarizer}}: {message}"
        assert re.search(rf"Normal\s+{reason}\s+.*{source}\s+{re.escape(message)}", events), reason
    container = tenancy.tenant_json("legal-ai", "pod", "contract-summarizer")["status"][
        "containerStatuses"
    ][0]
    assert re.fullmatch(r"containerd://[0-9a-f]{64}", container["containerID"])
    assert container["imageID"].startswith("docker.io/library/python@sha256:")
    assert re.search(rf"Container ID:\s+{container['containerID']}\n", described)
    assert re.search(rf"Image ID:\s+{re.escape(container['imageID'])}\n", described)


def _pull_events(image: str, pulled_here: bool) -> list[tuple[str, str, str]]:
    """The kubelet's image events: a pull on a node that did not hold the image yet,
    else only ``Pulled`` (the node holds it from an earlier pod of this module)."""
    if pulled_here:
        return [
            ("Pulling", "kubelet", f'Pulling image "{image}"'),
            ("Pulled", "kubelet", f'Successfully pulled image "{image}" in 0s'),
        ]
    present = f'Container image "{image}" already present on machine and can be accessed by the pod'
    return [("Pulled", "kubelet", present)]


def test_claims_generated_from_templates(tenancy: Tenancy) -> None:
    for document in (TEMPLATE, TRAINER):
        tenancy.as_tenant("research-ai", "create", "-f", "-", stdin=json.dumps(document))
    pod = tenancy.wait(
        lambda: (
            p
            if (p := tenancy.tenant_json("research-ai", "pod", "trainer"))
            .get("status", {})
            .get("resourceClaimStatuses")
            else None
        ),
        "the trainer's claim generated",
    )
    claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    assert re.fullmatch(r"trainer-gpu-[a-z0-9]{5}", claim_name)
    claim = tenancy.wait(
        lambda: (
            c
            if (c := tenancy.tenant_json("research-ai", "resourceclaims")["items"])
            and (c[0].get("status") or {}).get("reservedFor")
            else None
        ),
        "the generated claim shown, reserved",
    )[0]
    assert claim["metadata"]["name"] == claim_name
    assert claim["metadata"]["ownerReferences"][0]["name"] == "trainer"
    assert claim["status"]["reservedFor"][0]["name"] == "trainer"
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"].find("-mig-1g5gb-") > 0
    table = tenancy.as_tenant("research-ai", "get", "resourceclaims").stdout
    assert re.search(rf"{claim_name}\s+allocated,reserved", table), table
    refused = tenancy.as_tenant("research-ai", "delete", "resourceclaim", claim_name, check=False)
    assert "generated from a ResourceClaimTemplate for pod trainer" in refused.stderr
    tenancy.as_tenant("research-ai", "delete", "pod", "trainer")
    tenancy.wait(
        lambda: tenancy.tenant_json("research-ai", "resourceclaims")["items"] == [],
        "the generated claim gone with its pod",
    )
    assert tenancy.as_tenant("research-ai", "get", "nodes", "-o", "name").stdout.split() == []


def test_get_pods_watch_shows_terminating_and_nodes_go(tenancy: Tenancy) -> None:
    env = {
        **os.environ,
        "HOME": str(tenancy.cluster.home),
        "KUBECONFIG": str(tenancy.kubeconfig("legal-ai")),
    }
    watch = subprocess.Popen(
        [KUBECTL, "get", "pods", "-w", "--output-watch-events"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    listed = threading.Event()

    def read() -> None:
        assert watch.stdout is not None
        for line in watch.stdout:
            lines.append(line)
            if "contract-summarizer" in line:
                listed.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert listed.wait(30), "the watch listed the pod"
        tenancy.as_tenant("legal-ai", "delete", "pod", "contract-summarizer", "--wait=true")
        tenancy.wait(lambda: any("DELETED" in line for line in lines), "the watch saw DELETED")
    finally:
        watch.terminate()
        watch.wait(10)
        reader.join(10)
        assert watch.stdout is not None
        watch.stdout.close()
    assert any("MODIFIED" in line and "Terminating" in line for line in lines), lines
    tenancy.wait(
        lambda: tenancy.as_tenant("legal-ai", "get", "nodes", "-o", "name").stdout.split() == [],
        "the node gone with the tenant's last pod",
    )
    host_events = tenancy.host_json("events", "-n", "tenant-legal-ai")["items"]
    killing = [e for e in host_events if e.get("reason") == "Killing"]
    assert killing
    assert killing[0]["message"] == "Stopping container summarizer"
    relayed = tenancy.tenant_events("legal-ai", "contract-summarizer")
    assert "Killing: Stopping container summarizer" in relayed


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: inference
spec:
  replicas: 2
  selector:
    matchLabels: {app: inference}
  template:
    metadata:
      labels: {app: inference}
    spec:
      containers:
      - name: server
        image: vllm/vllm-openai
        resources:
          limits:
            deviceclass.resource.kubernetes.io/gpu-whole: "1"
"""


def test_a_deployment_using_a_class_outside_the_entitlement_is_refused(tenancy: Tenancy) -> None:
    refused = tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=DEPLOYMENT, check=False)
    assert refused.returncode != 0
    assert (
        'deployments.apps "inference" is forbidden: spec.template: a pod from this template is '
        "refused: ValidatingAdmissionPolicy 'allot-tenant-pods' with binding "
        "'allot-tenant-pods.research-ai' denied request: the pod requests a DRA extended "
        "resource outside the entitlement of tenant research-ai: "
        "deviceclass.resource.kubernetes.io/gpu-whole (entitled device classes: gpu-slice)"
    ) in refused.stderr
    listed = tenancy.as_tenant("research-ai", "get", "deployments", "-o", "name").stdout
    assert listed.split() == []
    allowed = DEPLOYMENT.replace("gpu-whole", "gpu-slice")
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=allowed)
    listed = tenancy.as_tenant("research-ai", "get", "deployments", "-o", "name").stdout
    assert listed.split() == ["deployment.apps/inference"]
    tenancy.as_tenant("research-ai", "delete", "deployment", "inference")
