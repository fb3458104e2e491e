"""Mistakes in the GPU catalogue caught when they are made: warnings on DeviceClass writes.

Kubernetes accepts a DeviceClass that matches no device, and one meant for whole GPUs that
also takes MIG partitions; claims through the first wait forever, and tenants entitled to
the second take slices they were not meant to. The write still succeeds here, as upstream,
but the response carries the lint finding and the corrected selector as HTTP ``Warning``
headers, which kubectl prints as ``Warning: ...`` (create, replace, patch, apply). The check
runs ``allot.lint.class_warnings`` on the written class against the cluster's published
ResourceSlices; decoded slices are cached by name and resourceVersion, so a class write
costs one selector evaluation per published device. Writes by the platform's own
controllers (the tenant sync's mirrors) are not checked. ``ApiServer`` installs it.
"""

from __future__ import annotations

from allot.api import resource_v1 as resourceapi
from allot.apiserver.admission import AdmissionRequest, Operation
from allot.apiserver.resources import by_kind
from allot.cel import SelectorCompiler
from allot.lint.catalogue import class_warnings
from allot.store import Store

CHECKED = (Operation.CREATE, Operation.UPDATE)


class DeviceClassWarnings:
    """An admission hook that never refuses, only warns."""

    def __init__(self, store: Store, compiler: SelectorCompiler | None = None) -> None:
        self.store = store
        self.compiler = compiler or SelectorCompiler()
        self._slices: dict[tuple[str, str, str], resourceapi.ResourceSlice] = {}

    def admit(self, request: AdmissionRequest) -> list[str]:
        if (
            request.resource.kind != "DeviceClass"
            or request.subresource
            or request.operation not in CHECKED
            or request.internal
            or not isinstance(request.object, resourceapi.DeviceClass)
        ):
            return []
        return class_warnings([request.object], self._published(request.cluster), self.compiler)

    def _published(self, cluster: str) -> list[resourceapi.ResourceSlice]:
        items, _ = self.store.list_objects(cluster, by_kind("ResourceSlice").store, shared=True)
        current: dict[tuple[str, str, str], resourceapi.ResourceSlice] = {}
        for item in items:
            metadata = item["metadata"]
            key = (cluster, metadata["name"], str(metadata.get("resourceVersion")))
            cached = self._slices.get(key)
            current[key] = cached or resourceapi.ResourceSlice.model_validate(item)
        self._slices = {**{k: v for k, v in self._slices.items() if k[0] != cluster}, **current}
        return list(current.values())
