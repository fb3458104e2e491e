"""``core/v1`` PersistentVolumeClaim, with every field Kubernetes 1.36 defines.

Served in every cluster (short name ``pvc``) so that charts that ask for storage apply;
allot has no PersistentVolumes and no provisioner, so a claim stays ``Pending`` as on a
cluster without one (the conformance ledger says so). In a module of its own, apart from
the core/v1 models every command builds (start-up). Served by
:mod:`allot.registry.kinds.persistentvolumeclaims`, defaulted and validated by
:mod:`allot.validation.storage`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel, SortedMap, Time
from allot.api.meta import LabelSelector, ObjectMeta
from allot.api.quantity import Quantity

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
VOLUME_MODES = ["Block", "Filesystem"]
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


class TypedLocalObjectReference(ApiModel):
    api_group: str | None = None
    kind: str | None = None
    name: str | None = None


class TypedObjectReference(ApiModel):
    api_group: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None


class VolumeResourceRequirements(ApiModel):
    limits: SortedMap[Quantity] | None = None
    requests: SortedMap[Quantity] | None = None


class PersistentVolumeClaimSpec(ApiModel):
    access_modes: list[str] | None = None
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements | None = None
    volume_name: str | None = None
    storage_class_name: str | None = None
    volume_mode: str | None = None
    data_source: TypedLocalObjectReference | None = None
    data_source_ref: TypedObjectReference | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class ModifyVolumeStatus(ApiModel):
    target_volume_attributes_class_name: str | None = None
    status: str | None = None


class PersistentVolumeClaimStatus(ApiModel):
    phase: str | None = None
    access_modes: list[str] | None = None
    capacity: SortedMap[Quantity] | None = None
    conditions: list[PersistentVolumeClaimCondition] | None = None
    allocated_resources: SortedMap[Quantity] | None = None
    allocated_resource_statuses: SortedMap[str] | None = None
    current_volume_attributes_class_name: str | None = None
    modify_volume_status: ModifyVolumeStatus | None = None


class PersistentVolumeClaim(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["PersistentVolumeClaim"] = "PersistentVolumeClaim"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = Field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus | None = None
