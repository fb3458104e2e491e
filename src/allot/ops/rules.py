"""The alert rules, evaluated on a capacity snapshot: which alerts fire now.

The rules, most with a threshold the platform sets (``AlertSettings``) and a tenant may
override for its own claims and quotas (``Tenant.spec.alerts``):

* ``ClaimPendingTooLong``: a claim unallocated for longer than ``pending_claim_seconds``
  (default 5 minutes); the message carries why, as the scheduler last said it;
* ``DeviceClassLowFree``: a class of which fewer than ``class_free_below`` devices can still
  be allocated (counted one after the other, shared counters included: a DynamicMIG GPU's
  free placements may exclude each other);
* ``TenantQuotaHigh``: a tenant's ResourceQuota key, or its GPU-memory quota, used at or
  above ``quota_usage_percent`` (default 90);
* ``SlicePoolIncomplete`` / ``SlicePoolStale``: a pool publishing fewer slices than its
  ``resourceSliceCount`` (the allocator ignores it), or published for a node that is gone;
* ``TenantSyncError``: a tenant object the sync could not create on the host;
* ``TenantBelowGuarantee``: a tenant in fair-sharing mode whose work inside its guarantee
  has waited longer than ``below_guarantee_seconds`` (default 2 minutes) while the tenant
  holds less than its guarantee (borrowers are not giving it back fast enough, or the
  fleet cannot hold what the cohort guarantees);
* ``RevokedClassAllocated``: an allocated claim of a tenant that names a class no longer
  in its entitlement (the class was revoked after the allocation; its pods keep the
  devices until they end, no new pod may use the claim). Cleared when the claim is
  deallocated or the entitlement returns;
* ``DeviceTainted``: a device whose driver published a taint on it (a GPU's health: an
  XID, a lost GPU), naming the device, its node, the taint, and the claims allocated on it
  (with their tenants); ``critical`` when the taint keeps new claims away (``NoSchedule``,
  ``NoExecute``), ``warning`` when it only informs (``None``). Cleared when the driver
  removes the taint (or the device goes).

Pure: the caller passes the snapshot, the tenants, quotas, nodes, sync errors, the pending
reasons and the clock; the same rules render as a PrometheusRule for real clusters.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from allot.api.quantity import Quantity
from allot.api.tenancy import TenantSpec
from allot.fairshare.books import show
from allot.fairshare.report import TenantReport
from allot.ops.capacity import ClaimInfo, Snapshot, memory_text
from allot.registry import HOST_CLUSTER
from allot.types import Obj, rfc3339


@dataclass(frozen=True)
class AlertSettings:
    pending_claim_seconds: int = 300
    class_free_below: int = 1
    quota_usage_percent: int = 90
    below_guarantee_seconds: int = 120
    interval_seconds: float = 5.0
    settle_seconds: float = 10.0
    """How long the condition of a :data:`SETTLING` rule must stay gone before its alert
    ends (Prometheus's ``keep_firing_for``)."""


SETTLING = frozenset({"DeviceClassLowFree", "TenantQuotaHigh"})
"""Rules about counts every release moves and the next allocation moves back: a device
freed by one claim and taken by the next a moment later is no end of the condition, and
ending the alert there raised it again at once (the demo printed it twice, issue 28)."""


@dataclass(frozen=True)
class Firing:
    rule: str
    severity: str
    tenant: str
    subject_kind: str
    subject_namespace: str
    subject_name: str
    message: str = field(compare=False)

    @property
    def name(self) -> str:
        subject = f"{self.subject_kind}/{self.subject_namespace}/{self.subject_name}/{self.tenant}"
        digest = hashlib.sha1(subject.encode()).hexdigest()[:10]
        return f"{self.rule.lower()}-{digest}"


@dataclass
class RuleInputs:
    snapshot: Snapshot
    tenants: Mapping[str, TenantSpec]
    quotas: list[Obj]  # ResourceQuotas in tenant namespaces
    nodes: set[str]
    sync_errors: Mapping[tuple[str, str, str, str], str]
    pending_reason: Callable[[ClaimInfo], str]
    entitled: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Tenant -> the classes its params entitle it to now (tenants absent: not checked)."""
    sharing: Mapping[str, TenantReport] = field(default_factory=dict)
    """The fair-sharing tenants' reports after the last admission pass."""
    pending_since: Mapping[tuple[str, str], dt.datetime] = field(default_factory=dict)
    """(namespace, name) -> since when a claim is pending, when that is not its creation
    (it was allocated, then released: a preempted pod's claim)."""


def evaluate(inputs: RuleInputs, settings: AlertSettings) -> list[Firing]:
    return [
        *_pending_claims(inputs, settings),
        *_low_free_classes(inputs, settings),
        *_quota_usage(inputs, settings),
        *_pools(inputs),
        *_sync_errors(inputs),
        *_revoked_allocations(inputs),
        *_below_guarantee(inputs, settings),
        *_tainted_devices(inputs),
    ]


def pending_threshold(spec: TenantSpec | None, settings: AlertSettings) -> int:
    own = spec.alerts.pending_claim_seconds if spec and spec.alerts else None
    return own if own is not None else settings.pending_claim_seconds


def _pending_claims(inputs: RuleInputs, settings: AlertSettings) -> list[Firing]:
    found = []
    now = inputs.snapshot.now
    for claim in inputs.snapshot.pending():
        since = inputs.pending_since.get((claim.namespace, claim.name), claim.created)
        if since is None:
            continue
        age = (now - since).total_seconds()
        threshold = pending_threshold(inputs.tenants.get(claim.tenant), settings)
        if age <= threshold:
            continue
        owner = f"tenant {claim.tenant}" if claim.tenant else f"namespace {claim.namespace}"
        found.append(
            Firing(
                "ClaimPendingTooLong",
                "warning",
                claim.tenant or HOST_CLUSTER,  # as allot_claims and the pending panel name it
                "ResourceClaim",
                claim.namespace,
                claim.name,
                # a moment, not an age: the message changes only when the facts do (the
                # Alert object is rewritten when it changes)
                f"claim {claim.tenant_claim} of {owner} has been pending since "
                f"{rfc3339(since)} (threshold {threshold}s): {inputs.pending_reason(claim)}",
            )
        )
    return found


def _low_free_classes(inputs: RuleInputs, settings: AlertSettings) -> list[Firing]:
    totals: dict[str, list[int]] = {}
    for (_, _, _, device_class), counts in inputs.snapshot.device_rows().items():
        entry = totals.setdefault(device_class, [0, 0])
        entry[0] += counts["total"]
        entry[1] += counts["allocatable"]
    found = []
    for device_class in inputs.snapshot.classes:
        total, free = totals.get(device_class, [0, 0])
        if total and free < settings.class_free_below:
            found.append(
                Firing(
                    "DeviceClassLowFree",
                    "warning",
                    "",
                    "DeviceClass",
                    "",
                    device_class,
                    f"device class {device_class} can still allocate {free} device(s) of "
                    f"{total} (threshold {settings.class_free_below})",
                )
            )
    return found


def _quota_usage(inputs: RuleInputs, settings: AlertSettings) -> list[Firing]:
    found = []
    for quota in inputs.quotas:
        tenant = (quota["metadata"].get("labels") or {}).get("allot.dev/tenant", "")
        percent = _percent_threshold(inputs.tenants.get(tenant), settings)
        status = quota.get("status") or {}
        for key, hard in sorted((status.get("hard") or {}).items()):
            limit = Quantity.parse(str(hard))
            used = Quantity.parse(str((status.get("used") or {}).get(key, "0")))
            if limit.sign() > 0 and used.nanos * 100 >= limit.nanos * percent:
                found.append(
                    _quota_firing(tenant, quota, key, f"{used} of {limit}", percent, used, limit)
                )
    for tenant, spec in sorted(inputs.tenants.items()):
        most = spec.quota.gpu_memory if spec.quota else None
        held = inputs.snapshot.tenant_memory().get(tenant, 0)
        percent = _percent_threshold(spec, settings)
        if most is not None and most.sign() > 0 and held * 100 * 10**9 >= most.nanos * percent:
            share = held * 100 * 10**9 // most.nanos
            found.append(
                Firing(
                    "TenantQuotaHigh",
                    "warning",
                    tenant,
                    "Tenant",
                    "",
                    tenant,
                    f"tenant {tenant} holds {memory_text(held)} of its {most} GPU memory quota "
                    f"({share}%, threshold {percent}%)",
                )
            )
    return found


def _percent_threshold(spec: TenantSpec | None, settings: AlertSettings) -> int:
    own = spec.alerts.quota_usage_percent if spec and spec.alerts else None
    return own if own is not None else settings.quota_usage_percent


def _quota_firing(
    tenant: str, quota: Obj, key: str, shown: str, percent: int, used: Quantity, hard: Quantity
) -> Firing:
    share = used.nanos * 100 // hard.nanos
    return Firing(
        "TenantQuotaHigh",
        "warning",
        tenant,
        "ResourceQuota",
        quota["metadata"].get("namespace", ""),
        f"{quota['metadata']['name']}/{key}",
        f"tenant {tenant or '<none>'} uses {shown} {key} ({share}%, threshold {percent}%)",
    )


def _pools(inputs: RuleInputs) -> list[Firing]:
    found = []
    for pool in inputs.snapshot.pools:
        if not pool.complete:
            found.append(
                Firing(
                    "SlicePoolIncomplete",
                    "critical",
                    "",
                    "ResourcePool",
                    pool.driver,
                    pool.pool,
                    f"pool {pool.pool} of driver {pool.driver} publishes {pool.slices} of "
                    f"{pool.expected} slices (generation {pool.generation}); the allocator "
                    "does not use an incomplete pool",
                )
            )
        if pool.node and pool.node not in inputs.nodes:
            found.append(
                Firing(
                    "SlicePoolStale",
                    "critical",
                    "",
                    "ResourcePool",
                    pool.driver,
                    pool.pool,
                    f"pool {pool.pool} of driver {pool.driver} is published for node "
                    f"{pool.node}, which does not exist",
                )
            )
    return found


def _sync_errors(inputs: RuleInputs) -> list[Firing]:
    return [
        Firing(
            "TenantSyncError",
            "warning",
            tenant,
            kind,
            namespace,
            name,
            f"tenant {tenant}: {kind} {namespace}/{name} {message}",
        )
        for (tenant, kind, namespace, name), message in sorted(inputs.sync_errors.items())
    ]


def _revoked_allocations(inputs: RuleInputs) -> list[Firing]:
    found = []
    for claim in inputs.snapshot.claims:
        entitled = inputs.entitled.get(claim.tenant)
        if not claim.allocated or entitled is None:
            continue
        revoked = [c for c in claim.classes if c not in entitled]
        if revoked:
            found.append(
                Firing(
                    "RevokedClassAllocated",
                    "warning",
                    claim.tenant,
                    "ResourceClaim",
                    claim.namespace,
                    claim.name,
                    f"claim {claim.tenant_claim} of tenant {claim.tenant} holds devices of class "
                    f"{', '.join(revoked)}, which is no longer in its entitlement (entitled: "
                    f"{', '.join(entitled) or '<none>'}); its pods keep them until they end, "
                    "and no new pod may use the claim",
                )
            )
    return found


def _tainted_devices(inputs: RuleInputs) -> list[Firing]:
    found = []
    snapshot = inputs.snapshot
    for key, device in sorted(snapshot.devices.items()):
        if not device.taints:
            continue
        holders = [c for c in snapshot.claims if key in c.devices]
        named = ", ".join(
            f"{c.namespace}/{c.name}"
            + (f" (tenant {c.tenant}: {c.tenant_claim})" if c.tenant else "")
            for c in holders
        )
        blocking = any(t.endswith((":NoSchedule", ":NoExecute")) for t in device.taints)
        effect = (
            "new claims that do not tolerate it cannot be allocated it"
            if blocking
            else "it stays allocatable (the taint informs)"
        )
        found.append(
            Firing(
                "DeviceTainted",
                "critical" if blocking else "warning",
                "",
                "Device",
                f"{device.driver}/{device.pool}",
                device.name,
                f"device {device.name} of driver {device.driver} on node {device.node or '-'} "
                f"is tainted {', '.join(device.taints)}: {effect}; claims allocated on it: "
                f"{named or '<none>'}",
            )
        )
    return found


def _below_guarantee(inputs: RuleInputs, settings: AlertSettings) -> list[Firing]:
    found = []
    now = inputs.snapshot.now.timestamp()
    for tenant, report in sorted(inputs.sharing.items()):
        spec = inputs.tenants.get(tenant)
        own = spec.alerts.below_guarantee_seconds if spec and spec.alerts else None
        threshold = own if own is not None else settings.below_guarantee_seconds
        since = report.below_guarantee_since
        if since is None or now - since <= threshold:
            continue
        held = ", ".join(
            f"{show(r, s.used)} of {show(r, s.guaranteed)} {r}"
            for r, s in report.resources.items()
            if s.used < s.guaranteed
        )
        found.append(
            Firing(
                "TenantBelowGuarantee",
                "warning",
                tenant,
                "Tenant",
                "",
                tenant,
                f"tenant {tenant} has had work inside its guarantee waiting since "
                f"{rfc3339(dt.datetime.fromtimestamp(since, dt.UTC))} (threshold "
                f"{threshold}s) while it holds {held}",
            )
        )
    return found


_KUEUE_BELOW_NOMINAL = (
    '(max by (cluster_queue) (kueue_pending_workloads{status="active"}) > 0) and on '
    "(cluster_queue) (count by (cluster_queue) (kueue_cluster_queue_resource_usage < on "
    "(cluster_queue, flavor, resource) kueue_cluster_queue_nominal_quota) > 0)"
)
"""On a real cluster Kueue queues fair-sharing tenants: a ClusterQueue with active pending
workloads that uses less than its nominal quota of some resource (Kueue's metrics cannot
tell work inside the guarantee from work that would borrow)."""


def _for(alert: str, settings: AlertSettings) -> str:
    if alert == "ClaimPendingTooLong":
        return "0m"
    if alert == "TenantBelowGuarantee":
        return f"{settings.below_guarantee_seconds}s"
    return "1m"


def prometheus_rule(settings: AlertSettings, namespace: str = "allot-system") -> Obj:
    """The same rules for a real cluster's Prometheus Operator, on allot's metrics."""
    rules = [
        (
            "ClaimPendingTooLong",
            "max by (tenant) (allot_oldest_pending_claim_age_seconds) > "
            f"{settings.pending_claim_seconds}",
            "warning",
            "A claim of tenant {{ $labels.tenant }} has been pending for {{ $value }}s.",
        ),
        (
            "DeviceClassLowFree",
            f"sum by (class) (allot_class_devices_allocatable) < {settings.class_free_below}",
            "warning",
            "Device class {{ $labels.class }} can still allocate {{ $value }} devices.",
        ),
        (
            "TenantQuotaHigh",
            f"allot_quota_used_ratio * 100 >= {settings.quota_usage_percent}",
            "warning",
            "Tenant {{ $labels.tenant }} uses {{ $value }}% of {{ $labels.resource }}.",
        ),
        (
            "SlicePoolIncomplete",
            "allot_pool_slices < allot_pool_slices_expected",
            "critical",
            "Pool {{ $labels.pool }} of {{ $labels.driver }} is incomplete.",
        ),
        (
            "TenantSyncError",
            "allot_tenant_sync_errors > 0",
            "warning",
            "Tenant {{ $labels.tenant }} has objects the sync could not create on the host.",
        ),
        (
            "TenantBelowGuarantee",
            _KUEUE_BELOW_NOMINAL,
            "warning",
            "ClusterQueue {{ $labels.cluster_queue }} has pending workloads while it uses less"
            " than its nominal quota.",
        ),
        (
            "RevokedClassAllocated",
            'max by (tenant) (allot_alert{rule="RevokedClassAllocated"}) > 0',
            "warning",
            "Tenant {{ $labels.tenant }} holds devices through a class no longer entitled.",
        ),
        (
            "DeviceTainted",
            'max by (subject) (allot_alert{rule="DeviceTainted"}) > 0',
            "critical",
            "Device {{ $labels.subject }} is tainted by its driver (its health).",
        ),
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "allot", "namespace": namespace},
        "spec": {
            "groups": [
                {
                    "name": "allot",
                    "rules": [
                        {
                            "alert": alert,
                            "expr": expression,
                            "for": _for(alert, settings),
                            "labels": {"severity": severity},
                            "annotations": {"summary": summary},
                        }
                        for alert, expression, severity, summary in rules
                    ],
                }
            ]
        },
    }
