"""Validation of Tenant objects: names that fit the host, selectors, sync and quotas.

A tenant's name becomes a URL prefix, a cluster name and the host namespace
``tenant-<name>``, so it must be a DNS label short enough for that namespace and may not
be ``host``. vCluster ``patches`` are not implemented, so a non-empty list is refused with
that reason rather than silently ignored. ``spec.sharing`` (fair sharing) follows the rules
Kueue's ClusterQueue webhook and CRD apply to the same numbers (negative amounts, a lending
limit above the guarantee, limits without a cohort, a cohort that is no DNS-1123
subdomain), with Kueue's texts where the meaning is the same; a tenant uses fair sharing or
hard device quotas, not both. Which classes exist is not known here:
:func:`validate_sharing_classes` takes the catalogue from its caller (the API server's
admission, ``allot validate`` and ``allot render`` on a platform file). Called from
:mod:`allot.validation.objects`.
"""

from __future__ import annotations

from collections.abc import Mapping

from allot.api import tenancy
from allot.api.meta import LabelSelector, selector_matches
from allot.api.quantity import Quantity
from allot.validation.field import (
    ErrorList,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    required,
)
from allot.validation.names import (
    DEVICE_CLASS_QUOTA_SUFFIX,
    DEVICE_CLASS_RESOURCE_PREFIX,
    QUOTA_LIMITS_PREFIX,
    QUOTA_REQUESTS_PREFIX,
    is_device_quota_key,
    is_dns1123_subdomain,
)
from allot.validation.suggestions import did_you_mean

TENANT_NAMESPACE_PREFIX = "tenant-"
MAX_TENANT_NAME = 63 - len(TENANT_NAMESPACE_PREFIX)
RESERVED_NAMES = ("host",)
OPERATORS = ["DoesNotExist", "Exists", "In", "NotIn"]
RECLAIM_POLICIES = ["Any", "LowerPriority", "Never"]
WITHIN_TENANT_POLICIES = ["LowerPriority", "Never"]
NEGATIVE = "must be greater than or equal to 0"  # apimachinery's IsNegativeErrorMsg
WITHOUT_COHORT = "must be nil when cohort is empty"  # Kueue's ClusterQueue webhook
ABOVE_GUARANTEE = "must be less than or equal to guaranteed"
INT32 = (-(2**31), 2**31 - 1)
PERCENT = "must be between 1 and 100, inclusive"  # apimachinery's InclusiveRangeError


def validate_tenant(tenant: tenancy.Tenant) -> ErrorList:
    errors: ErrorList = []
    name = tenant.metadata.name or ""
    if len(name) > MAX_TENANT_NAME:
        errors.append(
            invalid(
                Path("metadata").child("name"),
                name,
                f"must be no more than {MAX_TENANT_NAME} characters (the host namespace is "
                f"{TENANT_NAMESPACE_PREFIX}<name>)",
            )
        )
    if name in RESERVED_NAMES:
        errors.append(
            invalid(Path("metadata").child("name"), name, "is reserved for the host cluster")
        )
    spec = tenant.spec
    errors += validate_selector(
        spec.device_class_selector, Path("spec").child("deviceClassSelector")
    )
    errors += validate_sync(spec.sync, Path("spec").child("sync"))
    if spec.quota and spec.quota.gpu_memory is not None and spec.quota.gpu_memory.sign() < 0:
        errors.append(
            invalid(
                Path("spec").child("quota", "gpuMemory"),
                str(spec.quota.gpu_memory),
                "must be greater than or equal to 0",
            )
        )
    for key, value in ((spec.quota.hard if spec.quota else None) or {}).items():
        if value.compare(Quantity(0)) < 0:
            errors.append(
                invalid(
                    Path("spec").child("quota", "hard").key(key),
                    str(value),
                    "must be greater than or equal to 0",
                )
            )
    errors += validate_sharing(spec, Path("spec").child("sharing"))
    errors += validate_alerts(spec.alerts, Path("spec").child("alerts"))
    return errors


def validate_alerts(alerts: tenancy.TenantAlerts | None, path: Path) -> ErrorList:
    """Thresholds that can hold: waits of 0 seconds or more, a quota share of 1 to 100 per
    cent (a negative wait fires at once for every pending claim, a share above 100 never)."""
    if alerts is None:
        return []
    errors: ErrorList = []
    waits = (
        ("pendingClaimSeconds", alerts.pending_claim_seconds),
        ("belowGuaranteeSeconds", alerts.below_guarantee_seconds),
    )
    for field, seconds in waits:
        if seconds is not None and seconds < 0:
            errors.append(invalid(path.child(field), seconds, NEGATIVE))
    percent = alerts.quota_usage_percent
    if percent is not None and not 1 <= percent <= 100:
        errors.append(invalid(path.child("quotaUsagePercent"), percent, PERCENT))
    return errors


def device_quota_keys(quota: tenancy.TenantQuota | None) -> list[str]:
    """The hard-quota fields that count devices (which fair sharing replaces): exactly
    the keys the tenant controller leaves out of a sharing tenant's ResourceQuota."""
    if quota is None:
        return []
    keys = [f"spec.quota.hard[{key}]" for key in quota.hard or {} if is_device_quota_key(key)]
    return (["spec.quota.gpuMemory"] if quota.gpu_memory is not None else []) + keys


def validate_sharing(spec: tenancy.TenantSpec, path: Path) -> ErrorList:
    sharing = spec.sharing
    if sharing is None:
        return []
    errors: ErrorList = []
    hard = device_quota_keys(spec.quota)
    if hard:
        errors.append(
            forbidden(
                path,
                f"may not be set together with device quotas ({', '.join(hard)}): a tenant "
                "uses one mode, fair sharing or hard quotas",
            )
        )
    in_cohort = bool(sharing.cohort)
    if sharing.cohort:
        errors += [
            invalid(path.child("cohort"), sharing.cohort, message)
            for message in is_dns1123_subdomain(sharing.cohort)
        ]
    seen: set[str] = set()
    for position, share in enumerate(sharing.device_classes or []):
        item = path.child("deviceClasses").index(position)
        if not share.name:
            errors.append(required(item.child("name"), ""))
        elif share.name in seen:
            errors.append(duplicate(item.child("name"), share.name))
        seen.add(share.name or "")
        errors += validate_shared_amount(share, item, in_cohort, whole=True)
    if sharing.gpu_memory is not None:
        errors += validate_shared_amount(
            sharing.gpu_memory, path.child("gpuMemory"), in_cohort, whole=False
        )
    errors += _validate_priority(sharing.default_priority, path.child("defaultPriority"))
    errors += _validate_preemption(sharing.preemption, path.child("preemption"))
    return errors


def validate_shared_amount(
    amount: tenancy.SharedAmount, path: Path, in_cohort: bool, *, whole: bool
) -> ErrorList:
    """Kueue's checks of a flavor's ``ResourceQuota``, in its order, on allot's names;
    ``whole``: the amounts count devices, so they must be integers."""
    guaranteed, borrowing, lending = amount.guaranteed, amount.borrowing_limit, amount.lending_limit
    errors = _amount(guaranteed, path.child("guaranteed"), whole)
    if borrowing is not None:
        errors += _cohort_limit(borrowing, path.child("borrowingLimit"), in_cohort)
        errors += _amount(borrowing, path.child("borrowingLimit"), whole)
    if lending is not None:
        errors += _amount(lending, path.child("lendingLimit"), whole)
        errors += _cohort_limit(lending, path.child("lendingLimit"), in_cohort)
        if lending.compare(guaranteed or Quantity(0)) > 0:
            errors.append(invalid(path.child("lendingLimit"), str(lending), ABOVE_GUARANTEE))
    return errors


def _amount(value: Quantity | None, path: Path, whole: bool) -> ErrorList:
    if value is None:
        return []
    if value.sign() < 0:
        return [invalid(path, str(value), NEGATIVE)]
    if whole and not value.is_integer():
        return [invalid(path, str(value), "must be an integer")]
    return []


def _cohort_limit(value: Quantity, path: Path, in_cohort: bool) -> ErrorList:
    return [] if in_cohort else [invalid(path, str(value), WITHOUT_COHORT)]


def _validate_priority(priority: int | None, path: Path) -> ErrorList:
    """Kueue's WorkloadPriorityClass ``value`` is an int32."""
    low, high = INT32
    if priority is None or low <= priority <= high:
        return []
    return [invalid(path, priority, f"must be between {low} and {high}, inclusive")]


def _validate_preemption(preemption: tenancy.SharingPreemption | None, path: Path) -> ErrorList:
    if preemption is None:
        return []
    errors: ErrorList = []
    reclaim, within = preemption.reclaim_within_cohort, preemption.within_tenant
    if reclaim is not None and reclaim not in RECLAIM_POLICIES:
        errors.append(not_supported(path.child("reclaimWithinCohort"), reclaim, RECLAIM_POLICIES))
    if within is not None and within not in WITHIN_TENANT_POLICIES:
        errors.append(not_supported(path.child("withinTenant"), within, WITHIN_TENANT_POLICIES))
    return errors


def validate_sharing_classes(
    tenant: tenancy.Tenant, classes: Mapping[str, Mapping[str, str] | None]
) -> ErrorList:
    """Shares of classes the catalogue lacks (``classes``: name -> labels) or the tenant's
    selector does not entitle it to. Needs the catalogue, so its callers run it."""
    sharing = tenant.spec.sharing
    if sharing is None:
        return []
    selector = tenancy.entitlement_selector(tenant.spec)
    wire = selector.to_wire() if selector is not None else None
    errors: ErrorList = []
    for position, share in enumerate(sharing.device_classes or []):
        if not share.name:
            continue
        path = Path("spec").child("sharing", "deviceClasses").index(position).child("name")
        if share.name not in classes:
            hint = did_you_mean(share.name, classes)
            detail = "no DeviceClass of this name" + (f"; {hint}" if hint else "")
            errors.append(not_found(path, share.name, detail))
        elif not selector_matches(wire, dict(classes[share.name] or {})):
            errors.append(
                invalid(
                    path,
                    share.name,
                    "the tenant is not entitled to this DeviceClass (its deviceClassSelector "
                    "does not select it)",
                )
            )
    return errors


def quota_class_warnings(tenant: tenancy.Tenant, classes: Mapping[str, object]) -> list[str]:
    """Quota keys naming a DeviceClass the catalogue (``classes``, by name) lacks: allowed,
    as any ResourceQuota key is, but they limit nothing; the nearest class is suggested."""
    quota = tenant.spec.quota
    found = []
    for key in sorted((quota.hard or {}) if quota else {}):
        name = quota_class(key)
        if name is None or name in classes:
            continue
        hint = did_you_mean(name, classes)
        found.append(
            f"spec.quota.hard[{key}]: no DeviceClass {name!r}"
            + (f" ({hint})" if hint else "")
            + ": the quota limits nothing until a class of that name exists"
        )
    return found


def quota_class(key: str) -> str | None:
    """The DeviceClass a quota key counts devices of, if it names one."""
    if key.endswith(DEVICE_CLASS_QUOTA_SUFFIX):
        return key.removesuffix(DEVICE_CLASS_QUOTA_SUFFIX)
    prefixes = (QUOTA_REQUESTS_PREFIX, QUOTA_LIMITS_PREFIX)
    resource = next((key.removeprefix(p) for p in prefixes if key.startswith(p)), key)
    if resource.startswith(DEVICE_CLASS_RESOURCE_PREFIX):
        return resource.removeprefix(DEVICE_CLASS_RESOURCE_PREFIX)
    return None


def validate_sync(sync: tenancy.TenantSync | None, path: Path) -> ErrorList:
    if sync is None:
        return []
    errors: ErrorList = []
    switches = {
        "toHost.resourceClaims": sync.to_host.resource_claims if sync.to_host else None,
        "toHost.resourceClaimTemplates": (
            sync.to_host.resource_claim_templates if sync.to_host else None
        ),
        "fromHost.deviceClasses": sync.from_host.device_classes if sync.from_host else None,
    }
    for where, switch in switches.items():
        if switch is not None and switch.patches:
            errors.append(
                forbidden(
                    path.child(*where.split("."), "patches"),
                    "translate patches are not supported by allot; leave the list empty",
                )
            )
    device_classes = switches["fromHost.deviceClasses"]
    if isinstance(device_classes, tenancy.DeviceClassSync):
        errors += validate_selector(
            device_classes.selector, path.child("fromHost", "deviceClasses", "selector")
        )
    return errors


def validate_selector(selector: LabelSelector | None, path: Path) -> ErrorList:
    if selector is None:
        return []
    errors: ErrorList = []
    for position, requirement in enumerate(selector.match_expressions or []):
        item = path.child("matchExpressions").index(position)
        if requirement.operator not in OPERATORS:
            errors.append(not_supported(item.child("operator"), requirement.operator, OPERATORS))
        elif requirement.operator in ("In", "NotIn") and not requirement.values:
            errors.append(
                invalid(
                    item.child("values"),
                    requirement.values or [],
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )
            )
        elif requirement.operator in ("Exists", "DoesNotExist") and requirement.values:
            errors.append(
                invalid(
                    item.child("values"),
                    requirement.values,
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    return errors


REAL_ENGINE = "on the kubernetes engine (allot up --engine kubernetes)"


def validate_for_real_engine(tenant: tenancy.Tenant) -> ErrorList:
    """What a tenant may not ask of the kubernetes engine, whose host runs only upstream
    components: allot's own admission (fair sharing, the GPU-memory quota), its store's
    bounds and its alert evaluation from Tenant objects have nothing to run on there.
    Called by ``allot tenant create`` on a real-engine data directory."""
    spec = tenant.spec
    path = Path("spec")
    errors: ErrorList = []
    if spec.sharing is not None:
        errors.append(
            forbidden(
                path.child("sharing"),
                f"fair sharing is not available {REAL_ENGINE}: it admits claims by allot's "
                "own queueing; give hard device quotas instead (spec.quota.hard, or "
                "--quota <class>.deviceclass.resource.k8s.io/devices=N)",
            )
        )
    if spec.quota is not None and spec.quota.gpu_memory is not None:
        errors.append(
            forbidden(
                path.child("quota", "gpuMemory"),
                f"a GPU-memory quota is not available {REAL_ENGINE}: Kubernetes 1.36's "
                "ResourceQuota counts devices per class, not their memory; use "
                "<class>.deviceclass.resource.k8s.io/devices keys in spec.quota.hard",
            )
        )
    if spec.storage is not None:
        errors.append(
            forbidden(
                path.child("storage"),
                f"storage bounds are not available {REAL_ENGINE}: they bound the embedded "
                "store, and a tenant there keeps its objects in the host's etcd",
            )
        )
    if spec.alerts is not None:
        errors.append(
            forbidden(
                path.child("alerts"),
                f"per-tenant alert thresholds are not available {REAL_ENGINE}: the real host "
                "serves no Tenant objects for allot controller to read them from",
            )
        )
    return errors
