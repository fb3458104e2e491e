"""``allot doctor`` on dumps built from the NVIDIA fixtures and seed 000's catalogue."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.api.core_v1 import Node
from allot.api.features import KUBERNETES_1_36
from allot.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from allot.cli.main import main as allot
from allot.driver.fleet import expand, parse_fleet
from allot.driver.publisher import node_object
from allot.driver.slices import node_slices
from allot.simulation.runner import Simulation
from allot.simulation.scenario import Scenario, Step
from tests.conftest import EXAMPLES

SHARING_PLATFORM = EXAMPLES / "platform" / "fair-sharing.yaml"
SEED_FILES = [
    "seeds/000-gpu-deviceclasses.yaml",
    "nvidia/a100-40gb-x1-whole-gpu.yaml",
    "nvidia/a100-40gb-static-mig-7x1g5gb.yaml",
    "seeds/000-legal-whole-gpu-resourceclaim.yaml",
    "seeds/000-research-gpu-slice-resourceclaim.yaml",
]


def _documents(*files: str) -> list[dict[str, Any]]:
    found = []
    for name in files:
        for document in yaml.safe_load_all((EXAMPLES / name).read_text()):
            if document:
                if document["kind"] == "ResourceClaim":
                    document["metadata"].setdefault("namespace", "default")
                found.append(document)
    return found


def _dump(tmp_path: Path, documents: list[dict[str, Any]]) -> Path:
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": documents}))
    return path


def _doctor(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = allot(["doctor", "--from-dump", str(path), "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_seed_000_broken_class_and_pending_research_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _doctor(_dump(tmp_path, _documents(*SEED_FILES)), capsys)
    assert code == 1
    lint = {f["class"]: f for f in report["lint"]}
    assert lint["gpu-slice"]["code"] == "no-match"
    assert "driver 'mig.nvidia.com' is never published" in lint["gpu-slice"]["details"][0]
    pending = {p["claim"]: p for p in report["pendingClaims"]}
    research = pending["default/research-gpu-slice"]
    assert research["fits"] is False
    assert research["reason"] == "0/2 nodes are available: 2 cannot allocate all claims."
    assert (
        "NVIDIA MIG devices are driver gpu.nvidia.com with type == 'mig'" in research["explanation"]
    )
    assert pending["default/legal-whole-gpu"]["fits"] is True
    classes = {c["class"]: c for c in report["capacity"]["classes"]}
    assert classes["gpu-slice"]["devices"] == 0


def test_the_corrected_catalogue_is_healthy_once_allocated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = _documents(*SEED_FILES[1:3], "tenancy/platform-classes.yaml")
    code, report = _doctor(_dump(tmp_path, documents), capsys)
    assert code == 0
    assert report["problems"] == 0
    pools = {p["pool"]: p for p in report["capacity"]["pools"]}
    assert pools["gpu-node-a100-mig-01"]["devices"] == 7


def _legal_ai_entitled(classes: str) -> list[dict[str, Any]]:
    """legal-ai's host namespace and the params ConfigMap its policies read."""
    labels = {"allot.dev/tenant": "legal-ai"}
    return [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": "tenant-legal-ai", "labels": labels}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "entitlement-legal-ai", "namespace": "allot-system",
                      "labels": labels},
         "data": {"deviceClasses": classes}},
    ]  # fmt: skip


def test_entitlement_violations_from_the_params(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = _documents(*SEED_FILES[1:3], "tenancy/platform-classes.yaml")
    documents += [
        *_legal_ai_entitled("gpu-whole"),
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "old-claim", "namespace": "tenant-legal-ai"},
         "spec": {"devices": {"requests": [{"name": "g", "firstAvailable": [
             {"name": "a", "deviceClassName": "gpu-whole"},
             {"name": "b", "deviceClassName": "gpu-slice"}]}]}}},
    ]  # fmt: skip
    code, report = _doctor(_dump(tmp_path, documents), capsys)
    assert code == 1
    assert report["entitlementViolations"] == [
        {
            "tenant": "legal-ai",
            "kind": "ResourceClaim",
            "object": "tenant-legal-ai/old-claim",
            "deviceClass": "gpu-slice",
            "entitled": ["gpu-whole"],
            "allocated": False,
        }
    ]


def test_an_allocated_claim_of_a_revoked_class_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = _documents(*SEED_FILES[1:3], "tenancy/platform-classes.yaml")
    documents += [
        *_legal_ai_entitled(""),
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "kept", "namespace": "tenant-legal-ai"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
             "deviceClassName": "gpu-whole"}}]}},
         "status": {"allocation": {"devices": {"results": [
             {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "gpu-node-a100-01",
              "device": "gpu-0"}]}}}},
    ]  # fmt: skip
    code, report = _doctor(_dump(tmp_path, documents), capsys)
    assert code == 1
    assert [v["allocated"] for v in report["entitlementViolations"]] == [True]
    assert allot(["doctor", "--from-dump", str(tmp_path / "dump.yaml")]) == 1
    assert (
        "tenant-legal-ai/kept (ResourceClaim, tenant legal-ai): class gpu-whole is outside its"
        " entitlement (<none>) and ALLOCATED: it still holds devices"
    ) in capsys.readouterr().out


def test_beta_versions_are_converted_and_others_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = _documents(*SEED_FILES[1:3], "tenancy/platform-classes.yaml")
    documents += [
        {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
         "metadata": {"name": "beta", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "g", "deviceClassName": "gpu-whole"}]}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
    ]  # fmt: skip
    code, report = _doctor(_dump(tmp_path, documents), capsys)
    assert [p["claim"] for p in report["pendingClaims"]] == ["default/beta"]
    assert report["pendingClaims"][0]["fits"] is True
    assert report["skipped"] == ["apps/v1 Deployment web: not a kind doctor reads"]
    assert code == 1


def test_bad_dumps_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.yaml"
    assert allot(["doctor", "--from-dump", str(missing)]) == 2
    assert capsys.readouterr().err == f'error: the path "{missing}" does not exist\n'
    broken = tmp_path / "broken.yaml"
    broken.write_text("items: [\n")
    assert allot(["doctor", "--from-dump", str(broken)]) == 2
    assert "error converting YAML to JSON: yaml: line 2: " in capsys.readouterr().err
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "x", "namespace": "d"},
        "spec": {"bogus": 1},
    }
    odd = _dump(tmp_path, [claim])
    assert allot(["doctor", "--from-dump", str(odd)]) == 2
    assert 'unknown field "spec.bogus"' in capsys.readouterr().err


STALE = yaml.safe_load((Path(__file__).parent / "scenarios" / "stale-allocations.yaml").read_text())


def _fleet_objects(fleet_file: str) -> list[dict[str, Any]]:
    """The nodes and slices the simulated driver publishes for a fleet file."""
    specs = expand(parse_fleet(yaml.safe_load((EXAMPLES / fleet_file).read_text())))
    found = [node_object(spec) for spec in specs]
    for spec in specs:
        found += node_slices(spec.name, f"uid-{spec.name}", spec.gpus, dynamic_mig=spec.dynamic_mig)
    return found


def test_allocations_a_fixed_class_no_longer_selects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _fleet_objects(STALE["fleet"])
    claims = [o for o in STALE["objects"] if o["kind"] == "ResourceClaim"]
    simulation = Simulation(
        Scenario(
            KUBERNETES_1_36,
            [DeviceClass.model_validate(o) for o in _documents(STALE["classesBefore"])],
            [ResourceSlice.model_validate(o) for o in fleet if o["kind"] == "ResourceSlice"],
            [ResourceClaim.model_validate(c) for c in claims],
            [Node.model_validate(o) for o in fleet if o["kind"] == "Node"],
        )
    )
    labels = [f"{c['metadata']['namespace']}/{c['metadata']['name']}" for c in claims]
    assert simulation.run_step(Step(0, "allocate", labels)).success
    allocated = [simulation.claims[label].to_wire() for label in labels]
    after = _documents(STALE["classesAfter"])
    dump = _dump(tmp_path, [*after, *fleet, *allocated])
    code, report = _doctor(dump, capsys)
    assert code == 1
    assert report["problems"] == len(STALE["stale"]) == len(report["staleAllocations"])
    for found, expected in zip(report["staleAllocations"], STALE["stale"], strict=True):
        assert re.fullmatch(expected["device"], found.pop("device")), found
        assert found == {k: v for k, v in expected.items() if k != "device"}
    # under the classes it was allocated with, the allocation is not stale
    before_dump = _dump(tmp_path, [*_documents(STALE["classesBefore"]), *fleet, *allocated])
    assert _doctor(before_dump, capsys)[1]["staleAllocations"] == []


def test_nodes_without_slices_count_as_the_scheduler_counts_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = _documents(*SEED_FILES)
    names = {d["spec"]["nodeName"] for d in documents if d["kind"] == "ResourceSlice"}
    nodes = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        for name in sorted(names | {"cpu-node-1"})
    ]
    documents += nodes
    _, report = _doctor(_dump(tmp_path, documents), capsys)
    assert report["summary"]["nodes"] == 3  # two publish slices, one has none
    pending = {p["claim"]: p for p in report["pendingClaims"]}
    assert pending["default/research-gpu-slice"]["reason"] == (
        "0/3 nodes are available: 3 cannot allocate all claims."
    )


def test_fair_sharing_from_tenants_and_kueue_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/platform/fair-sharing.yaml on one whole A100 and seven MIG devices: gpu-pool's
    whole-GPU guarantees (1 + 2) exceed the one GPU; Kueue's objects as ``allot render``
    makes them, with legal-ai's ClusterQueue edited, research-ai's in v1beta1, and a stale
    allot-managed ClusterQueue of a tenant gone."""
    from allot.cluster.render import read_platform, render

    platform = list(yaml.safe_load_all(SHARING_PLATFORM.read_text()))
    fleet = _documents(
        "nvidia/a100-40gb-x1-whole-gpu.yaml", "nvidia/a100-40gb-static-mig-7x1g5gb.yaml"
    )
    slices = [d for d in fleet if d["kind"] == "ResourceSlice"]
    rendered = {f.path: f.objects for f in render(read_platform(platform))}["30-kueue.yaml"]
    queues = {o["metadata"]["name"]: o for o in rendered if o["kind"] == "ClusterQueue"}
    legal = queues["legal-ai"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    legal["nominalQuota"] = "5"
    research = queues["research-ai"]
    research["apiVersion"] = "kueue.x-k8s.io/v1beta1"  # as --kueue-api v1beta1 renders it
    research["spec"]["cohort"] = research["spec"].pop("cohortName")
    research["spec"]["flavorFungibility"] = {"whenCanBorrow": "MayStopSearch"}  # a default
    stale = {**queues["legal-ai"], "metadata": {**queues["legal-ai"]["metadata"], "name": "old"}}
    code, report = _doctor(_dump(tmp_path, platform + slices + rendered + [stale]), capsys)
    assert code == 1
    problems = [(p["problem"], p.get("resource")) for p in report["fairSharing"]]
    assert problems == [
        ("overcommitted", "gpu-whole"),
        ("overcommitted", "gpuMemory"),
        ("clusterQueueDiffers", None),
        ("clusterQueueWithoutTenant", None),
    ]
    whole, _, differs, without = (p["message"] for p in report["fairSharing"])
    assert whole.startswith(
        "cohort gpu-pool: guarantees of gpu-whole sum to 8 (old 5, legal-ai 2, research-ai 1) "
        "but the published devices hold 1 device(s)"
    )
    assert differs == (
        "ClusterQueue legal-ai differs from Tenant legal-ai in spec.resourceGroups "
        "(allot apply makes them match)"
    )
    assert without == (
        "ClusterQueue old is managed by allot but no fair-sharing Tenant has that name"
    )


def test_fair_sharing_without_kueue_reports_only_the_guarantees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    platform = list(yaml.safe_load_all(SHARING_PLATFORM.read_text()))
    fleet = _documents("nvidia/a100-40gb-static-mig-7x1g5gb.yaml")
    slices = [d for d in fleet if d["kind"] == "ResourceSlice"]
    _, report = _doctor(_dump(tmp_path, platform + slices), capsys)
    assert [p["resource"] for p in report["fairSharing"]] == ["gpu-whole", "gpuMemory"]
