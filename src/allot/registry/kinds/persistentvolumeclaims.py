"""PersistentVolumeClaim: serving details (short name ``pvc``, ``/status``), the status a
new claim starts with (``Pending``, where it stays: allot has no volumes and no
provisioner), defaulting, validation and ``kubectl get pvc`` columns (NAME STATUS VOLUME
CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE, VOLUMEMODE with -o wide)."""

from __future__ import annotations

from typing import Any

from allot.api import core_v1_storage as core
from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import storage
from allot.validation.objects import KindRules

ACCESS_MODE_ABBREVIATIONS = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}


def _pending(obj: Obj) -> None:
    """``PrepareForCreate`` resets the status; read back, it is defaulted to Pending."""
    obj["status"] = {"phase": "Pending"}


def access_modes_text(modes: list[str]) -> str:
    """``GetAccessModesAsString``: abbreviations in a fixed order, each once."""
    return ",".join(
        short for mode, short in ACCESS_MODE_ABBREVIATIONS.items() if mode in (modes or [])
    )


def _claim_class(obj: Obj) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation first, then the field."""
    annotations = obj.get("metadata", {}).get("annotations") or {}
    if core.BETA_CLASS_ANNOTATION in annotations:
        return str(annotations[core.BETA_CLASS_ANNOTATION])
    return str((obj.get("spec") or {}).get("storageClassName") or "")


def _cells(obj: Obj, now: Any) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    phase = "Terminating" if obj["metadata"].get("deletionTimestamp") else status.get("phase", "")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = access_modes_text(status.get("accessModes") or [])
        capacity = str((status.get("capacity") or {}).get("storage") or "0")
    return [
        obj["metadata"]["name"],
        phase,
        spec.get("volumeName") or "",
        capacity,
        modes,
        _claim_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


STRATEGIES = (
    KindStrategy(
        "PersistentVolumeClaim",
        "persistentvolumeclaim",
        short_names=("pvc",),
        subresources=("status",),
        rules=KindRules(
            defaults=storage.default_claim,
            validate=lambda obj, context: storage.validate_claim(obj),
            validate_update=lambda new, old, context: storage.validate_claim_update(new, old),
        ),
        initial_status=_pending,
        returns_deleted_object=True,  # upstream's ReturnDeletedObject
        table=Table(
            [
                NAME,
                column(
                    "Status",
                    "phase represents the current phase of PersistentVolumeClaim.",
                ),
                column(
                    "Volume",
                    "volumeName is the binding reference to the PersistentVolume backing this "
                    "claim.",
                ),
                column(
                    "Capacity",
                    "capacity represents the actual resources of the underlying volume.",
                ),
                column(
                    "Access Modes",
                    "accessModes contains the actual access modes the volume backing the PVC has.",
                ),
                column("StorageClass", "StorageClass of the pvc"),
                column("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
                AGE,
                column(
                    "VolumeMode",
                    "volumeMode defines what type of volume is required by the claim. Value "
                    "of Filesystem is implied when not included in claim spec.",
                    priority=1,
                ),
            ],
            _cells,
        ),
    ),
)
