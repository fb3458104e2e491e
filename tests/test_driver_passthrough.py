"""VFIO passthrough: the cases of tests/scenarios/driver-passthrough.yaml, and the twin's
exact attributes.

The published devices per pool shape and gate; the twins a node agent hides and shows again
as claims are prepared and unprepared (on a store-like fake holding the node's slice); the
gate combinations the driver refuses, in its words.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from allot.api import kinds
from allot.cel import SelectorCompiler
from allot.controllers.context import ControllerContext
from allot.controllers.passthrough import PassthroughTwins
from allot.driver import catalog, slices
from allot.driver.fleet import expand, parse_fleet
from allot.driver.gates import DriverGateError, check_fleet_gates, check_gates
from allot.driver.publisher import device_classes
from allot.registry.kinds import rules_for
from allot.validation.objects import validate_create
from allot.validation.resource import ResourceContext

SCENARIOS: dict[str, list[dict[str, Any]]] = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "driver-passthrough.yaml").read_text()
)


def _node_slices(pool: dict[str, Any], passthrough: bool) -> list[dict[str, Any]]:
    (node,) = expand(parse_fleet({"pools": [{"name": "p", "nodes": 1, **pool}]}))
    return slices.node_slices(
        node.name, "uid", node.gpus, dynamic_mig=node.dynamic_mig, passthrough=passthrough
    )


def _types(published: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [
        {d["name"]: d["attributes"]["type"]["string"]}
        for s in published
        for d in s["spec"].get("devices") or []
    ]


@pytest.mark.parametrize(
    "case", SCENARIOS["publish"], ids=[c["name"] for c in SCENARIOS["publish"]]
)
def test_the_driver_publishes_vfio_twins(case: dict[str, Any]) -> None:
    published = _node_slices(case["pool"], case["passthrough"])
    assert _types(published) == case["devices"]
    context = ResourceContext(compiler=SelectorCompiler())
    for document in published:
        obj = kinds.decode({**document, "metadata": {**document["metadata"], "name": "s"}})
        assert [str(e) for e in validate_create(obj, context, rules_for(obj))] == []


def test_a_vfio_twin_carries_the_pci_identity_not_nvml() -> None:
    published = _node_slices({"gpu": "H100-80GB-HBM3", "gpusPerNode": 8}, True)
    twin = next(d for d in published[0]["spec"]["devices"] if d["name"] == "gpu-vfio-5")
    assert twin == {
        "name": "gpu-vfio-5",
        "attributes": {
            "deviceID": {"string": "0x2330"},
            "iommuFDEnabled": {"bool": False},
            "productName": {"string": "GH100 [H100 SXM5 80GB]"},
            "resource.kubernetes.io/numaNode": {"int": 1},
            "resource.kubernetes.io/pciBusID": {"string": "0000:57:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:10"},
            "type": {"string": "vfio"},
            "uuid": {"string": "94e7dab5-98ba-554d-b4a1-05a871caa77f"},
            "vendorID": {"string": "0x10de"},
        },
        "capacity": {"addressableMemory": {"value": "256Gi"}},
    }


def test_this_machines_gpus_get_no_twin() -> None:
    gpus = catalog.simulated_gpus(
        catalog.MODELS["H100-80GB-HBM3"], "n", 1, driver_version="1.0.0", cuda_version="1.0.0"
    )
    gpus[0].pci = None  # as nvml.gpus_from_probe makes them: allot never binds vfio-pci
    published = slices.node_slices("n", "uid", gpus, dynamic_mig=False, passthrough=True)
    assert _types(published) == [{"gpu-0": "gpu"}]


def test_the_vfio_class_comes_with_the_gate() -> None:
    names = [c["metadata"]["name"] for c in device_classes(passthrough=True)]
    assert names == ["gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"]
    vfio = device_classes(passthrough=True)[2]["spec"]["selectors"][0]["cel"]["expression"]
    assert vfio == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'"
    )
    assert "vfio.gpu.nvidia.com" not in [
        c["metadata"]["name"] for c in device_classes(passthrough=False)
    ]


class FakeStore:
    """The three calls PassthroughTwins makes of a ControllerContext, on one node's slices."""

    def __init__(self, published: list[dict[str, Any]]) -> None:
        self.slices = {f"slice-{i}": copy.deepcopy(s) for i, s in enumerate(published)}
        for name, slice_ in self.slices.items():
            slice_["metadata"]["name"] = name

    def scan(self, kind: str) -> list[dict[str, Any]]:
        return list(self.slices.values())

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.slices.get(name)

    def update(self, kind: str, obj: dict[str, Any], manager: str) -> dict[str, Any]:
        self.slices[obj["metadata"]["name"]] = obj
        return obj

    def shown(self) -> list[str]:
        return [d["name"] for s in self.slices.values() for d in s["spec"]["devices"]]


@pytest.mark.parametrize("case", SCENARIOS["twins"], ids=[c["name"] for c in SCENARIOS["twins"]])
def test_prepared_devices_hide_their_twins(case: dict[str, Any], tmp_path: Path) -> None:
    published = _node_slices({"gpu": "H100-80GB-HBM3", "gpusPerNode": 2}, True)
    store = FakeStore(published)
    node = published[0]["spec"]["nodeName"]
    twins = PassthroughTwins(cast(ControllerContext, store), tmp_path)
    for step in case["steps"]:
        if "prepare" in step:
            claim = {"metadata": {"uid": step["prepare"]}}
            twins.prepared(claim, node, step["devices"])
        else:
            twins.unprepared(step["unprepare"])
        assert store.shown() == step["shows"], step
    assert list(tmp_path.iterdir()) == []  # every record gone with its claim


@pytest.mark.parametrize("case", SCENARIOS["gates"], ids=[c["name"] for c in SCENARIOS["gates"]])
def test_the_drivers_gate_combinations(case: dict[str, Any]) -> None:
    pools: list[dict[str, Any]] = [{"name": "cpu", "nodes": 1}]
    if "dynamicPool" in case:
        pools.append(
            {"name": case["dynamicPool"], "gpu": "H100-80GB-HBM3", "mig": {"dynamic": True}}
        )
    fleet = parse_fleet({"pools": pools})

    def check() -> None:
        check_gates(case["set"])
        check_fleet_gates(fleet, case["set"])

    if "error" not in case:
        check()
        return
    with pytest.raises(DriverGateError) as raised:
        check()
    assert str(raised.value) == case["error"]
