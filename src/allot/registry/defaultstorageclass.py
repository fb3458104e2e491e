"""The ``DefaultStorageClass`` admission plugin (upstream's
``plugin/pkg/admission/storage/storageclass/setdefault``): a new PersistentVolumeClaim
that names no class (``storageClassName`` absent, not ``""``) gets the cluster's default
StorageClass, the newest if several are marked default. Assembled with the other mutating
plugins by :mod:`allot.registry.clusters`."""

from __future__ import annotations

from allot.registry.admission import AdmissionRequest, Operation
from allot.registry.kinds.storageclasses import is_default_class
from allot.registry.resources import by_kind
from allot.store import Store


class DefaultStorageClassAdmission:
    def __init__(self, store: Store) -> None:
        self.store = store

    def admit(self, request: AdmissionRequest) -> list[str]:
        claim = request.object
        if (
            request.resource.kind != "PersistentVolumeClaim"
            or request.operation is not Operation.CREATE
            or request.subresource
            or claim is None
        ):
            return []
        spec = claim.spec  # type: ignore[attr-defined]
        if spec.storage_class_name is not None:
            return []
        classes, _ = self.store.list_objects(
            request.cluster, by_kind("StorageClass").store, shared=True
        )
        defaults = [c for c in classes if is_default_class(c)]
        if defaults:
            newest = max(
                defaults,
                key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"]["name"]),
            )
            spec.storage_class_name = newest["metadata"]["name"]
        return []
