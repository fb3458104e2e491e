"""Grouping devices by what a class's selectors read (allot.lint.shapes) must give the
linter the same answers as checking every device: same findings, same device counts."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from allot.api import resource_v1 as resourceapi
from allot.lint.catalogue import SUGGESTION_NAMES, CatalogueLinter
from allot.lint.shapes import group, read_names
from tests.conftest import EXAMPLES

FLEET_FILES = [
    "nvidia/a100-40gb-x1-whole-gpu.yaml",
    "nvidia/a100-40gb-static-mig-7x1g5gb.yaml",
    "nvidia/h100-80gb-x8-whole-gpus.yaml",
    "nvidia/h100-80gb-dynamic-mig-partitionable.yaml",
]
EXPRESSIONS = [
    "device.driver == 'gpu.nvidia.com'",
    "device.driver == 'mig.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '1g.5gb'",
    "device.attributes['gpu.nvidia.com'].type == 'mig' && "
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('10Gi')) >= 0",
    "device.attributes['gpu.nvidia.com'].uuid.startsWith('GPU-')",
    "device.attributes['gpu.nvidia.com'].productName.matches('H100') ||"
    " device.attributes['gpu.nvidia.com'].index == 0",
    "device.attributes['gpu.nvidia.com'].exists(name, name == 'parentUUID')",
    "size(device.attributes['gpu.nvidia.com']) > 12",
    "'gpu.nvidia.com' in device.attributes && device.attributes['gpu.nvidia.com'].minor > 0",
]


def _slices() -> list[dict[str, Any]]:
    found = []
    for name in FLEET_FILES:
        for document in yaml.safe_load_all((EXAMPLES / name).read_text()):
            if document and document["kind"] == "ResourceSlice":
                found.append(document)
    return found


def _class(expression: str) -> resourceapi.DeviceClass:
    return resourceapi.DeviceClass.model_validate(
        {"metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}
    )


def _comparable(findings: list[Any]) -> list[Any]:
    """Findings without the 'nearest device' examples (a group shows one of its devices)."""
    return [
        {**f.to_json(), "details": [d for d in f.details if not d.startswith("nearest: ")]}
        for f in findings
    ]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_grouped_devices_lint_like_every_device(expression: str) -> None:
    slices = _slices()
    device_class = _class(expression)
    every = CatalogueLinter([], [resourceapi.ResourceSlice.model_validate(s) for s in slices])
    names = read_names([expression])
    shapes = group(slices, names | SUGGESTION_NAMES if names is not None else None)
    grouped = CatalogueLinter([], [], views=shapes.views, weights=shapes.weights)
    assert shapes.devices == len(every.views)
    assert _comparable(grouped.lint_class(device_class)) == _comparable(
        every.lint_class(device_class)
    )
    assert grouped.count_matches(expression) == every.count_matches(expression)


def test_whole_map_reads_keep_every_value_and_plain_reads_group() -> None:
    assert read_names(["size(device.attributes['gpu.nvidia.com']) > 1"]) is None
    assert read_names(["device.attributes['gpu.nvidia.com'].exists(n, n == 'x')"]) is None
    assert read_names(["device.attributes['gpu.nvidia.com'] == {}"]) is None
    names = read_names(["device.attributes['gpu.nvidia.com'].type == 'gpu'"])
    assert names is not None
    assert {"type", "gpu", "gpu.nvidia.com"} <= names
    slices = _slices()
    devices = sum(len(s["spec"].get("devices") or []) for s in slices)
    exact = group(slices, None)  # only devices equal in every value share a view
    assert exact.devices == devices
    assert len(group(slices, names).views) < len(exact.views)


def test_nearest_devices_are_two_different_names_when_pools_reuse_names() -> None:
    slices = [resourceapi.ResourceSlice.model_validate(s) for s in _slices()]
    renamed = []
    for pool in ("pool-a", "pool-b"):  # the same whole GPU published by two nodes
        copy = slices[0].model_copy(deep=True)
        assert copy.spec.pool is not None
        copy.spec.pool.name = pool
        renamed.append(copy)
    expression = (
        "device.driver == 'mig.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    )
    [finding] = CatalogueLinter([_class(expression)], renamed).lint()
    nearest = [d for d in finding.details if d.startswith("nearest: ")]
    assert nearest == ["nearest: gpu.nvidia.com/gpu-0 fails only device.driver == 'mig.nvidia.com'"]
