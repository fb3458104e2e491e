"""``allot apply`` against the embedded platform over HTTPS with the official client:
idempotent, pruning, a dry-run diff, clear errors, and the rendered policies denying the
isolation suite's escapes exactly as the native Tenant path does."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.cli.main import main as allot
from tests.e2e.conftest import Cluster, running_platform
from tests.e2e.tenancy import REPO

pytestmark = pytest.mark.slow
PLATFORM = REPO / "examples" / "platform" / "seed-000.yaml"
ESCAPES = yaml.safe_load((REPO / "tests" / "scenarios" / "isolation.yaml").read_text())


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_platform(tmp_path) as running:
        yield running


def _apply(cluster: Cluster, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = allot(["apply", "-f", str(PLATFORM), "--kubeconfig", str(cluster.kubeconfig), *extra])
    return code, capsys.readouterr().out


def test_apply_twice_changes_nothing(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    code = allot(["apply", "-f", str(PLATFORM), "--kubeconfig", str(cluster.kubeconfig)])
    first, warnings = capsys.readouterr()
    assert code == 0
    assert warnings == (  # as `allot render` says it (tests/test_cluster_render.py)
        "Warning: not enforced on a real cluster yet: the GPU-memory quota "
        "(spec.quota.gpuMemory) of tenant legal-ai. Nothing rendered counts GPU memory "
        "(ResourceQuota and Kueue count devices); only the embedded platform enforces it\n"
    )
    assert "tenant/legal-ai created" in first
    assert "validatingadmissionpolicybinding/allot-tenant-claims.legal-ai created" in first
    assert "prometheusrule/allot-system/allot skip (the cluster does not serve" in first
    code, second = _apply(cluster, capsys)
    assert code == 0
    assert " created" not in second
    assert " configured" not in second
    assert second.count(" unchanged") == len(first.splitlines()) - 1  # the PrometheusRule skipped
    code, planned = _apply(cluster, capsys, "--dry-run")
    assert "(dry run)" not in planned  # nothing to do
    managed = cluster.get_json(
        "resourcequota", "-n", "tenant-legal-ai", "tenant-quota", "--show-managed-fields"
    )
    assert any(e["manager"] == "allot" for e in managed["metadata"]["managedFields"])


def test_a_removed_tenant_is_pruned(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert _apply(cluster, capsys)[0] == 0
    documents = [d for d in yaml.safe_load_all(PLATFORM.read_text()) if d]
    kept = [d for d in documents if d["metadata"]["name"] != "research-ai"]
    smaller = tmp_path / "platform.yaml"
    smaller.write_text(yaml.safe_dump_all(kept))
    code = allot(["apply", "-f", str(smaller), "--kubeconfig", str(cluster.kubeconfig)])
    out = capsys.readouterr().out
    assert code == 0
    for pruned in (
        "tenant/research-ai pruned",
        "resourcequota/tenant-research-ai/tenant-quota pruned",
        "validatingadmissionpolicybinding/allot-tenant-claims.research-ai pruned",
        "configmap/allot-system/entitlement-research-ai pruned",
        "namespace/tenant-research-ai pruned",
    ):
        assert pruned in out
    names = [t["metadata"]["name"] for t in cluster.get_json("tenants")["items"]]
    assert names == ["legal-ai"]


def test_a_tenant_made_with_allot_tenant_create_is_not_the_files_to_prune(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``allot tenant create tmpt`` then ``allot apply`` of a platform file without tmpt:
    tmpt is not part of the file's set, so nothing of it is pruned (it used to lose its
    namespace, params and bindings while the Tenant stayed Ready)."""
    values = REPO / "examples" / "seeds" / "000-research-ai-vcluster-config.yaml"
    data = ["--data-dir", str(tmp_path / "data")]
    assert allot(["tenant", "create", "tmpt", "-f", str(values), *data]) == 0
    before = {
        "namespace": cluster.get_json("namespace", "tenant-tmpt")["metadata"]["uid"],
        "params": cluster.get_json("configmap", "-n", "allot-system", "entitlement-tmpt")[
            "metadata"
        ]["uid"],
        "binding": cluster.get_json("validatingadmissionpolicybinding", "allot-tenant-claims.tmpt")[
            "metadata"
        ]["uid"],
    }
    capsys.readouterr()
    for extra in (["--dry-run"], []):
        code, out = _apply(cluster, capsys, *extra)
        assert code == 0
        assert "tmpt" not in out
    assert cluster.get_json("namespace", "tenant-tmpt")["metadata"]["uid"] == before["namespace"]
    params = cluster.get_json("configmap", "-n", "allot-system", "entitlement-tmpt")
    assert params["metadata"]["uid"] == before["params"]
    assert params["data"]["deviceClasses"] == "gpu-slice"  # the file's class, entitled now
    binding = cluster.get_json("validatingadmissionpolicybinding", "allot-tenant-claims.tmpt")
    assert binding["metadata"]["uid"] == before["binding"]
    assert allot(["tenant", "delete", "tmpt", *data]) == 0  # it is still whole: it goes
    capsys.readouterr()
    code, out = _apply(cluster, capsys)
    assert code == 0
    assert "tmpt" not in out


def test_dry_run_prints_the_diff(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert _apply(cluster, capsys)[0] == 0
    changed = tmp_path / "platform.yaml"
    changed.write_text(
        PLATFORM.read_text().replace(
            'gpu-whole.deviceclass.resource.k8s.io/devices: "2"',
            'gpu-whole.deviceclass.resource.k8s.io/devices: "3"',
        )
    )
    code = allot(
        ["apply", "-f", str(changed), "--kubeconfig", str(cluster.kubeconfig), "--dry-run"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "resourcequota/tenant-legal-ai/tenant-quota configured (dry run)" in out
    assert "-    gpu-whole.deviceclass.resource.k8s.io/devices: '2'" in out
    assert "+    gpu-whole.deviceclass.resource.k8s.io/devices: '3'" in out
    quota = cluster.get_json("resourcequota", "-n", "tenant-legal-ai", "tenant-quota")
    assert quota["spec"]["hard"]["gpu-whole.deviceclass.resource.k8s.io/devices"] == "2"


def test_a_label_taken_off_a_class_in_the_file_is_taken_off_the_cluster(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Revoking a class in the platform file (its tenant label removed) changes the live
    class: the server's dry-run apply says the field allot owned goes (comparing only the
    rendered fields saw the class unchanged, and left the tenant entitled on the cluster
    while its params said otherwise)."""
    assert _apply(cluster, capsys)[0] == 0
    revoked = tmp_path / "platform.yaml"
    revoked.write_text(PLATFORM.read_text().replace("    gpu.platform/tenant: legal-ai\n", "", 1))
    argv = ["apply", "-f", str(revoked), "--kubeconfig", str(cluster.kubeconfig)]
    assert allot([*argv, "--dry-run"]) == 0
    planned = capsys.readouterr().out
    assert "deviceclass/gpu-whole configured (dry run)" in planned
    assert "-    gpu.platform/tenant: legal-ai" in planned
    assert allot(argv) == 0
    assert "deviceclass/gpu-whole configured" in capsys.readouterr().out
    labels = cluster.get_json("deviceclass", "gpu-whole")["metadata"]["labels"]
    assert "gpu.platform/tenant" not in labels


def test_the_servers_warnings_are_printed_as_kubectl_prints_them(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    warn = {"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["deviceclasses"]}  # fmt: skip
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "classes-need-a-description"},
        "spec": {
            "matchConstraints": {"resourceRules": [warn]},
            "validations": [{"expression": "false", "message": "describe the class"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "classes-need-a-description"},
        "spec": {"policyName": "classes-need-a-description", "validationActions": ["Warn"]},
    }
    cluster.apply(policy, binding)
    assert allot(["apply", "-f", str(PLATFORM), "--kubeconfig", str(cluster.kubeconfig)]) == 0
    err = capsys.readouterr().err
    warning = (
        "Warning: Validation failed for ValidatingAdmissionPolicy 'classes-need-a-description' "
        "with binding 'classes-need-a-description': describe the class"
    )
    assert err.count(warning) == 2  # each class, once


POLICY_ESCAPES = [
    s
    for s in ESCAPES
    if "manifest" in s
    and s["manifest"]["kind"] in ("ResourceClaim", "ResourceClaimTemplate", "Pod")
    and "entitlement" in s["error"]
]


@pytest.mark.parametrize("scenario", POLICY_ESCAPES, ids=[s["name"] for s in POLICY_ESCAPES])
def test_the_applied_policies_deny_the_escapes(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], scenario: dict[str, Any]
) -> None:
    """What a vCluster syncer would create in the tenant's host namespace is refused with
    the same message as on the native tenant path."""
    assert _apply(cluster, capsys)[0] == 0
    result = cluster.kubectl(
        "create", "-n", "tenant-legal-ai", "-f", "-",
        stdin=json.dumps(scenario["manifest"]), check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert re.search(scenario["error"], result.stderr), result.stderr
    assert "ValidatingAdmissionPolicy 'allot-tenant-" in result.stderr


def test_unreachable_and_unauthorised_clusters(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"]["token"] = "not-a-token"
    wrong = tmp_path / "wrong-token.yaml"
    wrong.write_text(yaml.safe_dump(config))
    assert allot(["apply", "-f", str(PLATFORM), "--kubeconfig", str(wrong)]) == 1
    assert "Unauthorized" in capsys.readouterr().err
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1/clusters/host"
    down = tmp_path / "down.yaml"
    down.write_text(yaml.safe_dump(config))
    assert allot(["apply", "-f", str(PLATFORM), "--kubeconfig", str(down)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "Traceback" not in err
    for command in (["apply", "-f", str(PLATFORM)], ["doctor"]):
        argv = [*command, "--kubeconfig", str(cluster.kubeconfig), "--context", "nosuch"]
        assert allot(argv) == 2
        assert capsys.readouterr().err == 'error: context "nosuch" does not exist\n'  # kubectl's


def test_a_crd_whose_names_are_held_stops_the_run(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """apply waits for the Tenant CRD to be Established; one whose singular another CRD
    of allot.dev holds never is, and the run says why instead of failing on the Tenants."""
    squatter = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "squatters.allot.dev"},
        "spec": {
            "group": "allot.dev",
            "scope": "Namespaced",
            "names": {"plural": "squatters", "kind": "Squatter", "singular": "tenant"},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}],
        },
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(squatter))
    cluster.kubectl("wait", "--for", "condition=established", "crd/squatters.allot.dev")
    code = allot(["apply", "-f", str(PLATFORM), "--kubeconfig", str(cluster.kubeconfig)])
    assert code == 1
    out, err = capsys.readouterr()
    assert (
        "customresourcedefinition/tenants.allot.dev: its names are not accepted "
        '(SingularConflict: "tenant" is already in use)'
    ) in err
    assert "tenant.allot.dev/" not in out  # no Tenant was attempted


def test_doctor_reads_the_live_cluster(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """A claim created before the policies existed is an entitlement violation."""
    cluster.kubectl("create", "namespace", "tenant-legal-ai")
    cluster.kubectl("label", "namespace", "tenant-legal-ai", "allot.dev/tenant=legal-ai")
    early = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "early", "namespace": "tenant-legal-ai"},
        "spec": {
            "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu-slice"}}]}
        },
    }
    cluster.apply(early)
    assert _apply(cluster, capsys)[0] == 0
    code = allot(["doctor", "--kubeconfig", str(cluster.kubeconfig), "-o", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert report["entitlementViolations"][0]["object"] == "tenant-legal-ai/early"
    assert report["entitlementViolations"][0]["entitled"] == ["gpu-whole"]
    pending = report["pendingClaims"][0]
    assert pending["claim"] == "tenant-legal-ai/early"
    assert pending["fits"] is True
    pools = {p["pool"] for p in report["capacity"]["pools"]}
    assert pools == {"a100-whole-pool-0", "a100-mig-1g5gb-pool-0"}


def test_a_cluster_without_dra_is_refused(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A server that answers 404 for resource.k8s.io/v1 (here: the server's root, outside
    any cluster, with a token that names none: the root serves only a token's own cluster)
    gets a clear refusal from apply and doctor, and nothing is written."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    url = config["clusters"][0]["cluster"]["server"]
    config["clusters"][0]["cluster"]["server"] = url.split("/clusters/")[0]
    config["users"][0]["user"]["token"] = "a-token-of-no-cluster"
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump(config))
    assert allot(["apply", "-f", str(PLATFORM), "--kubeconfig", str(bare)]) == 1
    assert "does not serve resource.k8s.io/v1" in capsys.readouterr().err
    assert allot(["doctor", "--kubeconfig", str(bare)]) == 2
    assert "does not serve resource.k8s.io/v1" in capsys.readouterr().err
    assert cluster.get_json("tenants")["items"] == []
