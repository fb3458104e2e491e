"""PersistentVolume: serving details (short name ``pv``, cluster-scoped, ``/status``), the
status a new volume starts with (``Pending``; the volume phase controller makes it
``Available``), defaulting, validation and ``kubectl get pv`` columns (upstream's
``printPersistentVolume``: NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM
STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE, VOLUMEMODE with -o wide)."""

from __future__ import annotations

from typing import Any

from allot.api import core_v1_storage as core
from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.registry.kinds.persistentvolumeclaims import access_modes_text
from allot.types import Obj
from allot.validation import storage
from allot.validation.objects import KindRules


def _pending(obj: Obj) -> None:
    """``PrepareForCreate`` resets the status to ``Pending``."""
    obj["status"] = {"phase": "Pending"}


def _volume_class(obj: Obj) -> str:
    """``GetPersistentVolumeClass``: the beta annotation first, then the field."""
    annotations = obj.get("metadata", {}).get("annotations") or {}
    if core.BETA_CLASS_ANNOTATION in annotations:
        return str(annotations[core.BETA_CLASS_ANNOTATION])
    return str((obj.get("spec") or {}).get("storageClassName") or "")


def _cells(obj: Obj, now: Any) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    phase = "Terminating" if obj["metadata"].get("deletionTimestamp") else status.get("phase", "")
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""
    return [
        obj["metadata"]["name"],
        str((spec.get("capacity") or {}).get("storage") or "0"),
        access_modes_text(spec.get("accessModes") or []),
        spec.get("persistentVolumeReclaimPolicy") or "",
        phase,
        claim,
        _volume_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason") or "",
        age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


STRATEGIES = (
    KindStrategy(
        "PersistentVolume",
        "persistentvolume",
        short_names=("pv",),
        subresources=("status",),
        rules=KindRules(
            defaults=storage.default_volume,
            validate=lambda obj, context: storage.validate_volume(obj),
            validate_update=lambda new, old, context: storage.validate_volume_update(new, old),
        ),
        initial_status=_pending,
        returns_deleted_object=True,  # upstream's ReturnDeletedObject
        table=Table(
            [
                NAME,
                column(
                    "Capacity",
                    "capacity is the description of the persistent volume's resources and "
                    "capacity.",
                ),
                column(
                    "Access Modes",
                    "accessModes contains all ways the volume can be mounted.",
                ),
                column(
                    "Reclaim Policy",
                    "persistentVolumeReclaimPolicy defines what happens to a persistent volume "
                    "when released from its claim.",
                ),
                column(
                    "Status",
                    "phase indicates if a volume is available, bound to a claim, or released "
                    "by a claim.",
                ),
                column(
                    "Claim",
                    "claimRef is part of a bi-directional binding between "
                    "PersistentVolume and PersistentVolumeClaim.",
                ),
                column("StorageClass", "StorageClass of the pv"),
                column("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
                column(
                    "Reason",
                    "reason is a brief CamelCase string that describes any failure and is "
                    "meant for machine parsing and tidy display in the CLI.",
                ),
                AGE,
                column(
                    "VolumeMode",
                    "volumeMode defines if a volume is intended to be used with a formatted "
                    "filesystem or to remain in raw block state.",
                    priority=1,
                ),
            ],
            _cells,
        ),
    ),
)
