"""``apps/v1`` kinds: Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision.

Every field Kubernetes 1.36 defines for them, so ordinary workload manifests decode
strictly (unknown fields still refused). The pod template is core/v1's
:class:`~allot.api.core_v1.PodTemplateSpec`; a StatefulSet's volume claim templates are
carried as JSON objects (no claims are made from them: see the ledger). Served by
:mod:`allot.registry.kinds.deployments` and its siblings; the workload controllers read
and write them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from allot.api.base import ApiModel, Time
from allot.api.core_v1 import IntOrString, JsonObject, PodTemplateSpec
from allot.api.meta import LabelSelector, ListMeta, ObjectMeta

API_VERSION = "apps/v1"


# ---------------------------------------------------------------------- Deployment
class RollingUpdateDeployment(ApiModel):
    max_unavailable: IntOrString | None = None
    max_surge: IntOrString | None = None


class DeploymentStrategy(ApiModel):
    type: str | None = None
    rolling_update: RollingUpdateDeployment | None = None


class DeploymentSpec(ApiModel):
    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None
    strategy: DeploymentStrategy | None = None
    min_ready_seconds: int | None = None
    revision_history_limit: int | None = None
    paused: bool | None = None
    progress_deadline_seconds: int | None = None


class DeploymentCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    last_update_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class DeploymentStatus(ApiModel):
    observed_generation: int | None = None
    replicas: int | None = None
    updated_replicas: int | None = None
    ready_replicas: int | None = None
    available_replicas: int | None = None
    unavailable_replicas: int | None = None
    terminating_replicas: int | None = None
    conditions: list[DeploymentCondition] | None = None
    collision_count: int | None = None


class Deployment(ApiModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["Deployment"] = "Deployment"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DeploymentSpec = Field(default_factory=DeploymentSpec)
    status: DeploymentStatus | None = None


# ---------------------------------------------------------------------- ReplicaSet
class ReplicaSetSpec(ApiModel):
    replicas: int | None = None
    min_ready_seconds: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None


class ReplicaSetCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class ReplicaSetStatus(ApiModel):
    replicas: int | None = None
    fully_labeled_replicas: int | None = None
    ready_replicas: int | None = None
    available_replicas: int | None = None
    terminating_replicas: int | None = None
    observed_generation: int | None = None
    conditions: list[ReplicaSetCondition] | None = None


class ReplicaSet(ApiModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["ReplicaSet"] = "ReplicaSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ReplicaSetSpec = Field(default_factory=ReplicaSetSpec)
    status: ReplicaSetStatus | None = None


# --------------------------------------------------------------------- StatefulSet
class RollingUpdateStatefulSetStrategy(ApiModel):
    partition: int | None = None
    max_unavailable: IntOrString | None = None


class StatefulSetUpdateStrategy(ApiModel):
    type: str | None = None
    rolling_update: RollingUpdateStatefulSetStrategy | None = None


class StatefulSetPersistentVolumeClaimRetentionPolicy(ApiModel):
    when_deleted: str | None = None
    when_scaled: str | None = None


class StatefulSetOrdinals(ApiModel):
    start: int | None = None


class StatefulSetSpec(ApiModel):
    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None
    volume_claim_templates: list[JsonObject] | None = None
    service_name: str | None = None
    pod_management_policy: str | None = None
    update_strategy: StatefulSetUpdateStrategy | None = None
    revision_history_limit: int | None = None
    min_ready_seconds: int | None = None
    persistent_volume_claim_retention_policy: (
        StatefulSetPersistentVolumeClaimRetentionPolicy | None
    ) = None
    ordinals: StatefulSetOrdinals | None = None


class StatefulSetCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class StatefulSetStatus(ApiModel):
    observed_generation: int | None = None
    replicas: int | None = None
    ready_replicas: int | None = None
    current_replicas: int | None = None
    updated_replicas: int | None = None
    current_revision: str | None = None
    update_revision: str | None = None
    collision_count: int | None = None
    conditions: list[StatefulSetCondition] | None = None
    available_replicas: int | None = None


class StatefulSet(ApiModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["StatefulSet"] = "StatefulSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: StatefulSetSpec = Field(default_factory=StatefulSetSpec)
    status: StatefulSetStatus | None = None


# ----------------------------------------------------------------------- DaemonSet
class RollingUpdateDaemonSet(ApiModel):
    max_unavailable: IntOrString | None = None
    max_surge: IntOrString | None = None


class DaemonSetUpdateStrategy(ApiModel):
    type: str | None = None
    rolling_update: RollingUpdateDaemonSet | None = None


class DaemonSetSpec(ApiModel):
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None
    update_strategy: DaemonSetUpdateStrategy | None = None
    min_ready_seconds: int | None = None
    revision_history_limit: int | None = None


class DaemonSetCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class DaemonSetStatus(ApiModel):
    current_number_scheduled: int | None = None
    number_misscheduled: int | None = None
    desired_number_scheduled: int | None = None
    number_ready: int | None = None
    observed_generation: int | None = None
    updated_number_scheduled: int | None = None
    number_available: int | None = None
    number_unavailable: int | None = None
    collision_count: int | None = None
    conditions: list[DaemonSetCondition] | None = None


class DaemonSet(ApiModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["DaemonSet"] = "DaemonSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DaemonSetSpec = Field(default_factory=DaemonSetSpec)
    status: DaemonSetStatus | None = None


# -------------------------------------------------------------- ControllerRevision
class ControllerRevision(ApiModel):
    """A snapshot of a workload's template (``data`` is any JSON object upstream:
    ``runtime.RawExtension``)."""

    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["ControllerRevision"] = "ControllerRevision"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    data: Any = None
    revision: int | None = None


class DeploymentList(ApiModel):
    api_version: Literal["apps/v1"] = "apps/v1"
    kind: Literal["DeploymentList"] = "DeploymentList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Deployment] = Field(default_factory=list)
