"""The simulated driver publishes what the real NVIDIA DRA driver publishes.

Checked against the fixtures written from the driver's source: a real H100's NVML readings
(recorded probe) must give exactly the fixture's dynamic-MIG counters, devices, capacities
and attributes (identities aside), and a simulated A100 cut into 1g.5gb slices the static
MIG devices of the fixture.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.api import kinds
from allot.cel import SelectorCompiler
from allot.driver import catalog, nvml, slices
from allot.registry.kinds import rules_for
from allot.validation.objects import validate_create
from allot.validation.resource import ResourceContext
from tests.conftest import EXAMPLES, load_yaml_documents

ILLUSTRATIVE = {
    "uuid",
    "parentUUID",
    "resource.kubernetes.io/pciBusID",
    "resource.kubernetes.io/pcieRoot",
    "resource.kubernetes.io/numaNode",
    "driverVersion",
    "cudaDriverVersion",
}


def _probe(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((EXAMPLES / "nvidia" / name).read_text())
    return document


def _without_identity(device: dict[str, Any]) -> dict[str, Any]:
    attributes = {k: v for k, v in device["attributes"].items() if k not in ILLUSTRATIVE}
    return {**device, "attributes": attributes}


def test_h100_probe_publishes_the_dynamic_mig_fixture() -> None:
    gpus = nvml.gpus_from_probe(_probe("nvml-probe-h100-80gb-hbm3.json"))
    published = slices.node_slices("gpu-node-h100-dynmig-01", "uid", gpus, dynamic_mig=True)
    fixture = load_yaml_documents(EXAMPLES / "nvidia" / "h100-80gb-dynamic-mig-partitionable.yaml")
    assert published[0]["spec"]["sharedCounters"] == fixture[0]["spec"]["sharedCounters"]
    assert published[1]["spec"]["pool"] == fixture[1]["spec"]["pool"]
    ours = [_without_identity(d) for d in published[1]["spec"]["devices"]]
    theirs = [_without_identity(d) for d in fixture[1]["spec"]["devices"]]
    assert ours == theirs
    assert (
        published[1]["metadata"]["generateName"] == "00001-gpu.nvidia.com-gpu-node-h100-dynmig-01-"
    )


def test_h100_probe_legacy_mode_is_one_whole_gpu() -> None:
    gpus = nvml.gpus_from_probe(_probe("nvml-probe-h100-80gb-hbm3.json"))
    [published] = slices.node_slices("node", "uid", gpus, dynamic_mig=False)
    [device] = published["spec"]["devices"]
    assert device["name"] == "gpu-0"
    assert device["capacity"] == {"memory": {"value": "81559Mi"}}
    assert device["attributes"]["driverVersion"] == {"version": "580.159.4"}
    assert device["attributes"]["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:00"}
    assert device["attributes"]["resource.kubernetes.io/pciBusID"] == {"string": "0000:00:06.0"}
    assert "resource.kubernetes.io/numaNode" not in device["attributes"]


def test_h200_probe_full_gpu_capacity() -> None:
    gpus = nvml.gpus_from_probe(_probe("nvml-probe-h200-141gb.json"))
    [legacy] = slices.node_slices("node", "uid", gpus, dynamic_mig=False)
    assert legacy["spec"]["devices"][0]["capacity"]["memory"] == {"value": "143771Mi"}
    dynamic = slices.node_slices("node", "uid", gpus, dynamic_mig=True)
    full = dynamic[1]["spec"]["devices"][0]
    assert full["capacity"]["memory"] == {"value": "140Gi"}  # 143360Mi, written canonically
    assert len(dynamic[1]["spec"]["devices"]) == 26


def test_simulated_a100_static_mig_matches_the_fixture() -> None:
    gpus = catalog.simulated_gpus(
        catalog.MODELS["A100-SXM4-40GB"],
        "gpu-node-a100-mig-01",
        1,
        driver_version="550.163.1",
        cuda_version="12.4.0",
        mig_profile="1g.5gb",
    )
    [published] = slices.node_slices("gpu-node-a100-mig-01", "uid", gpus, dynamic_mig=False)
    [fixture] = load_yaml_documents(EXAMPLES / "nvidia" / "a100-40gb-static-mig-7x1g5gb.yaml")
    ours = [_without_identity(d) for d in published["spec"]["devices"]]
    theirs = [_without_identity(d) for d in fixture["spec"]["devices"]]
    assert ours == theirs


@pytest.mark.parametrize("model", sorted(catalog.MODELS))
@pytest.mark.parametrize("dynamic", [False, True])
def test_every_model_publishes_valid_slices(model: str, dynamic: bool) -> None:
    gpus = catalog.simulated_gpus(
        catalog.MODELS[model], "node-1", 8, driver_version="580.95.5", cuda_version="13.0.0"
    )
    published = slices.node_slices("node-1", "uid", gpus, dynamic_mig=dynamic)
    context = ResourceContext(compiler=SelectorCompiler())
    for document in published:
        obj = kinds.decode({**document, "metadata": {**document["metadata"], "name": "s"}})
        assert [str(e) for e in validate_create(obj, context, rules_for(obj))] == []


def test_unknown_mig_profile_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"A100-SXM4-40GB has no MIG profile '1g\.99gb'"):
        catalog.simulated_gpus(
            catalog.MODELS["A100-SXM4-40GB"],
            "n",
            1,
            driver_version="1.0.0",
            cuda_version="1.0.0",
            mig_profile="1g.99gb",
        )


SHARES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "consumable-shares.yaml").read_text()
)


@pytest.mark.parametrize("case", SHARES, ids=[c["name"] for c in SHARES])
def test_consumable_shares_publish_devices_by_memory(case: dict[str, Any]) -> None:
    gpus = catalog.simulated_gpus(
        catalog.MODELS[case["gpu"]],
        "node-1",
        1,
        driver_version="580.95.5",
        cuda_version="13.0.0",
        mig_profile=case.get("mig"),
    )
    dynamic, twins = bool(case.get("dynamic")), bool(case.get("passthrough"))
    published = slices.node_slices(
        "node-1", "uid", gpus, dynamic_mig=dynamic, passthrough=twins, shares=case["option"]
    )
    devices = {d["name"]: d for s in published for d in s["spec"].get("devices") or []}
    device = devices[case["device"]]
    assert device.get("allowMultipleAllocations") == case["allowMultipleAllocations"]
    for name, value in case["capacity"].items():
        assert device["capacity"][name] == value, name
    plain = slices.node_slices("node-1", "uid", gpus, dynamic_mig=dynamic, passthrough=twins)
    before = {d["name"]: d for s in plain for d in s["spec"].get("devices") or []}
    assert set(device["capacity"]) - {"shares"} == set(before[case["device"]]["capacity"])
    assert device["attributes"] == before[case["device"]]["attributes"]
    context = ResourceContext(compiler=SelectorCompiler())
    for document in published:  # the API server accepts what the driver publishes
        obj = kinds.decode({**document, "metadata": {**document["metadata"], "name": "s"}})
        assert [str(e) for e in validate_create(obj, context, rules_for(obj))] == []
