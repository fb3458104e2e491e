"""The admission plugins that give a new object the cluster's default class: upstream's
``DefaultStorageClass`` (``plugin/pkg/admission/storage/storageclass/setdefault``) for a
PersistentVolumeClaim that names no ``storageClassName`` (absent, not ``""``), and
``DefaultIngressClass`` (``plugin/pkg/admission/network/defaultingressclass``) for an
Ingress with neither ``ingressClassName`` nor the ``kubernetes.io/ingress.class``
annotation. The default class is the one annotated ``...is-default-class: "true"``, the
newest if several are. Assembled with the other mutating plugins by
:mod:`allot.registry.clusters`."""

from __future__ import annotations

from collections.abc import Callable

from allot.api import networking_v1 as networking
from allot.registry.admission import AdmissionRequest, Operation
from allot.registry.kinds.storageclasses import is_default_class
from allot.registry.resources import by_kind
from allot.store import Store
from allot.types import Obj


def _newest_default(
    store: Store,
    cluster: str,
    kind: str,
    is_default: Callable[[Obj], bool],
    ascending_ties: bool = False,
) -> str | None:
    """The name of the newest ``kind`` object that ``is_default`` marks (None: none is);
    of several as new, the last name, or the first with ``ascending_ties`` (upstream's
    ``GetDefaultClass`` for StorageClasses: newest first, then by name)."""
    classes, _ = store.list_objects(cluster, by_kind(kind).store, shared=True)
    defaults = [c for c in classes if is_default(c)]
    if not defaults:
        return None
    stamp = max(c["metadata"].get("creationTimestamp") or "" for c in defaults)
    tied = [
        c["metadata"]["name"] for c in defaults if c["metadata"].get("creationTimestamp") == stamp
    ]
    return str(min(tied) if ascending_ties else max(tied))


def is_default_ingress_class(obj: Obj) -> bool:
    annotations = obj["metadata"].get("annotations") or {}
    return annotations.get(networking.DEFAULT_CLASS_ANNOTATION) == "true"


def _creating(request: AdmissionRequest, kind: str) -> bool:
    return (
        request.resource.kind == kind
        and request.operation is Operation.CREATE
        and not request.subresource
        and request.object is not None
    )


class DefaultStorageClassAdmission:
    def __init__(self, store: Store) -> None:
        self.store = store

    def admit(self, request: AdmissionRequest) -> list[str]:
        if not _creating(request, "PersistentVolumeClaim"):
            return []
        spec = request.object.spec  # type: ignore[union-attr]
        if spec.storage_class_name is None:
            spec.storage_class_name = _newest_default(
                self.store, request.cluster, "StorageClass", is_default_class, ascending_ties=True
            )
            if spec.storage_class_name is not None:
                request.completes("spec", "storageClassName")
        return []


class DefaultIngressClassAdmission:
    def __init__(self, store: Store) -> None:
        self.store = store

    def admit(self, request: AdmissionRequest) -> list[str]:
        if not _creating(request, "Ingress"):
            return []
        ingress = request.object
        annotations = ingress.metadata.annotations or {}  # type: ignore[union-attr]
        spec = ingress.spec  # type: ignore[union-attr]
        if spec.ingress_class_name is None and networking.CLASS_ANNOTATION not in annotations:
            spec.ingress_class_name = _newest_default(
                self.store, request.cluster, "IngressClass", is_default_ingress_class
            )
            if spec.ingress_class_name is not None:
                request.completes("spec", "ingressClassName")
        return []
