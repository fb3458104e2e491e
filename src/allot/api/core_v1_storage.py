"""``core/v1`` PersistentVolumeClaim and PersistentVolume, with every field Kubernetes 1.36
defines (a volume's sources other than ``hostPath``, ``local``, ``nfs`` and ``csi`` are
carried as JSON objects under their real names).

Served in every cluster (short names ``pvc``, ``pv``); the persistent volume controller
and the simulated local-path provisioner (:mod:`allot.controllers.volumes`) bind and
provision them. In a module of
its own, apart from the core/v1 models every command builds (start-up). Served by
:mod:`allot.registry.kinds.persistentvolumeclaims`, defaulted and validated by
:mod:`allot.validation.storage`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel, SortedMap, Time
from allot.api.core_v1 import JsonObject, ObjectReference
from allot.api.core_v1_nodes import NodeSelector
from allot.api.meta import LabelSelector, ObjectMeta
from allot.api.quantity import Quantity

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
VOLUME_MODES = ["Block", "Filesystem"]
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]


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


# ----------------------------------------------------------------- PersistentVolume
class HostPathVolumeSource(ApiModel):
    path: str | None = None
    type: str | None = None


class LocalVolumeSource(ApiModel):
    path: str | None = None
    fs_type: str | None = None


class NFSVolumeSource(ApiModel):
    server: str | None = None
    path: str | None = None
    read_only: bool | None = None


class SecretReference(ApiModel):
    name: str | None = None
    namespace: str | None = None


class CSIPersistentVolumeSource(ApiModel):
    driver: str | None = None
    volume_handle: str | None = None
    read_only: bool | None = None
    fs_type: str | None = None
    volume_attributes: SortedMap[str] | None = None
    controller_publish_secret_ref: SecretReference | None = None
    node_stage_secret_ref: SecretReference | None = None
    node_publish_secret_ref: SecretReference | None = None
    controller_expand_secret_ref: SecretReference | None = None
    node_expand_secret_ref: SecretReference | None = None


class VolumeNodeAffinity(ApiModel):
    required: NodeSelector | None = None


PERSISTENT_VOLUME_SOURCES = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "cephfs",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
)
"""The volume sources of a ``PersistentVolumeSpec`` (wire names), one of which is set."""


class PersistentVolumeSpec(ApiModel):
    capacity: SortedMap[Quantity] | None = None
    access_modes: list[str] | None = None
    claim_ref: ObjectReference | None = None
    persistent_volume_reclaim_policy: str | None = None
    storage_class_name: str | None = None
    mount_options: list[str] | None = None
    volume_mode: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    volume_attributes_class_name: str | None = None
    host_path: HostPathVolumeSource | None = None
    local: LocalVolumeSource | None = None
    nfs: NFSVolumeSource | None = None
    csi: CSIPersistentVolumeSource | None = None
    gce_persistent_disk: JsonObject | None = None
    aws_elastic_block_store: JsonObject | None = None
    glusterfs: JsonObject | None = None
    rbd: JsonObject | None = None
    iscsi: JsonObject | None = None
    cinder: JsonObject | None = None
    cephfs: JsonObject | None = None
    fc: JsonObject | None = None
    flocker: JsonObject | None = None
    flex_volume: JsonObject | None = None
    azure_file: JsonObject | None = None
    vsphere_volume: JsonObject | None = None
    quobyte: JsonObject | None = None
    azure_disk: JsonObject | None = None
    photon_persistent_disk: JsonObject | None = None
    portworx_volume: JsonObject | None = None
    scale_io: JsonObject | None = Field(default=None, alias="scaleIO")
    storageos: JsonObject | None = None


class PersistentVolumeStatus(ApiModel):
    phase: str | None = None
    message: str | None = None
    reason: str | None = None
    last_phase_transition_time: Time | None = None


class PersistentVolume(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["PersistentVolume"] = "PersistentVolume"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = Field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus | None = None
