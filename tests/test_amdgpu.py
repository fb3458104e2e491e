"""The AMD GPU DRA driver beside NVIDIA's (tests/scenarios/amd-gpus.yaml): what it publishes
per node, fleets asking for shapes AMD does not make, allocation through the mixed
catalogue (partitions of one parent by ``parentDeviceID``), and the vendor-neutral core
reading both alike: doctor, the capacity view, metrics, lint and the container's view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from allot import vendors
from allot.amdgpu.slices import DRIVER
from allot.amdgpu.vendor import list_devices
from allot.api.resource_v1 import DeviceClass, ResourceSlice
from allot.cli.main import main as allot
from allot.controllers.nodeagent import DevicePreparer
from allot.driver.fleet import FleetError, expand, parse_fleet
from allot.driver.nodeslices import fleet_classes, published_slices
from allot.driver.publisher import device_classes, node_object
from allot.lint.catalogue import CatalogueLinter
from allot.ops import views
from allot.ops.capacity import Snapshot
from allot.ops.dashboard_html import gpu_tile
from allot.ops.metrics import MetricSources, PlatformMetrics
from allot.simulation.scenario import Step
from tests.conftest import load_yaml_documents
from tests.test_ops_capacity import simulation_of, snapshot_of

REPO = Path(__file__).resolve().parents[1]
SCENARIO = yaml.safe_load((REPO / "tests" / "scenarios" / "amd-gpus.yaml").read_text())
FLEET = yaml.safe_load((REPO / SCENARIO["fleet"]).read_text())
CATALOGUE = load_yaml_documents(REPO / SCENARIO["catalogue"])
SAME_PARENT = f"{DRIVER}/parentDeviceID"


def fleet_objects() -> list[dict[str, Any]]:
    """The fleet's Nodes, slices (named) and every driver class, as the publisher makes them."""
    fleet = parse_fleet(FLEET)
    found: list[dict[str, Any]] = [*device_classes(), *fleet_classes(fleet), *CATALOGUE]
    for spec in expand(fleet):
        found.append(node_object(spec))
        for index, document in enumerate(published_slices(spec, f"uid-{spec.name}")):
            document["metadata"]["name"] = f"{spec.name}-{document['spec']['driver']}-{index}"
            found.append(document)
    return found


def claim(entry: dict[str, Any]) -> dict[str, Any]:
    requests = [
        {"name": f"r{i}", "exactly": {"deviceClassName": entry["class"]}}
        for i in range(entry["count"])
    ]
    devices: dict[str, Any] = {"requests": requests}
    if entry.get("sameParent"):
        devices["constraints"] = [{"matchAttribute": SAME_PARENT}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": entry["name"], "namespace": "default"},
        "spec": {"devices": devices},
    }


def _slices(objects: list[dict[str, Any]], node: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "ResourceSlice" and o["spec"]["nodeName"] == node]


@pytest.mark.parametrize("node", sorted(SCENARIO["published"]))
def test_each_amd_node_publishes_what_the_driver_publishes(node: str) -> None:
    expected = SCENARIO["published"][node]
    (published,) = _slices(fleet_objects(), node)
    spec = published["spec"]
    assert spec["driver"] == "gpu.amd.com"
    assert spec["pool"] == {"generation": 1, "name": node, "resourceSliceCount": 1}
    assert published["metadata"]["generateName"] == f"{node}-gpu.amd.com-"
    types = {d["name"]: d["attributes"]["type"]["string"] for d in spec["devices"]}
    assert types == expected["devices"]
    for device in spec["devices"]:
        attributes = device["attributes"]
        capacity = {k: v["value"] for k, v in device["capacity"].items()}
        assert capacity == expected["capacity"]
        assert attributes["partitionProfile"] == {"string": expected["partitionProfile"]}
        assert attributes["productName"] == {"string": expected["productName"]}
        assert attributes["family"] == {"string": "AI"}
        assert attributes["driverVersion"] == {"version": "6.12.12"}
        assert attributes["cardIndex"]["int"] + 128 == attributes["renderIndex"]["int"]
        assert device["name"] == (
            f"gpu-{attributes['cardIndex']['int']}-{attributes['renderIndex']['int']}"
        )
        whole = attributes["type"]["string"] == "amdgpu"
        own = {"pciAddr", "deviceID"} if whole else {"parentPciAddr", "parentDeviceID"}
        assert set(attributes) == own | {
            "type",
            "uuid",
            "cardIndex",
            "renderIndex",
            "family",
            "productName",
            "driverVersion",
            "driverSrcVersion",
            "partitionProfile",
            "resource.kubernetes.io/pcieRoot",
        }
        ResourceSlice.model_validate(published)


def test_the_amd_class_serves_the_amd_extended_resource() -> None:
    (amd,) = fleet_classes(parse_fleet(FLEET))
    assert amd["metadata"]["name"] == "gpu.amd.com"
    assert amd["spec"] == {
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.amd.com'"}}],
        "extendedResourceName": "amd.com/gpu",
    }
    assert fleet_classes(parse_fleet({"pools": [{"name": "a", "gpu": "h100"}]})) == []


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        (
            {"gpu": "MI250", "partition": {"compute": "CPX"}},
            "MI250 has no partition mode CPX/NPS1: MI250 is not partitioned",
        ),
        (
            {"gpu": "MI300X", "partition": {"compute": "DPX", "memory": "NPS4"}},
            "MI300X has no partition mode DPX/NPS4: MI300X makes SPX/NPS1, DPX/NPS1, "
            "QPX/NPS1, CPX/NPS1, CPX/NPS4 (compute/memory partition modes)",
        ),
        (
            {"gpu": "MI300X", "mig": {"profile": "1g.10gb"}},
            "MIG is NVIDIA's; MI300X is an AMD GPU: MI300X makes SPX/NPS1",
        ),
        (
            {"gpu": "H200", "partition": {"compute": "CPX"}},
            "'partition' is for AMD GPUs; H200 is an NVIDIA GPU, which partitions by MIG "
            "('mig': profiles 1g.18gb, ",
        ),
        ({"gpu": "MI300X", "partition": "cpx"}, "'partition' takes 'compute' (SPX, DPX"),
        (
            {"gpu": "MI250", "clique": "2f6d0c0e.1"},
            "'clique' is an NVLink clique of NVIDIA GPUs (ComputeDomains); MI250 is an AMD GPU",
        ),
        ({"gpu": "MI355X"}, "unknown gpu 'MI355X' (known: A100-SXM4-40GB, "),
        ({"partition": {"compute": "CPX"}}, "partition needs 'gpu'"),
    ],
)
def test_a_shape_a_vendor_does_not_make_is_refused_with_what_it_makes(
    pool: dict[str, Any], message: str
) -> None:
    with pytest.raises(FleetError) as raised:
        parse_fleet({"pools": [{"name": "p", **pool}]})
    assert message in str(raised.value)


def _allocate(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The scenario's claims, allocated in order by allot's allocator; name -> claim."""
    claims = [claim(entry) for entry in SCENARIO["claims"]]
    simulation = simulation_of(objects, claims)
    allocated = {}
    for index, entry in enumerate(SCENARIO["claims"]):
        label = f"default/{entry['name']}"
        result = simulation.run_step(Step(index, label, [label]))
        assert result.success == (entry["node"] is not None), label
        allocated[entry["name"]] = simulation.claims[label].to_wire()
    return allocated


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    found = fleet_objects()
    allocated = _allocate(found)
    return [*found, *(c for c in allocated.values() if c.get("status"))]


def _devices(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {
        (o["spec"]["driver"], o["spec"]["pool"]["name"], d["name"]): d["attributes"]
        for o in objects
        if o["kind"] == "ResourceSlice"
        for d in o["spec"]["devices"]
    }


def test_claims_land_where_the_scenario_says_partitions_on_one_parent(
    objects: list[dict[str, Any]],
) -> None:
    allocated = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaim"}
    attributes = _devices(objects)
    for entry in SCENARIO["claims"]:
        if entry["node"] is None:
            assert entry["name"] not in allocated
            continue
        results = allocated[entry["name"]]["status"]["allocation"]["devices"]["results"]
        assert {r["pool"] for r in results} == {entry["node"]}, entry["name"]
        assert len({r["device"] for r in results}) == entry["count"]
        if entry.get("sameParent"):
            parents = {
                attributes[(r["driver"], r["pool"], r["device"])]["parentDeviceID"]["string"]
                for r in results
            }
            assert len(parents) == 1


def test_doctor_counts_both_vendors_alike(
    objects: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    assert allot(["doctor", "--from-dump", str(path), "-o", "json"]) == 1  # the charts' classes
    report = json.loads(capsys.readouterr().out)
    assert sorted((f["code"], f["class"]) for f in report["lint"]) == [
        ("no-match", "mig.nvidia.com"),  # no MIG in this fleet
        ("whole-matches-partitions", "gpu.amd.com"),  # the AMD chart's class takes both
    ]
    capacity = report["capacity"]
    classes = {row.pop("class"): row for row in capacity["classes"]}
    expected = SCENARIO["capacity"]
    assert {name: classes[name] for name in expected["classes"]} == expected["classes"]
    profiles = {row.pop("profile"): row for row in capacity["profiles"]}
    assert profiles == expected["profiles"]  # an SPX MI300X's spx_nps1 is no partition


@pytest.fixture
def snapshot(objects: list[dict[str, Any]], tmp_path: Path) -> Snapshot:
    return snapshot_of(objects, tmp_path)


def test_metrics_and_the_gpu_tree_read_amd_partitions_as_partitions(snapshot: Snapshot) -> None:
    metrics = PlatformMetrics(MetricSources(lambda: snapshot, list, list, dict))
    samples = {
        (s.name, s.labels.get("driver", ""), s.labels.get("profile", "")): s.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for s in family.samples
        if s.name.startswith("allot_partition_profile_devices")
    }
    row = SCENARIO["capacity"]["profiles"]["cpx_nps4"]
    assert samples[("allot_partition_profile_devices", DRIVER, "cpx_nps4")] == row["devices"]
    allocatable = ("allot_partition_profile_devices_allocatable", DRIVER, "cpx_nps4")
    assert samples[allocatable] == row["allocatable"]
    cpx = snapshot.devices[(DRIVER, "mi300x-cpx-0", "gpu-0-128")]
    assert (cpx.kind, cpx.profile, cpx.parent) == ("amdgpu-partition", "cpx_nps4", "0000:0c:00.0")
    assert cpx.memory == 24574 * 2**20
    whole = snapshot.devices[(DRIVER, "mi300x-0", "gpu-0-128")]
    assert (whole.profile, whole.parent, whole.product) == ("", "", "AMD_Instinct_MI300X_OAM")


def test_lint_finds_the_amd_class_takes_whole_gpus_and_partitions() -> None:
    objects = fleet_objects()
    classes = [DeviceClass.model_validate(o) for o in objects if o["kind"] == "DeviceClass"]
    slices = [ResourceSlice.model_validate(o) for o in objects if o["kind"] == "ResourceSlice"]
    findings = CatalogueLinter(classes, slices).lint()
    flagged = {(f.code, f.device_class): f for f in findings}
    assert ("whole-matches-partitions", "gpu.amd.com") in flagged
    finding = flagged[("whole-matches-partitions", "gpu.amd.com")]
    assert finding.message.startswith(
        "the class takes whole GPUs (4) and also compute partitions (8)"
    )
    assert finding.suggestion == (
        "device.driver == 'gpu.amd.com' && device.attributes['gpu.amd.com'].type == 'amdgpu'"
        "  # matches 4 device(s)"
    )
    catalogue = {c["metadata"]["name"] for c in CATALOGUE}
    assert not [
        f for f in findings if f.device_class in catalogue
    ]  # the example catalogue is clean


def test_a_container_sees_each_vendor_its_own_way() -> None:
    amd = vendors.prepared(
        DRIVER, "gpu-1-129", {"type": "amdgpu-partition", "uuid": "u-1", "parentPciAddr": "b"}
    )
    nvidia = vendors.prepared("gpu.nvidia.com", "gpu-0", {"type": "gpu", "uuid": "GPU-1"})
    environment = vendors.container_environment([amd, nvidia])
    assert environment == {
        "DRA_RESOURCE_DRIVER_NAME": "gpu.amd.com",
        "CUDA_VISIBLE_DEVICES": "GPU-1",
        "NVIDIA_VISIBLE_DEVICES": "GPU-1",
    }
    tools = {tool.name: own for tool, own in vendors.smi_tools([amd, nvidia])}
    assert sorted(tools) == ["amd-smi", "nvidia-smi"]
    assert list_devices(tools["amd-smi"]) == (
        "GPU: 0\n    BDF: b\n    UUID: u-1\n    PARTITION_ID: 0\n\n"
    )
    assert vendors.cdi_spec_name([DRIVER], "uid-1") == "k8s.gpu.amd.com-gpu_uid-1"
    assert vendors.short_model(DRIVER, "AMD_Instinct_MI300X_OAM") == "Instinct_MI300X_OAM"


def test_the_dashboard_draws_an_amd_gpu_with_its_partitions(snapshot: Snapshot) -> None:
    (node,) = views.gpu_tree(snapshot, "mi300x-cpx-0")
    (gpu,) = node["gpus"]
    assert gpu["name"] == "0000:0c:00.0"  # the partitions' parent, not itself published
    assert [s["profile"] for s in gpu["slices"]] == ["cpx_nps4"] * 8
    assert sum(1 for s in gpu["slices"] if s["tenant"]) == 2
    tile = gpu_tile("mi300x-cpx-0", gpu, [])
    assert "compute partitioned, 2 compute devices in use" in tile
    assert "Instinct_MI300X_OAM, 192 GiB in 8 compute devices" in tile
    (whole_node,) = views.gpu_tree(snapshot, "mi300x-0")
    assert [g["name"] for g in whole_node["gpus"]] == ["gpu-0-128", "gpu-1-129"]


def test_a_claim_spec_is_named_as_its_driver_names_it_and_removed_alone(tmp_path: Path) -> None:
    preparer = DevicePreparer(tmp_path)
    result = {"request": "gpu", "driver": DRIVER, "pool": "mi250-0", "device": "gpu-0-128"}
    allocated = {
        "metadata": {"name": "c", "namespace": "default", "uid": "uid-1"},
        "status": {"allocation": {"devices": {"results": [result]}}},
    }
    (device,) = preparer.prepare(allocated, "mi250-0")
    assert device["cdiDevice"] == "k8s.gpu.amd.com/claim=uid-1-gpu-0-128"
    assert [p.name for p in tmp_path.iterdir()] == ["k8s.gpu.amd.com-gpu_uid-1.json"]
    other = tmp_path / "passthrough_uid-1.json"  # another record of the claim
    other.write_text("{}")
    preparer.unprepare("uid-1")
    assert [p.name for p in tmp_path.iterdir()] == [other.name]
