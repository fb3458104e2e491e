"""Expands the compact allocator scenarios (tests/scenarios/allocator.yaml) into objects.

Shared by the allocator unit tests, the property tests and the benchmark's sanity check,
so the same data drives every layer. Conventions follow upstream's test fixtures.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from allot.allocator import AllocatedState
from allot.api import core_v1 as corev1
from allot.api import resource_v1 as resourceapi
from allot.api.features import Features
from allot.api.quantity import Quantity

NODES = {
    "node-1": {"region": "region-1", "planet": "earth"},
    "node-2": {"region": "region-2"},
}


@dataclass
class Case:
    name: str
    node: corev1.Node
    features: Features
    classes: list[resourceapi.DeviceClass]
    slices: list[resourceapi.ResourceSlice]
    claims: list[resourceapi.ResourceClaim]
    state: AllocatedState
    expect: dict[str, Any] = field(default_factory=dict)


def node(name: str) -> corev1.Node:
    return corev1.Node.model_validate({"metadata": {"name": name, "labels": NODES[name]}})


def device_class(
    name: str,
    driver: str,
    selectors: list[str] | None = None,
    config: list[dict[str, Any]] | None = None,
) -> resourceapi.DeviceClass:
    expressions = selectors if selectors is not None else [f'device.driver == "{driver}"']
    return resourceapi.DeviceClass.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "selectors": [{"cel": {"expression": e}} for e in expressions],
                "config": config,
            },
        }
    )


def resource_slice(spec: dict[str, Any]) -> resourceapi.ResourceSlice:
    devices = spec.get("devices")
    if isinstance(devices, str) and devices.startswith("DEVICES_"):  # DEVICES_N: device-0..N-1
        devices = [{"name": f"device-{i}"} for i in range(int(devices.removeprefix("DEVICES_")))]
    wire: dict[str, Any] = {
        "driver": spec.get("driver", "driver-a"),
        "pool": {
            "name": spec.get("pool", "pool-1"),
            "generation": spec.get("generation", 1),
            "resourceSliceCount": spec.get("count", 1),
        },
        "devices": devices,
        "sharedCounters": spec.get("sharedCounters"),
    }
    if spec.get("perDevice"):
        wire["perDeviceNodeSelection"] = True
    elif spec.get("allNodes"):
        wire["allNodes"] = True
    elif "nodeSelector" in spec:
        wire["nodeSelector"] = spec["nodeSelector"]
    elif spec.get("node", "node-1") is not None:
        wire["nodeName"] = spec.get("node", "node-1")
    return resourceapi.ResourceSlice.model_validate(
        {"metadata": {"name": spec["name"]}, "spec": wire}
    )


def expand(raw: dict[str, Any]) -> Case:
    raw = copy.deepcopy(raw)
    selectors = raw.get("classSelectors", {})
    configs = raw.get("classConfig", {})
    classes = [
        device_class(c, d, selectors.get(c), configs.get(c))
        for c, d in (("class-a", "driver-a"), ("class-b", "driver-b"))
        if not raw.get("noClasses")
    ]
    state = AllocatedState()
    claims = []
    for claim in raw.get("claims", []):
        for device_id in claim.get("allocated", []):
            state.allocated_devices.add(tuple(device_id.split("/")))
        for device_id, consumed in claim.get("allocatedShared", []):
            key = tuple(device_id.split("/"))
            state.aggregated_capacity[key] = {k: Quantity.parse(v) for k, v in consumed.items()}
        if "devices" in claim:
            claims.append(
                resourceapi.ResourceClaim.model_validate(
                    {"metadata": {"name": claim["name"]}, "spec": {"devices": claim["devices"]}}
                )
            )
    return Case(
        raw["name"],
        node(raw.get("node", "node-1")),
        Features.from_mapping(raw.get("features", {})),
        classes,
        [resource_slice(s) for s in raw.get("slices", [])],
        claims,
        state,
        raw.get("expect", {}),
    )


def summarize(allocation: resourceapi.AllocationResult) -> list[list[Any]]:
    """[[request, driver/pool/device, {other fields}]], share IDs normalised to SHARE."""
    rows: list[list[Any]] = []
    for result in (allocation.devices.results if allocation.devices else None) or []:
        wire = result.to_wire()
        extras = {k: v for k, v in wire.items() if k not in ("request", "driver", "pool", "device")}
        if "shareID" in extras:
            extras["shareID"] = "SHARE"
        row: list[Any] = [result.request, f"{result.driver}/{result.pool}/{result.device}"]
        if extras:
            row.append(extras)
        rows.append(row)
    return rows


N1_SELECTOR = {
    "nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
    ]
}
