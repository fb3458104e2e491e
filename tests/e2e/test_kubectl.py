"""The real kubectl 1.37 against the embedded API server, command by command."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES
from tests.e2e.conftest import Cluster

SEEDS = EXAMPLES / "seeds"
pytestmark = pytest.mark.slow


def test_version_and_discovery(cluster: Cluster) -> None:
    assert "Server Version: v1.36.0" in cluster.kubectl("version").stdout
    resources = cluster.kubectl("api-resources").stdout
    for line in ("deviceclasses ", "resourceclaims ", "resourceslices ", "pods "):
        assert line in resources


def test_apply_get_and_output_formats(cluster: Cluster) -> None:
    out = cluster.kubectl("apply", "-f", str(SEEDS / "000-gpu-deviceclasses.yaml")).stdout
    assert out.splitlines() == [
        "deviceclass.resource.k8s.io/gpu-slice created",
        "deviceclass.resource.k8s.io/gpu-whole created",
    ]
    again = cluster.kubectl("apply", "-f", str(SEEDS / "000-gpu-deviceclasses.yaml")).stdout
    assert "unchanged" in again
    labels = cluster.kubectl("get", "deviceclasses", "--show-labels").stdout.splitlines()
    assert labels[0].split() == ["NAME", "AGE", "LABELS"]
    assert "gpu.platform/tenant=legal-ai" in labels[2]
    cluster.kubectl("create", "-f", str(SEEDS / "000-legal-whole-gpu-resourceclaim.yaml"))
    table = cluster.kubectl("get", "resourceclaims", "-A").stdout.splitlines()
    assert table[0].split() == ["NAMESPACE", "NAME", "STATE", "AGE"]
    assert table[1].split()[:3] == ["default", "legal-whole-gpu", "pending"]
    document = json.loads(
        cluster.kubectl("get", "resourceclaim", "legal-whole-gpu", "-o", "json").stdout
    )
    assert document["kind"] == "ResourceClaim"
    assert document["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    path = cluster.kubectl(
        "get",
        "resourceclaim",
        "legal-whole-gpu",
        "-o",
        "jsonpath={.spec.devices.requests[0].exactly.deviceClassName}",
    )
    assert path.stdout == "gpu-whole"
    assert (
        "legal-whole-gpu"
        in cluster.kubectl("get", "resourceclaims", "-l", "gpu.platform/tenant=legal-ai").stdout
    )
    assert (
        "No resources found"
        in cluster.kubectl("get", "resourceclaims", "-l", "gpu.platform/tenant=nobody").stderr
    )
    assert "metadata:" in cluster.kubectl("get", "deviceclass", "gpu-whole", "-o", "yaml").stdout


def test_server_side_apply_creates_and_updates(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "ml")
    out = cluster.kubectl("apply", "--server-side", "-f", str(SEEDS / "004-gpu-40g.yaml")).stdout
    assert "resourceclaimtemplate.resource.k8s.io/gpu-40g serverside-applied" in out
    wide = cluster.kubectl("get", "pods", "-n", "ml", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]


def _reapplied(device_class: str) -> str:
    """A claim and a template with the same minimal spec (nothing defaulted written out)."""
    spec = {
        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}
    }
    metadata = {"name": "reapplied", "namespace": "default"}
    claim = {"kind": "ResourceClaim", "metadata": metadata, "spec": spec}
    template = {"kind": "ResourceClaimTemplate", "metadata": metadata, "spec": {"spec": spec}}
    documents = [{"apiVersion": "resource.k8s.io/v1", **d} for d in (claim, template)]
    return yaml.safe_dump_all(documents)


QUANTITY_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: quantity-operator}
spec:
  selectors:
  - cel: {expression: "device.capacity['gpu.nvidia.com'].memory >= quantity('40Gi')"}
"""


def test_reapplying_unchanged_claims_succeeds(cluster: Cluster) -> None:
    """kubectl sends the whole (atomic) request list again; defaults make it equal."""
    manifest = _reapplied("gpu.example.com")
    assert "created" in cluster.kubectl("apply", "-f", "-", stdin=manifest).stdout
    again = cluster.kubectl("apply", "-f", "-", stdin=manifest).stdout.splitlines()
    assert [line.split()[1] for line in again] == ["configured", "configured"]
    # server-side, the request list (atomic) would lose the defaults client-side apply's
    # create wrote, so it conflicts with that manager (its last-applied lacks them too),
    # as upstream's field manager answers; forcing takes the list, defaulted again
    conflict = cluster.kubectl("apply", "--server-side", "-f", "-", stdin=manifest, check=False)
    assert conflict.returncode == 1
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using '
        "resource.k8s.io/v1: .spec.devices.requests" in conflict.stderr
    )
    served = cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=manifest
    ).stdout
    assert served.count("serverside-applied") == 2
    changed = _reapplied("other.example.com")
    refused = cluster.kubectl("apply", "-f", "-", stdin=changed, check=False)
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error from server (Invalid): error when applying patch")
    assert "field is immutable" in refused.stderr


def test_strict_field_validation_and_invalid_objects(cluster: Cluster) -> None:
    result = cluster.kubectl("apply", "-f", str(SEEDS / "001-dra-manifests.yaml"), check=False)
    assert result.returncode == 1
    assert (
        'strict decoding error: unknown field "spec.devices.requests[0].deviceClassName"'
        in result.stderr
    )
    assert (
        "found no matching overload for '_>=_' applied to '(kubernetes.Quantity, "
        "kubernetes.Quantity)'" in result.stderr
    )
    # allot validate's hints reach kubectl apply as warnings (issue 28), the errors stay
    # upstream's: the v1beta1-shaped request and the Quantity compared with >=
    warned = [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    assert any("has the v1beta1 shape: in resource.k8s.io/v1, move" in w for w in warned)
    assert any("Quantities cannot be compared with '>=' in CEL" in w for w in warned)
    created = cluster.kubectl("create", "-f", "-", stdin=QUANTITY_CLASS, check=False)
    assert created.returncode == 1
    assert created.stderr.startswith(
        "Warning: spec.selectors[0].cel.expression: Quantities cannot be compared with '>=' in "
        "CEL; write a.compareTo(b) >= 0"
    )
    # one cause, so kubectl prints it on the line, as against kube-apiserver: the hint is
    # no cause any more
    invalid = 'The DeviceClass "quantity-operator" is invalid: spec.selectors[0].cel.expression'
    assert f"\n{invalid}: Invalid value: " in created.stderr
    assert "hint:" not in created.stderr
    missing = cluster.kubectl("get", "resourceclaim", "nope", check=False)
    assert (
        missing.stderr.strip()
        == 'Error from server (NotFound): resourceclaims.resource.k8s.io "nope" not found'
    )


UNSERVED = """
apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec: {limits: [{type: Container, default: {cpu: 500m}}]}
"""


def test_a_kind_allot_does_not_serve_gets_kubectls_own_answer(cluster: Cluster) -> None:
    """kubectl validates a kind missing from the OpenAPI v3 documents against /openapi/v2;
    finding nothing there, it says the kind is not served, as against kube-apiserver."""
    for verb in ("apply", "create"):
        result = cluster.kubectl(verb, "-f", "-", stdin=UNSERVED, check=False)
        assert result.returncode == 1
        assert 'no matches for kind "LimitRange" in version "v1"' in result.stderr, result.stderr
        assert "openapi" not in result.stderr


def test_patch_label_describe_delete(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", str(SEEDS / "000-research-gpu-slice-resourceclaim.yaml"))
    cluster.kubectl("label", "resourceclaim", "research-gpu-slice", "team=research")
    cluster.kubectl(
        "patch",
        "resourceclaim",
        "research-gpu-slice",
        "--type=merge",
        "-p",
        '{"metadata":{"annotations":{"owner":"lab"}}}',
    )
    cluster.kubectl(
        "patch",
        "resourceclaim",
        "research-gpu-slice",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/metadata/labels/extra","value":"yes"}]',
    )
    refused = cluster.kubectl(
        "patch",
        "resourceclaim",
        "research-gpu-slice",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/nosuch/x","value":1}]',
        check=False,
    )
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "The request is invalid: patch: jsonpatch replace operation does not apply: "
        "doc is missing path: /spec/nosuch/x"
    )
    described = cluster.kubectl("describe", "resourceclaim", "research-gpu-slice").stdout
    assert "team=research" in described
    assert "owner: lab" in described
    out = cluster.kubectl("delete", "resourceclaim", "research-gpu-slice").stdout
    assert 'resourceclaim.resource.k8s.io "research-gpu-slice" deleted' in out
    assert (
        cluster.kubectl("get", "resourceclaim", "research-gpu-slice", check=False).returncode == 1
    )


def test_explain_uses_the_served_schemas(cluster: Cluster) -> None:
    out = cluster.kubectl("explain", "resourceclaim.spec.devices").stdout
    assert "KIND:       ResourceClaim" in out
    for field in ("config", "constraints", "requests"):
        assert f"  {field}\t<" in out
    assert "ordered alternatives under 'firstAvailable'" in " ".join(out.split())


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("tenant.spec", "Labels of the host DeviceClasses the tenant may claim from"),
        ("tenant.spec.sharing", "Tenants of the same cohort lend each other"),
        ("resourceclaim.spec", "What the claim asks for"),
        ("resourceclaim", "The group and version this object is written in"),
    ],
)
def test_explain_describes_tenants_and_claims(cluster: Cluster, path: str, says: str) -> None:
    """Issue 28: ``<no description>`` under tenant.spec, ``<empty>`` for resourceclaim.spec."""
    out = cluster.kubectl("explain", path).stdout
    assert "<no description>" not in out, out
    assert "<empty>" not in out, out
    assert says in " ".join(out.split())


def test_watch_and_wait(cluster: Cluster, tmp_path: Path) -> None:
    for name, container in (("qwen-inference", "vllm"), ("embedding-service", "embedder")):
        cluster.kubectl(
            "create",
            "-f",
            "-",
            stdin=json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name},
                    "spec": {"containers": [{"name": container, "image": "vllm/vllm-openai"}]},
                }
            ),
        )
    results: dict[str, subprocess.CompletedProcess[str]] = {}

    def run(key: str, *args: str) -> None:
        results[key] = cluster.kubectl(*args, check=False, timeout=60)

    waiters = [
        threading.Thread(
            target=run,
            args=("ready", "wait", "--for=condition=Ready", "pod/qwen-inference", "--timeout=30s"),
        ),
        threading.Thread(
            target=run,
            args=(
                "phase",
                "wait",
                "--for=jsonpath={.status.phase}=Running",
                "pod/qwen-inference",
                "--timeout=30s",
            ),
        ),
        threading.Thread(target=run, args=("watch", "get", "pods", "-w", "--request-timeout=6s")),
    ]
    for thread in waiters:
        thread.start()
    time.sleep(2)
    cluster.kubectl(
        "patch",
        "pod",
        "qwen-inference",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(
            {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
        ),
    )
    for thread in waiters:
        thread.join(timeout=60)
    assert results["ready"].stdout.strip() == "pod/qwen-inference condition met"
    assert results["phase"].stdout.strip() == "pod/qwen-inference condition met"
    watched = results["watch"].stdout.splitlines()
    assert watched[0].split()[:3] == ["NAME", "READY", "STATUS"]
    assert any("qwen-inference" in line and "Running" in line for line in watched[1:])


def test_logs(cluster: Cluster) -> None:
    log = (
        cluster.server.api.registry.logs_dir
        / "host"
        / "default"
        / "embedding-service"
        / "embedder.log"
    )
    missing = cluster.kubectl("logs", "embedding-service", check=False)
    assert 'container "embedder" in pod "embedding-service" is waiting to start' in missing.stderr
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("line 1\nline 2\n")
    assert cluster.kubectl("logs", "embedding-service").stdout == "line 1\nline 2\n"
    assert cluster.kubectl("logs", "embedding-service", "--tail=1").stdout == "line 2\n"


def test_a_server_dry_run_delete_deletes_nothing(cluster: Cluster) -> None:
    """kubectl sends ``--dry-run=server`` of a delete in the DeleteOptions body."""
    cluster.kubectl("create", "namespace", "dry-ns")
    cluster.kubectl("create", "configmap", "dry-cm", "-n", "dry-ns")
    cluster.kubectl("create", "deployment", "dry-dep", "--image=busybox", "-n", "dry-ns")
    for target in (
        ["cm/dry-cm", "-n", "dry-ns"],
        ["deploy/dry-dep", "-n", "dry-ns"],
        ["ns/dry-ns"],
    ):
        said = cluster.kubectl("delete", *target, "--dry-run=server", "--wait=false").stdout
        assert said.rstrip().endswith("(server dry run)")
    assert cluster.kubectl(
        "get", "cm/dry-cm", "deploy/dry-dep", "-n", "dry-ns", "-o", "name"
    ).stdout == ("configmap/dry-cm\ndeployment.apps/dry-dep\n")
    namespace = json.loads(cluster.kubectl("get", "ns/dry-ns", "-o", "json").stdout)
    assert namespace["status"]["phase"] == "Active"
    assert "deletionTimestamp" not in namespace["metadata"]
    cluster.kubectl("delete", "ns/dry-ns", "--wait=false")


def test_exec_and_attach_say_they_are_not_served(cluster: Cluster) -> None:
    cluster.kubectl("run", "exec-target", "--image=busybox", "--restart=Never")
    for verb in (["exec", "exec-target", "--", "true"], ["attach", "exec-target"]):
        refused = cluster.kubectl(*verb, check=False, timeout=30)
        assert refused.returncode == 1
        subresource = verb[0]
        assert f"pods/{subresource} is not served by allot" in refused.stderr, refused.stderr
        assert "read a container's output with kubectl logs" in refused.stderr


def test_auth_can_i_and_tokens(cluster: Cluster, tmp_path: Path) -> None:
    assert cluster.kubectl("auth", "can-i", "create", "resourceclaims").stdout.strip() == "yes"
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        cluster.kubeconfig.read_text().replace(
            cluster.server.api.registry.tokens.ensure("host"), "not-a-token"
        )
    )
    denied = cluster.kubectl("get", "pods", kubeconfig=bad, check=False)
    assert "You must be logged in to the server" in denied.stderr
    tenant_token = cluster.server.api.registry.add_cluster("tenant-a")
    other = tmp_path / "other.yaml"
    other.write_text(
        cluster.kubeconfig.read_text().replace(
            cluster.server.api.registry.tokens.ensure("host"), tenant_token
        )
    )
    forbidden = cluster.kubectl("get", "pods", kubeconfig=other, check=False)
    assert "Error from server (Forbidden)" in forbidden.stderr


def test_missing_namespace_is_404(cluster: Cluster) -> None:
    manifest = json.dumps(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "x", "namespace": "ghost"},
            "spec": {},
        }
    )
    result = cluster.kubectl("create", "-f", "-", stdin=manifest, check=False)
    assert 'namespaces "ghost" not found' in result.stderr
