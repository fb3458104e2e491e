"""Upstream's ``StorageObjectInUseProtection`` admission plugin
(``plugin/pkg/admission/storage/storageobjectinuseprotection``): a new
PersistentVolumeClaim gets the ``kubernetes.io/pvc-protection`` finalizer and a new
PersistentVolume ``kubernetes.io/pv-protection``, so neither disappears while in use; the
protection controllers (:mod:`allot.controllers.volumes`) remove them once it is safe.
Assembled with the other mutating plugins by :mod:`allot.registry.clusters`."""

from __future__ import annotations

from allot.registry.admission import AdmissionRequest, Operation

FINALIZERS = {
    "PersistentVolumeClaim": "kubernetes.io/pvc-protection",
    "PersistentVolume": "kubernetes.io/pv-protection",
}


class StorageProtectionAdmission:
    def admit(self, request: AdmissionRequest) -> list[str]:
        finalizer = FINALIZERS.get(request.resource.kind)
        if (
            finalizer is None
            or request.operation is not Operation.CREATE
            or request.subresource
            or request.object is None
        ):
            return []
        metadata = request.object.metadata  # type: ignore[attr-defined]
        finalizers = list(metadata.finalizers or [])
        if finalizer not in finalizers:
            metadata.finalizers = [*finalizers, finalizer]
            request.completes("metadata", "finalizers", item=finalizer if finalizers else None)
        return []
