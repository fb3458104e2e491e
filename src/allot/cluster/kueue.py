"""Kueue objects for fair-sharing Tenants: the same policy on a real cluster.

The embedded platform admits a sharing tenant's workloads itself; on a real cluster Kueue
does it, from objects rendered here in ``kueue.x-k8s.io/v1beta2`` (Kueue 0.15 and later;
stored from 0.16, where v1beta1 is served with a deprecation warning on every object) or,
asked for (``allot render --kueue-api v1beta1``, for Kueue 0.14), in ``v1beta1``. The two
differ in what allot renders only by the ClusterQueue's cohort (v1beta2's ``cohortName``,
v1beta1's ``cohort``) and the Configuration's group version; Cohort, ResourceFlavor,
WorkloadPriorityClass and LocalQueue are alike (a fair-sharing ``weight``, a Cohort's
``parentName`` are spelt the same in both, and allot renders neither). Kueue itself
defaults one thing differently by the Configuration's version: from 0.19 a v1beta2
Configuration (the one Kueue ships since 0.15) has ``waitForPodsReady`` on, 30 minutes,
unless the ``DisableWaitForPodsReady`` gate is set; a v1beta1 one has it off. The
fragment leaves it to the cluster's Configuration (docs/conformance.md, "Fair sharing").
What is rendered:

* a ``Cohort`` per cohort name (no quota of its own: the members' quotas are the pool);
* one ``ResourceFlavor``, ``allot-devices``, with no node labels: DRA picks the devices,
  the flavor only names the quota;
* a ``ClusterQueue`` per sharing tenant, named after it: the cohort, a ``namespaceSelector``
  on the ``allot.dev/tenant`` label of its host namespace, one resource group covering its
  shared DeviceClasses (as the resource names of the configuration's mappings), with
  ``nominalQuota`` = ``guaranteed`` and the two limits; ``preemption`` from the tenant's
  (``withinTenant`` is Kueue's ``withinClusterQueue``), both written out because Kueue's
  defaults (``Never``) differ from allot's;
* a ``LocalQueue`` named ``default`` in the host namespace, so Kueue's LocalQueueDefaulting
  (beta, on since 0.12) queues workloads that name no queue;
* a ``WorkloadPriorityClass`` per tenant default priority (``allot-priority-<n>``): Kueue
  has no per-queue default, so workloads opt in with ``kueue.x-k8s.io/priority-class``;
* the Configuration fragment (``resources.deviceClassMappings``, one class per resource;
  ``featureGates: {KueueDRAIntegration: true}``, the gate the mappings need, named so
  since Kueue 0.18, where it is on by default: 0.14 to 0.17 call it
  ``DynamicResourceAllocation``, alpha and off, and 0.18 locks that old name off, 0.19
  removes it, so either name stops the other versions at startup and the file's header
  says which to use; ``resources.excludeResourcePrefixes`` for ``cpu``, ``memory`` and
  ``ephemeral-storage``, needed because a ClusterQueue admits no workload asking for a
  resource it does not cover and allot's shares cover devices only, but global: it stops
  Kueue counting those resources for every ClusterQueue of the cluster, which the header
  says too (``pods`` is counted only by queues that cover it, so it is not excluded);
  ``integrations.frameworks: [pod]``, since tenants' workloads reach the host as plain pods
  (vCluster syncs pods, not their Jobs) and Kueue's default configuration leaves the
  ``pod`` integration off; and ``metrics.enableClusterQueueResources``, the quota and
  usage gauges the ``TenantBelowGuarantee`` rule reads), a file to merge into Kueue's
  ``kueue-manager-config``, like the vCluster values.

Each ClusterQueue covers every class shared by a member of its cohort, at ``nominalQuota:
"0"`` where the tenant has no share of it: the embedded platform lets a tenant borrow any
class its cohort shares, and Kueue admits no workload needing a resource its
ClusterQueue does not cover.

GPU-memory shares are not rendered: Kueue's device-class mappings count devices (its
counter sources, v1beta2 only, charge a published counter instead of counting, and one
class maps to one resource), so ``gpuMemory`` has no Kueue equivalent. Pure; used by
:mod:`allot.cluster.render`.
"""

from __future__ import annotations

from allot.api.tenancy import ClassShare, SharedAmount, Tenant
from allot.tenancy import entitlement, names
from allot.types import Obj

V1BETA2, V1BETA1 = "v1beta2", "v1beta1"
VERSIONS = (V1BETA2, V1BETA1)
"""What ``--kueue-api`` takes: v1beta2 (Kueue 0.15+) by default, v1beta1 for Kueue 0.14."""
FIRST_RELEASE = {V1BETA2: "0.15", V1BETA1: "0.14"}
"""The first Kueue release each is rendered for: v1beta2 appeared in 0.15; 0.14 is the
first with the device-class mappings allot's quotas need."""
KUEUE_GROUP, CONFIG_GROUP = "kueue.x-k8s.io", "config.kueue.x-k8s.io"
COHORT_FIELD = {V1BETA2: "cohortName", V1BETA1: "cohort"}
KUEUE_KINDS = ("Cohort", "ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue")
FLAVOR = "allot-devices"
LOCAL_QUEUE = "default"
RESOURCE_PREFIX = "allot.dev/"
MAX_MAPPINGS = 16  # Kueue's Configuration validation
MAX_RESOURCE_NAME = 63  # the name part of a qualified name
DEFAULT_RECLAIM = "Any"
DEFAULT_WITHIN_TENANT = "LowerPriority"
EXCLUDED_RESOURCES = ("cpu", "memory", "ephemeral-storage")
"""What every pod asks for and allot's shares do not count; Kueue refuses workloads asking
for resources their ClusterQueue does not cover, unless the Configuration excludes them
(for every ClusterQueue of the cluster). ``pods`` needs no exclusion: Kueue counts it only
where a ClusterQueue covers it."""
DRA_FEATURE_GATE = "KueueDRAIntegration"
"""The gate ``deviceClassMappings`` need (Kueue 0.18+; ``DynamicResourceAllocation`` before)."""
OLD_DRA_FEATURE_GATE = "DynamicResourceAllocation"
POD_FRAMEWORK = "pod"
"""Kueue's integration for plain pods. A tenant's workloads reach the host as pods (vCluster
syncs pods, never the Jobs or Deployments that made them), so without it Kueue queues none
of them; Kueue's shipped configuration leaves it commented out."""


class KueueRenderError(ValueError):
    """The tenants' shares cannot be expressed as Kueue objects."""


def sharing_tenants(tenants: list[Tenant]) -> list[Tenant]:
    return [t for t in tenants if t.spec.sharing is not None]


def resource_name(device_class: str) -> str:
    """The Kueue resource a DeviceClass is counted as (a qualified name)."""
    if len(device_class) > MAX_RESOURCE_NAME:
        raise KueueRenderError(
            f"DeviceClass {device_class}: a name longer than {MAX_RESOURCE_NAME} characters "
            "cannot be a Kueue resource name"
        )
    return RESOURCE_PREFIX + device_class


def priority_class_name(value: int) -> str:
    return f"allot-priority-{value}" if value >= 0 else f"allot-priority-minus-{-value}"


def shared_classes(tenants: list[Tenant]) -> list[str]:
    found = {
        share.name
        for tenant in sharing_tenants(tenants)
        for share in (tenant.spec.sharing.device_classes if tenant.spec.sharing else None) or []
        if share.name
    }
    return sorted(found)


def cohort_classes(tenant: Tenant, tenants: list[Tenant]) -> list[str]:
    """The classes shared by any member of the tenant's cohort (its own alone without one):
    what its ClusterQueue must cover to borrow as the embedded platform lets it."""
    cohort = tenant.spec.sharing.cohort if tenant.spec.sharing else None
    if not cohort:
        return shared_classes([tenant])
    return shared_classes(
        [t for t in sharing_tenants(tenants) if t.spec.sharing and t.spec.sharing.cohort == cohort]
    )


def api_version(version: str = V1BETA2) -> str:
    return f"{KUEUE_GROUP}/{version}"


def kueue_objects(tenants: list[Tenant], version: str = V1BETA2) -> list[Obj]:
    """Every Kueue object for the sharing tenants in ``version``, in apply order (none
    without any)."""
    members = sharing_tenants(tenants)
    if not members:
        return []
    cohorts = sorted(
        {t.spec.sharing.cohort for t in members if t.spec.sharing and t.spec.sharing.cohort}
    )
    priorities = sorted({_default_priority(t) for t in members})
    objects = [_object("Cohort", name, {"spec": {}}, version) for name in cohorts]
    objects.append(_object("ResourceFlavor", FLAVOR, {"spec": {}}, version))
    objects += [_priority_class(value, version) for value in priorities]
    objects += [cluster_queue(t, cohort_classes(t, members), version) for t in members]
    objects += [local_queue(t, version) for t in members]
    return objects


def configuration(tenants: list[Tenant], version: str = V1BETA2) -> Obj:
    """The Configuration fragment in ``version``: each shared class mapped to its resource
    (the fields it sets are spelt the same in both versions)."""
    classes = shared_classes(tenants)
    if len(classes) > MAX_MAPPINGS:
        raise KueueRenderError(
            f"{len(classes)} DeviceClasses are shared; Kueue maps at most {MAX_MAPPINGS}"
        )
    mappings = [{"name": resource_name(c), "deviceClassNames": [c]} for c in classes]
    return {
        "apiVersion": f"{CONFIG_GROUP}/{version}",
        "kind": "Configuration",
        "featureGates": {DRA_FEATURE_GATE: True},
        "integrations": {"frameworks": [POD_FRAMEWORK]},
        "metrics": {"enableClusterQueueResources": True},  # TenantBelowGuarantee reads them
        "resources": {
            "excludeResourcePrefixes": list(EXCLUDED_RESOURCES),
            "deviceClassMappings": mappings,
        },
    }


def cluster_queue(tenant: Tenant, covered: list[str], version: str = V1BETA2) -> Obj:
    """The tenant's ClusterQueue in ``version``, covering ``covered`` (its cohort's shared
    classes): its own shares as quotas, ``nominalQuota: "0"`` and no limits for the others."""
    sharing = tenant.spec.sharing
    assert sharing is not None
    name = tenant.metadata.name or ""
    own = {s.name: s for s in sharing.device_classes or [] if s.name}
    shares = [own.get(c) or ClassShare(name=c) for c in sorted(set(covered) | set(own))]
    preemption = sharing.preemption
    spec: Obj = {}
    if sharing.cohort:
        spec[COHORT_FIELD[version]] = sharing.cohort
    spec["namespaceSelector"] = {"matchLabels": {names.TENANT_LABEL: name}}
    spec["queueingStrategy"] = "BestEffortFIFO"
    if shares:
        spec["resourceGroups"] = [
            {
                "coveredResources": [resource_name(s.name or "") for s in shares],
                "flavors": [
                    {
                        "name": FLAVOR,
                        "resources": [_quota(resource_name(s.name or ""), s) for s in shares],
                    }
                ],
            }
        ]
    spec["preemption"] = {
        "reclaimWithinCohort": (preemption.reclaim_within_cohort if preemption else None)
        or DEFAULT_RECLAIM,
        "withinClusterQueue": (preemption.within_tenant if preemption else None)
        or DEFAULT_WITHIN_TENANT,
    }
    return _object("ClusterQueue", name, {"spec": spec}, version)


def local_queue(tenant: Tenant, version: str) -> Obj:
    name = tenant.metadata.name or ""
    queue = _object("LocalQueue", LOCAL_QUEUE, {"spec": {"clusterQueue": name}}, version)
    queue["metadata"]["namespace"] = names.host_namespace(name)
    return queue


def _quota(resource: str, share: SharedAmount) -> Obj:
    quota: Obj = {"name": resource, "nominalQuota": str(share.guaranteed or "0")}
    if share.borrowing_limit is not None:
        quota["borrowingLimit"] = str(share.borrowing_limit)
    if share.lending_limit is not None:
        quota["lendingLimit"] = str(share.lending_limit)
    return quota


def _default_priority(tenant: Tenant) -> int:
    sharing = tenant.spec.sharing
    return (sharing.default_priority if sharing else None) or 0


def _priority_class(value: int, version: str) -> Obj:
    wpc = _object("WorkloadPriorityClass", priority_class_name(value), {"value": value}, version)
    wpc["description"] = (
        "The default priority of allot tenants; label workloads "
        f"kueue.x-k8s.io/priority-class: {priority_class_name(value)}"
    )
    return wpc


def _object(kind: str, name: str, body: Obj, version: str) -> Obj:
    metadata = {"name": name, "labels": dict(entitlement.MANAGED_BY)}
    return {"apiVersion": api_version(version), "kind": kind, "metadata": metadata, **body}
