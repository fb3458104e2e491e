"""Selectors evaluated on the devices the NVIDIA DRA driver publishes (``examples/nvidia``).

Pins the seed's finding: its ``gpu-slice`` class matches nothing (MIG devices come from
driver ``gpu.nvidia.com`` with ``type == "mig"``) and ``gpu-whole`` also matches MIG
partitions.
"""

from __future__ import annotations

import pytest

from allot.api import kinds
from allot.api import resource_v1 as resourceapi
from allot.cel import DeviceView, SelectorCompiler
from tests.conftest import EXAMPLES, load_yaml_documents

SLICE_FILES = [
    "a100-40gb-x1-whole-gpu.yaml",
    "a100-40gb-static-mig-7x1g5gb.yaml",
    "h100-80gb-x8-whole-gpus.yaml",
    "h100-80gb-dynamic-mig-partitionable.yaml",
]


def _views() -> dict[str, list[DeviceView]]:
    views: dict[str, list[DeviceView]] = {}
    for name in SLICE_FILES:
        for document in load_yaml_documents(EXAMPLES / "nvidia" / name):
            slice_ = kinds.decode(document)
            assert isinstance(slice_, resourceapi.ResourceSlice)
            views.setdefault(name, []).extend(
                DeviceView(slice_.spec.driver or "", d) for d in slice_.spec.devices or []
            )
    return views


def _classes(path: str) -> dict[str, list[str]]:
    classes: dict[str, list[str]] = {}
    for document in load_yaml_documents(EXAMPLES / path):
        device_class = kinds.decode(document)
        assert isinstance(device_class, resourceapi.DeviceClass)
        classes[device_class.metadata.name or ""] = [
            s.cel.expression or "" for s in device_class.spec.selectors or [] if s.cel
        ]
    return classes


def _count(compiler: SelectorCompiler, expressions: list[str], views: list[DeviceView]) -> int:
    selectors = [compiler.compile(e) for e in expressions]
    return sum(all(s.matches(v) for s in selectors) for v in views)


EXPECTED_NVIDIA = {  # class -> matches per slice file, in SLICE_FILES order
    "gpu.nvidia.com": [1, 0, 8, 1],
    "mig.nvidia.com": [0, 7, 0, 25],
    "vfio.gpu.nvidia.com": [0, 0, 0, 0],
    "compute-domain-daemon.nvidia.com": [0, 0, 0, 0],
    "compute-domain-default-channel.nvidia.com": [0, 0, 0, 0],
}
EXPECTED_SEED = {"gpu-slice": [0, 0, 0, 0], "gpu-whole": [1, 7, 8, 26]}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("nvidia/deviceclasses.yaml", EXPECTED_NVIDIA),
        ("seeds/000-gpu-deviceclasses.yaml", EXPECTED_SEED),
    ],
)
def test_class_matches_per_fixture(
    compiler: SelectorCompiler, path: str, expected: dict[str, list[int]]
) -> None:
    views = _views()
    classes = _classes(path)
    assert set(classes) == set(expected)
    for class_name, counts in expected.items():
        got = [_count(compiler, classes[class_name], views[f]) for f in SLICE_FILES]
        assert got == counts, class_name


@pytest.mark.parametrize(
    ("expression", "counts"),
    [
        (
            'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
            [1, 0, 8, 2],
        ),  # the 3g.40gb and 4g.40gb profiles have 39.5Gi
        ('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("80Gi"))', [0, 0, 0, 0]),
        (
            'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan('
            'semver("8.9.0"))',
            [0, 0, 8, 26],
        ),
        (
            'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"',
            [0, 0, 8, 26],
        ),
        (
            'device.attributes["gpu.nvidia.com"].type == "mig" && '
            'device.attributes["gpu.nvidia.com"].profile == "1g.5gb"',
            [0, 7, 0, 0],
        ),
        ('has(device.attributes["gpu.nvidia.com"].uuid)', [1, 7, 8, 1]),
    ],
)
def test_request_selectors_on_fixtures(
    compiler: SelectorCompiler, expression: str, counts: list[int]
) -> None:
    views = _views()
    assert [_count(compiler, [expression], views[f]) for f in SLICE_FILES] == counts


def test_h100_80gb_has_less_than_80gi(compiler: SelectorCompiler) -> None:
    h100 = _views()["h100-80gb-x8-whole-gpus.yaml"][0]
    below = compiler.compile(
        'device.capacity["gpu.nvidia.com"].memory.isLessThan(quantity("80Gi"))'
    )
    assert below.matches(h100) is True
