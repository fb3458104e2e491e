"""``allot render`` for fair-sharing tenants: Kueue's objects field by field for a
two-tenant cohort (examples/platform/fair-sharing.yaml), in v1beta2 and, asked for with
``--kueue-api v1beta1``, in v1beta1; the Configuration fragment, and the Tenants ``render``
refuses (unknown classes, invalid shares) with the API server's text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.cli.main import main as allot
from allot.cluster.render import PlatformFileError, read_platform, render
from tests.conftest import EXAMPLES

PLATFORM = EXAMPLES / "platform" / "fair-sharing.yaml"
MANAGED = {"app.kubernetes.io/managed-by": "allot"}


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(PLATFORM.read_text()))


@pytest.fixture(scope="module")
def files(documents: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {f.path: f.objects for f in render(read_platform(documents))}


def _by_kind(objects: list[Any], kind: str) -> dict[str, Any]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def test_one_cohort_one_flavor_and_the_default_priorities(files: dict[str, list[Any]]) -> None:
    objects = files["30-kueue.yaml"]
    assert [o["kind"] for o in objects] == [
        "Cohort",
        "ResourceFlavor",
        "WorkloadPriorityClass",
        "WorkloadPriorityClass",
        "ClusterQueue",
        "ClusterQueue",
        "LocalQueue",
        "LocalQueue",
    ]
    assert {o["apiVersion"] for o in objects} == {"kueue.x-k8s.io/v1beta2"}
    assert all(o["metadata"]["labels"] == MANAGED for o in objects)
    assert _by_kind(objects, "Cohort") == {
        "gpu-pool": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Cohort",
            "metadata": {"name": "gpu-pool", "labels": MANAGED},
            "spec": {},
        }
    }
    assert _by_kind(objects, "ResourceFlavor")["allot-devices"]["spec"] == {}
    priorities = _by_kind(objects, "WorkloadPriorityClass")
    assert {n: p["value"] for n, p in priorities.items()} == {
        "allot-priority-0": 0,
        "allot-priority-10": 10,
    }


def test_cluster_queues_carry_the_shares(files: dict[str, list[Any]]) -> None:
    queues = _by_kind(files["30-kueue.yaml"], "ClusterQueue")
    assert sorted(queues) == ["legal-ai", "research-ai"]  # ops uses hard quotas
    research = queues["research-ai"]["spec"]
    assert research == {
        "cohortName": "gpu-pool",  # v1beta1's cohort
        "namespaceSelector": {"matchLabels": {"allot.dev/tenant": "research-ai"}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [
            {
                "coveredResources": ["allot.dev/gpu-whole", "allot.dev/mig-1g.10gb"],
                "flavors": [
                    {
                        "name": "allot-devices",
                        "resources": [
                            {"name": "allot.dev/gpu-whole", "nominalQuota": "1"},
                            {
                                "name": "allot.dev/mig-1g.10gb",
                                "nominalQuota": "4",
                                "borrowingLimit": "4",
                                "lendingLimit": "2",
                            },
                        ],
                    }
                ],
            }
        ],
        "preemption": {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "Never"},
    }
    legal = queues["legal-ai"]["spec"]
    # legal-ai has no mig-1g.10gb share but may borrow research-ai's: covered at 0
    assert legal["resourceGroups"][0]["coveredResources"] == [
        "allot.dev/gpu-whole",
        "allot.dev/mig-1g.10gb",
    ]
    assert legal["resourceGroups"][0]["flavors"][0]["resources"] == [
        {"name": "allot.dev/gpu-whole", "nominalQuota": "2", "lendingLimit": "1"},
        {"name": "allot.dev/mig-1g.10gb", "nominalQuota": "0"},
    ]
    # allot's defaults written out: Kueue's own are Never for both
    assert legal["preemption"] == {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
    }


def test_local_queues_are_the_default_queue_of_each_host_namespace(
    files: dict[str, list[Any]],
) -> None:
    queues = [o for o in files["30-kueue.yaml"] if o["kind"] == "LocalQueue"]
    assert [(q["metadata"]["namespace"], q["metadata"]["name"], q["spec"]) for q in queues] == [
        ("tenant-legal-ai", "default", {"clusterQueue": "legal-ai"}),
        ("tenant-research-ai", "default", {"clusterQueue": "research-ai"}),
    ]


def test_the_configuration_maps_each_shared_class(files: dict[str, list[Any]]) -> None:
    [config] = files["kueue/configuration.yaml"]
    assert config == {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "featureGates": {"KueueDRAIntegration": True},
        "integrations": {"frameworks": ["pod"]},
        "metrics": {"enableClusterQueueResources": True},
        "resources": {
            "excludeResourcePrefixes": ["cpu", "memory", "ephemeral-storage"],
            "deviceClassMappings": [
                {"name": "allot.dev/gpu-whole", "deviceClassNames": ["gpu-whole"]},
                {"name": "allot.dev/mig-1g.10gb", "deviceClassNames": ["mig-1g.10gb"]},
            ],
        },
    }


def test_kueue_api_v1beta1_renders_the_version_kueue_0_14_serves(
    documents: list[dict[str, Any]], files: dict[str, list[Any]], tmp_path: Path
) -> None:
    rendered = render(read_platform(documents), kueue_api="v1beta1")
    older = {f.path: f for f in rendered}
    objects = older["30-kueue.yaml"].objects
    assert {o["apiVersion"] for o in objects} == {"kueue.x-k8s.io/v1beta1"}
    assert (
        older["30-kueue.yaml"]
        .text()
        .startswith(
            "# Fair sharing on Kueue (kueue.x-k8s.io/v1beta1; install Kueue 0.14 or later first)"
        )
    )
    assert _by_kind(objects, "ClusterQueue")["research-ai"]["spec"]["cohort"] == "gpu-pool"
    assert [_as_v1beta2(o) for o in objects] == files["30-kueue.yaml"]  # all else alike
    [config] = older["kueue/configuration.yaml"].objects
    assert config == {**files["kueue/configuration.yaml"][0],
                      "apiVersion": "config.kueue.x-k8s.io/v1beta1"}  # fmt: skip
    # the command line: v1beta2 by default, v1beta1 asked for, anything else refused
    platform = str(PLATFORM)
    assert allot(["render", "-f", platform, "--out", str(tmp_path / "new")]) == 0
    assert "cohortName: gpu-pool" in (tmp_path / "new" / "30-kueue.yaml").read_text()
    out = str(tmp_path / "old")
    assert allot(["render", "-f", platform, "--out", out, "--kueue-api", "v1beta1"]) == 0
    text = (tmp_path / "old" / "30-kueue.yaml").read_text()
    assert "apiVersion: kueue.x-k8s.io/v1beta1" in text
    assert "cohortName" not in text


def _as_v1beta2(obj: dict[str, Any]) -> dict[str, Any]:
    converted = {**obj, "apiVersion": "kueue.x-k8s.io/v1beta2"}
    if obj["kind"] == "ClusterQueue":
        spec = obj["spec"]
        converted["spec"] = {("cohortName" if k == "cohort" else k): v for k, v in spec.items()}
    return converted


def test_an_unknown_kueue_api_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        allot(["render", "-f", str(PLATFORM), "--kueue-api", "v1"])
    assert caught.value.code == 2
    assert "argument --kueue-api: invalid choice: 'v1' (choose from " in capsys.readouterr().err


def test_the_configuration_file_says_its_exclusions_are_global(
    documents: list[dict[str, Any]],
) -> None:
    [config] = [f for f in render(read_platform(documents)) if f.path == "kueue/configuration.yaml"]
    first = config.text().splitlines()[0]
    assert first.startswith("# GLOBAL: excludeResourcePrefixes (cpu, memory, ephemeral-storage)")
    assert "# feature gate the mappings need: KueueDRAIntegration (Kueue 0.18+)" in config.text()
    assert "# ADD pod to your integrations.frameworks (Kueue ships it commented out)" in (
        config.text()
    )


def _sharing(name: str, cohort: str | None, *classes: str) -> dict[str, Any]:
    sharing: dict[str, Any] = {"deviceClasses": [{"name": c, "guaranteed": "1"} for c in classes]}
    if cohort:
        sharing["cohort"] = cohort
    return {
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "Tenant",
        "metadata": {"name": name},
        "spec": {"deviceClassSelector": {"matchLabels": {"gpu.platform/pool": "shared"}},
                 "sharing": sharing},
    }  # fmt: skip


def test_a_queue_covers_its_cohorts_classes_and_no_other_cohorts(
    documents: list[dict[str, Any]],
) -> None:
    classes = [d for d in documents if d["kind"] == "DeviceClass"]
    tenants = [
        _sharing("a", "one", "gpu-whole"),
        _sharing("b", "one", "mig-1g.10gb"),
        _sharing("c", "two", "gpu-whole"),
        _sharing("d", None, "gpu-whole"),
    ]
    objects = next(f for f in render(read_platform(classes + tenants)) if f.path == "30-kueue.yaml")
    queues = _by_kind(objects.objects, "ClusterQueue")
    resources = {
        name: q["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        for name, q in queues.items()
    }
    whole, mig = "allot.dev/gpu-whole", "allot.dev/mig-1g.10gb"
    assert resources == {
        "a": [{"name": whole, "nominalQuota": "1"}, {"name": mig, "nominalQuota": "0"}],
        "b": [{"name": whole, "nominalQuota": "0"}, {"name": mig, "nominalQuota": "1"}],
        "c": [{"name": whole, "nominalQuota": "1"}],
        "d": [{"name": whole, "nominalQuota": "1"}],
    }
    assert all(
        q["spec"]["resourceGroups"][0]["coveredResources"] == [r["name"] for r in resources[n]]
        for n, q in queues.items()
    )


def test_no_sharing_tenant_renders_no_kueue_file(documents: list[dict[str, Any]]) -> None:
    plain = [d for d in documents if d["kind"] == "DeviceClass" or d["metadata"]["name"] == "ops"]
    paths = [f.path for f in render(read_platform(plain))]
    assert "30-kueue.yaml" not in paths
    assert "kueue/configuration.yaml" not in paths


def test_a_share_of_an_unknown_class_is_refused(documents: list[dict[str, Any]]) -> None:
    without_mig = [d for d in documents if d["metadata"]["name"] != "mig-1g.10gb"]
    with pytest.raises(PlatformFileError) as caught:
        render(read_platform(without_mig))
    assert str(caught.value) == (
        'Tenant.allot.dev "research-ai" is invalid: spec.sharing.deviceClasses[0].name: '
        'Not found: "mig-1g.10gb": no DeviceClass of this name'
    )
    # on apply the cluster's own classes join the catalogue
    live = [d for d in documents if d["metadata"]["name"] == "mig-1g.10gb"]
    assert render(read_platform(without_mig), cluster_classes=live)


def test_render_refuses_an_invalid_share_with_the_api_servers_text(
    documents: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = [dict(d) for d in documents]
    legal = next(d for d in bad if d["metadata"]["name"] == "legal-ai")
    legal["spec"] = {**legal["spec"], "sharing": {"deviceClasses": [
        {"name": "gpu-whole", "guaranteed": "2", "lendingLimit": "3"}]}}  # fmt: skip
    path = tmp_path / "platform.yaml"
    path.write_text(yaml.safe_dump_all(bad))
    assert allot(["render", "-f", str(path), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == (
        'error: Tenant.allot.dev "legal-ai" is invalid: [spec.sharing.deviceClasses[0].'
        'lendingLimit: Invalid value: "3": must be nil when cohort is empty, spec.sharing.'
        'deviceClasses[0].lendingLimit: Invalid value: "3": must be less than or equal to '
        "guaranteed]"
    )
    assert not (tmp_path / "out").exists()


def test_validate_checks_shares_against_the_files_classes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = PLATFORM.read_text().replace("name: mig-1g.10gb\n", "name: mig-other\n", 1)
    path = tmp_path / "platform.yaml"
    path.write_text(text)
    assert allot(["validate", str(path)]) == 1
    assert capsys.readouterr().err.strip() == (
        'The Tenant "research-ai" is invalid: spec.sharing.deviceClasses[0].name: Not found: '
        '"mig-1g.10gb": no DeviceClass of this name'
    )
    assert allot(["validate", str(PLATFORM)]) == 0
