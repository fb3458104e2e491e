"""CustomResourceDefinitions served by the embedded API server, through the real kubectl:
discovery, schema validation, printer columns, and ``allot apply`` of everything
``allot render`` writes, including the PrometheusRule and the Tenant CRD."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.cli.main import main as allot
from tests.e2e.conftest import Cluster, running_platform
from tests.e2e.tenancy import REPO

pytestmark = pytest.mark.slow
CRD = REPO / "tests" / "data" / "prometheusrule-crd.yaml"
PLATFORM = REPO / "examples" / "platform" / "seed-000.yaml"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_platform(tmp_path) as running:
        running.kubectl("apply", "-f", str(CRD))
        yield running
        running.kubectl("delete", "-f", str(CRD), "--ignore-not-found")


def _rule(groups: object) -> str:
    return json.dumps(
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {"name": "r", "namespace": "default"},
            "spec": {"groups": groups},
        }
    )


def test_a_crd_is_established_as_a_real_server_reports_it(cluster: Cluster) -> None:
    """What installers wait for before they create custom objects."""
    name = "prometheusrules.monitoring.coreos.com"
    cluster.kubectl("wait", "--for", "condition=established", f"crd/{name}", "--timeout=20s")
    status = cluster.get_json("crd", name)["status"]
    assert status["acceptedNames"] == {
        "plural": "prometheusrules", "singular": "prometheusrule", "shortNames": ["promrule"],
        "kind": "PrometheusRule", "listKind": "PrometheusRuleList",
        "categories": ["prometheus-operator"],
    }  # fmt: skip
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("NamesAccepted", "True", "NoConflicts"),
        ("Established", "True", "InitialNamesAccepted"),
    ]
    assert status["storedVersions"] == ["v1"]


def test_a_crd_makes_its_kind_served(cluster: Cluster) -> None:
    resources = cluster.kubectl("api-resources", "--api-group", "monitoring.coreos.com").stdout
    assert "prometheusrules" in resources
    assert "promrule" in resources
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        stdin=_rule([{"name": "gpu", "rules": [{"alert": "A", "expr": "up == 0"}]}]),
    )
    table = cluster.kubectl("get", "promrule", "-n", "default").stdout
    assert table.splitlines()[0].split() == ["NAME", "GROUPS", "AGE"]
    assert table.splitlines()[1].split()[:2] == ["r", "gpu"]
    assert (
        cluster.get_json("prometheusrule", "r", "-n", "default")["spec"]["groups"][0]["name"]
        == "gpu"
    )


def test_objects_are_validated_against_the_schema(cluster: Cluster) -> None:
    wrong_type = cluster.kubectl("apply", "-f", "-", stdin=_rule("gpu"), check=False)
    assert wrong_type.returncode != 0
    assert (
        'spec.groups: Invalid value: "string": spec.groups in body must be of type array: "string"'
        in wrong_type.stderr
    )
    missing = cluster.kubectl("apply", "-f", "-", stdin=_rule([{"rules": []}]), check=False)
    assert "spec.groups[0].name: Required value" in missing.stderr
    unknown = cluster.kubectl(
        "apply", "-f", "-", stdin=_rule([{"name": "g", "bogus": 1}]), check=False
    )
    assert "spec.groups[0].bogus" in unknown.stderr


def test_deleting_the_crd_removes_its_objects(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=_rule([{"name": "gpu"}]))
    cluster.kubectl("delete", "-f", str(CRD))
    result = cluster.kubectl("get", "prometheusrules", "-A", check=False)
    assert result.returncode != 0
    cluster.kubectl("apply", "-f", str(CRD))
    assert cluster.get_json("prometheusrules", "-A")["items"] == []


def test_every_rendered_file_passes_a_server_dry_run(cluster: Cluster, tmp_path: Path) -> None:
    """Each file in order: accepted in dry-run, then applied for the next to find its
    namespaces."""
    out = tmp_path / "rendered"
    assert allot(["render", "-f", str(PLATFORM), "--out", str(out)]) == 0
    for path in sorted(out.glob("*.yaml")):
        result = cluster.kubectl("apply", "--dry-run=server", "-f", str(path), check=False)
        assert result.returncode == 0, f"{path.name}: {result.stderr}"
        cluster.kubectl("apply", "-f", str(path))
    rules = cluster.get_json("prometheusrule", "allot", "-n", "allot-system")
    assert rules["spec"]["groups"][0]["rules"][0]["alert"] == "ClaimPendingTooLong"


def test_allot_apply_creates_the_custom_objects_too(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = allot(["apply", "-f", str(PLATFORM), "--kubeconfig", str(cluster.kubeconfig)])
    report = capsys.readouterr().out
    assert code == 0
    assert "prometheusrule/allot-system/allot created" in report
    assert "customresourcedefinition/tenants.allot.dev created" in report
    assert allot(["apply", "-f", str(PLATFORM), "--kubeconfig", str(cluster.kubeconfig)]) == 0
    again = capsys.readouterr().out
    assert " created" not in again
    assert " configured" not in again
    tenants = cluster.kubectl("get", "tenants").stdout  # still the built-in kind
    assert tenants.splitlines()[0].split() == ["NAME", "PHASE", "NAMESPACE", "CLASSES", "AGE"]
