"""The ``Tenant`` kind (``allot.dev/v1alpha1``): one team's entitlement on the fleet.

A Tenant names the host DeviceClasses its team may use (a label selector), its quotas, and
its sync settings. The sync settings use vCluster's keys unchanged
(``sync.fromHost.deviceClasses.{enabled,selector}``, ``sync.toHost.resourceClaims.enabled``,
``sync.toHost.resourceClaimTemplates.enabled``, ``sync.fromHost.nodes.{enabled,selector}``)
so a vCluster values file reads as a Tenant spec. ``VclusterValues`` is such a values
file with the one other part allot uses, ``policies.resourceQuota``. Pure models; read by
the tenant controller, the sync, the scheduler (GPU-memory quota) and ``allot tenant``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from allot.api.base import ApiModel, SortedMap
from allot.api.meta import Condition, LabelSelector, ListMeta, ObjectMeta
from allot.api.quantity import Quantity

TENANCY_GROUP = "allot.dev"
TENANCY_VERSION = "v1alpha1"


class EnableSwitch(ApiModel):
    """vCluster's ``EnableSwitchWithPatches``."""

    enabled: bool | None = None
    patches: list[dict[str, Any]] | None = None


class DeviceClassSync(EnableSwitch):
    """vCluster's ``EnableSwitchWithPatchesAndSelector``."""

    selector: LabelSelector | None = None


class SyncToHost(ApiModel):
    resource_claims: EnableSwitch | None = None
    resource_claim_templates: EnableSwitch | None = None


class NodeSyncSelector(ApiModel):
    """vCluster's ``SyncNodeSelector``: every host node, or those with these labels."""

    all: bool | None = None
    labels: dict[str, str] | None = None


class NodeSync(ApiModel):
    """vCluster's ``SyncNodes`` (``sync.fromHost.nodes``): which host nodes a tenant sees."""

    enabled: bool | None = None
    sync_back_changes: bool | None = None
    clear_image_status: bool | None = None
    selector: NodeSyncSelector | None = None


class SyncFromHost(ApiModel):
    device_classes: DeviceClassSync | None = None
    nodes: NodeSync | None = None


class TenantSync(ApiModel):
    to_host: SyncToHost | None = None
    from_host: SyncFromHost | None = None


class TenantQuota(ApiModel):
    hard: SortedMap[Quantity] | None = None
    """ResourceQuota keys, enforced in the tenant's host namespace."""
    gpu_memory: Quantity | None = None
    """The most GPU memory (sum of allocated devices' ``memory``) the tenant may hold."""


class TenantStorage(ApiModel):
    """What the tenant's own cluster may hold in the platform's store (every kind)."""

    objects: int | None = None
    """The most objects; default :data:`DEFAULT_STORAGE_OBJECTS`."""
    bytes: Quantity | None = None
    """The most bytes the cluster keeps: its objects, their retained watch history and its
    admission audit records; default :data:`DEFAULT_STORAGE_BYTES`."""

    def most_objects(self) -> int:
        return self.objects or DEFAULT_STORAGE_OBJECTS

    def most_bytes(self) -> int:
        return self.bytes.as_integer() if self.bytes is not None else DEFAULT_STORAGE_BYTES

    def most_history_bytes(self) -> int:
        """The watch history the cluster keeps, compacted past it: a 16th of its bytes."""
        return self.most_bytes() // 16

    def most_audit_file_bytes(self) -> int:
        """Each of its two admission audit files: a 64th of its bytes."""
        return self.most_bytes() // 64


DEFAULT_STORAGE_OBJECTS = 10_000
DEFAULT_STORAGE_BYTES = 256 * 2**20


class TenantAlerts(ApiModel):
    """Per-tenant overrides of the platform's alert thresholds."""

    pending_claim_seconds: int | None = None
    quota_usage_percent: int | None = None
    below_guarantee_seconds: int | None = None
    """``TenantBelowGuarantee``: how long work inside the guarantee may wait while the
    tenant holds less than its guarantee (fair-sharing mode)."""


class SharedAmount(ApiModel):
    """A tenant's share of one resource in fair-sharing mode (Kueue's ``ResourceQuota`` of
    a ClusterQueue flavor: ``nominalQuota`` is ``guaranteed``)."""

    guaranteed: Quantity | None = None
    """Always available to the tenant: borrowers are preempted to give it back."""
    borrowing_limit: Quantity | None = None
    """The most the tenant may use beyond ``guaranteed`` from the cohort's idle share;
    omitted: no limit (Kueue's ``borrowingLimit``)."""
    lending_limit: Quantity | None = None
    """The most of its idle ``guaranteed`` the tenant lends to the cohort; omitted: all of
    it (Kueue's ``lendingLimit``, at most ``guaranteed``)."""


class ClassShare(SharedAmount):
    """A share counted in devices of one host DeviceClass."""

    name: str | None = None


class SharingPreemption(ApiModel):
    """When waiting work may evict admitted work (Kueue's ClusterQueue ``preemption``)."""

    reclaim_within_cohort: str | None = None
    """``Any`` (default), ``LowerPriority`` or ``Never``: whether work inside the guarantee
    evicts other tenants' borrowed work."""
    within_tenant: str | None = None
    """``LowerPriority`` (default) or ``Never``: whether work evicts the tenant's own
    lower-priority work (Kueue's ``withinClusterQueue``)."""


class TenantSharing(ApiModel):
    """Fair sharing: guaranteed shares, borrowing idle devices of the cohort, reclaim by
    preemption. A tenant uses this or hard device quotas (``spec.quota``), not both."""

    cohort: str | None = None
    """Tenants of one cohort lend each other their idle shares (Kueue's cohort)."""
    device_classes: list[ClassShare] | None = None
    gpu_memory: SharedAmount | None = None
    """A share of GPU memory (bytes), counted from the devices each request's class selects."""
    default_priority: int | None = None
    """The priority of a workload without the ``allot.dev/priority`` label (default 0)."""
    preemption: SharingPreemption | None = None


class TenantSpec(ApiModel):
    device_class_selector: LabelSelector | None = None
    """Entitled host DeviceClasses; defaults to ``sync.fromHost.deviceClasses.selector``."""
    quota: TenantQuota | None = None
    sharing: TenantSharing | None = None
    sync: TenantSync | None = None
    alerts: TenantAlerts | None = None
    storage: TenantStorage | None = None


class TenantStatus(ApiModel):
    phase: str | None = None
    namespace: str | None = None
    server: str | None = None
    entitled_device_classes: list[str] | None = None
    observed_generation: int | None = None
    conditions: list[Condition] | None = None


class Tenant(ApiModel):
    api_version: Literal["allot.dev/v1alpha1"] = "allot.dev/v1alpha1"
    kind: Literal["Tenant"] = "Tenant"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: TenantSpec = Field(default_factory=TenantSpec)
    status: TenantStatus | None = None


class TenantList(ApiModel):
    api_version: Literal["allot.dev/v1alpha1"] = "allot.dev/v1alpha1"
    kind: Literal["TenantList"] = "TenantList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Tenant] = Field(default_factory=list)


class AlertSubject(ApiModel):
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None


class AlertSpec(ApiModel):
    rule: str | None = None
    severity: str | None = None
    tenant: str | None = None
    subject: AlertSubject | None = None
    message: str | None = None


class AlertStatus(ApiModel):
    state: str | None = None
    active_since: str | None = None
    last_evaluated: str | None = None


class Alert(ApiModel):
    """A firing alert, kept by the alert controller while its condition holds."""

    api_version: Literal["allot.dev/v1alpha1"] = "allot.dev/v1alpha1"
    kind: Literal["Alert"] = "Alert"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AlertSpec = Field(default_factory=AlertSpec)
    status: AlertStatus | None = None


class ResourceQuotaPolicy(ApiModel):
    """vCluster's ``policies.resourceQuota``; ``quota`` becomes ResourceQuota ``hard``.
    ``enabled`` is a bool or a string (vCluster's default is ``auto``)."""

    enabled: bool | str | None = None
    quota: SortedMap[Quantity] | None = None
    scopes: list[str] | None = None
    scope_selector: dict[str, Any] | None = None
    labels: SortedMap[str] | None = None
    annotations: SortedMap[str] | None = None


class Policies(ApiModel):
    resource_quota: ResourceQuotaPolicy | None = None


class VclusterValues(ApiModel):
    """The parts of a vCluster values file allot reads (see ``allot.tenancy.values``)."""

    sync: TenantSync | None = None
    policies: Policies | None = None


def entitlement_selector(spec: TenantSpec) -> LabelSelector | None:
    """The selector of entitled classes: explicit, else the vCluster sync selector."""
    if spec.device_class_selector is not None:
        return spec.device_class_selector
    sync = spec.sync
    if sync and sync.from_host and sync.from_host.device_classes:
        return sync.from_host.device_classes.selector
    return None


def syncs(spec: TenantSpec, what: str) -> bool:
    """Whether ``what`` (``resourceClaims``, ``resourceClaimTemplates``, ``deviceClasses``)
    is enabled; allot enables all three unless the spec switches one off explicitly."""
    sync = spec.sync or TenantSync()
    switch: EnableSwitch | None
    if what == "deviceClasses":
        switch = sync.from_host.device_classes if sync.from_host else None
    elif what == "resourceClaims":
        switch = sync.to_host.resource_claims if sync.to_host else None
    else:
        switch = sync.to_host.resource_claim_templates if sync.to_host else None
    return switch is None or switch.enabled is None or switch.enabled
