"""StorageClass: serving details (short name ``sc``), defaulting, validation and ``kubectl
get sc`` columns (NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION
AGE, the default class named ``(default)``). The default class is given to new claims by
:mod:`allot.registry.defaultclasses`; no provisioner acts on any class."""

from __future__ import annotations

from typing import Any

from allot.api import storage_v1 as storage
from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import storage as validation
from allot.validation.objects import KindRules


def is_default_class(obj: Obj) -> bool:
    """``IsDefaultAnnotation``: the GA or the beta default-class annotation is ``true``."""
    annotations = obj.get("metadata", {}).get("annotations") or {}
    return "true" in (
        annotations.get(storage.DEFAULT_CLASS_ANNOTATION),
        annotations.get(storage.BETA_DEFAULT_CLASS_ANNOTATION),
    )


def _cells(obj: Obj, now: Any) -> list[Any]:
    name = obj["metadata"]["name"]
    return [
        f"{name} (default)" if is_default_class(obj) else name,
        obj.get("provisioner") or "",
        obj.get("reclaimPolicy") or "Delete",
        obj.get("volumeBindingMode") or "Immediate",
        bool(obj.get("allowVolumeExpansion")),
        age(obj, now),
    ]


STRATEGIES = (
    KindStrategy(
        "StorageClass",
        "storageclass",
        short_names=("sc",),
        rules=KindRules(
            defaults=validation.default_storage_class,
            validate=lambda obj, context: validation.validate_storage_class(obj),
            validate_update=lambda new, old, context: validation.validate_storage_class_update(
                new, old
            ),
        ),
        table=Table(
            [
                NAME,
                column("Provisioner", "provisioner indicates the type of the provisioner."),
                column(
                    "ReclaimPolicy",
                    "reclaimPolicy controls the reclaimPolicy for dynamically provisioned "
                    "PersistentVolumes of this storage class. Defaults to Delete.",
                ),
                column(
                    "VolumeBindingMode",
                    "volumeBindingMode indicates how PersistentVolumeClaims should be "
                    "provisioned and bound.  When unset, VolumeBindingImmediate is used. This "
                    "field is only honored by servers that enable the VolumeScheduling feature.",
                ),
                column(
                    "AllowVolumeExpansion",
                    "allowVolumeExpansion shows whether the storage class allow volume expand.",
                ),
                AGE,
            ],
            _cells,
        ),
    ),
)
