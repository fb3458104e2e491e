"""The catalogue linter reading a DRA index (as ``allot doctor`` does) finds what it finds
evaluating every selector itself: the same findings, in the same order, for catalogues
with classes that match nothing, that fail at run time on some devices, that share
devices between tenants and that take MIG partitions as whole GPUs; and it reads the
index's device views instead of building its own."""

from __future__ import annotations

from typing import Any

import pytest

from allot.api.resource_v1 import DeviceClass, ResourceSlice
from allot.cel import SelectorCompiler
from allot.dra import DraIndex
from allot.lint.catalogue import CatalogueLinter
from tests.conftest import EXAMPLES, load_yaml_documents

SLICE_FILES = [
    "nvidia/a100-40gb-x1-whole-gpu.yaml",
    "nvidia/a100-40gb-static-mig-7x1g5gb.yaml",
    "nvidia/h100-80gb-dynamic-mig-partitionable.yaml",
]
TENANT_CLASSES = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
     "metadata": {"name": "a", "labels": {"gpu.platform/tenant": "team-a"}},
     "spec": {"selectors": [{"cel": {"expression":
                                     "device.attributes['gpu.nvidia.com'].type == 'mig'"}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
     "metadata": {"name": "b", "labels": {"gpu.platform/tenant": "team-b"}},
     "spec": {"selectors": [{"cel": {"expression":
                                     "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "broken"},
     "spec": {"selectors": [{"cel": {"expression": "device.driver =="}}]}},
]  # fmt: skip


def _documents(*names: str) -> list[dict[str, Any]]:
    return [d for name in names for d in load_yaml_documents(EXAMPLES / name) if d]


def _slices() -> list[dict[str, Any]]:
    found = [d for d in _documents(*SLICE_FILES) if d["kind"] == "ResourceSlice"]
    for number, document in enumerate(found):  # as a server lists them: named, versioned
        document["metadata"].setdefault("name", f"slice-{number}")
        document["metadata"]["resourceVersion"] = str(100 + number)
    return found


def _classes(name: str) -> list[dict[str, Any]]:
    return [d for d in _documents(name) if d["kind"] == "DeviceClass"]


CATALOGUES = {
    "seed-000": _classes("seeds/000-gpu-deviceclasses.yaml"),
    "nvidia": _classes("nvidia/deviceclasses.yaml"),
    "tenants": TENANT_CLASSES,
}


@pytest.mark.parametrize("catalogue", sorted(CATALOGUES))
def test_the_index_gives_the_findings_of_evaluating_every_selector(catalogue: str) -> None:
    raw_slices, raw_classes = _slices(), CATALOGUES[catalogue]
    slices = [ResourceSlice.model_validate(s) for s in raw_slices]
    classes = [DeviceClass.model_validate(c) for c in raw_classes]
    expected = [f.to_json() for f in CatalogueLinter(classes, slices).lint()]
    assert expected  # each catalogue has something to say
    compiler = SelectorCompiler()
    index = DraIndex(compiler=compiler)
    index.refresh(slices=raw_slices, classes=raw_classes)
    linter = CatalogueLinter(classes, slices, compiler=compiler, index=index)
    assert [f.to_json() for f in linter.lint()] == expected
    first = slices[0]
    held = index.slices[first.metadata.name or ""].views
    assert linter.views[0] is held[first.spec.devices[0].name]  # type: ignore[index]


def test_classes_and_slices_the_index_lacks_are_evaluated() -> None:
    """A class changed since the index saw it, and a slice it does not hold, are judged
    by the linter itself."""
    raw_slices, raw_classes = _slices(), TENANT_CLASSES
    slices = [ResourceSlice.model_validate(s) for s in raw_slices]
    index = DraIndex()
    index.refresh(slices=raw_slices[1:], classes=raw_classes[:1])
    changed = {**raw_classes[0], "spec": {"selectors": [{"cel": {"expression": "true"}}]}}
    classes = [DeviceClass.model_validate(c) for c in [changed, *raw_classes[1:]]]
    expected = [f.to_json() for f in CatalogueLinter(classes, slices).lint()]
    assert [f.to_json() for f in CatalogueLinter(classes, slices, index=index).lint()] == expected
    everything = CatalogueLinter(classes, slices, index=index).match(classes[0])
    assert len(everything.matched) == sum(len(s.spec.devices or []) for s in slices)
