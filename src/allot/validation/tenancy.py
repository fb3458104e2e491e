"""Validation of Tenant objects: names that fit the host, selectors, sync and quotas.

A tenant's name becomes a URL prefix, a cluster name and the host namespace
``tenant-<name>``, so it must be a DNS label short enough for that namespace and may not
be ``host``. vCluster ``patches`` are not implemented, so a non-empty list is refused with
that reason rather than silently ignored. Called from :mod:`allot.validation.objects`.
"""

from __future__ import annotations

from allot.api import tenancy
from allot.api.meta import LabelSelector
from allot.api.quantity import Quantity
from allot.validation.field import ErrorList, Path, forbidden, invalid, not_supported

TENANT_NAMESPACE_PREFIX = "tenant-"
MAX_TENANT_NAME = 63 - len(TENANT_NAMESPACE_PREFIX)
RESERVED_NAMES = ("host",)
OPERATORS = ["DoesNotExist", "Exists", "In", "NotIn"]


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
    return errors


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
