"""ResourceClaim and ResourceClaimTemplate validation: spec, immutability, status.

The claim spec rules (requests, ``exactly`` xor ``firstAvailable``, counts, selectors,
constraints, config, admin access) apply identically to a template's ``spec.spec``.
Status rules (allocation immutable once set, results referencing real requests,
``reservedFor`` limits) apply to ``/status`` writes. Called by
:mod:`allot.validation.objects`.
"""

from __future__ import annotations

from allot.api import resource_v1 as resourceapi
from allot.validation import meta as metavalidation
from allot.validation import names
from allot.validation.field import (
    ErrorList,
    Path,
    forbidden,
    invalid,
    not_supported,
    required,
    too_many,
)
from allot.validation.resource import (
    ADMIN_ACCESS_FORBIDDEN,
    ALLOCATION_CONFIG_MAX,
    DEVICE_CONFIG_MAX,
    DEVICE_CONSTRAINTS_MAX,
    DEVICE_REQUESTS_MAX,
    FIRST_AVAILABLE_MAX,
    REQUEST_REF_MESSAGE,
    RESERVED_FOR_MAX,
    TOLERATIONS_MAX,
    ResourceContext,
    _duplicates,
    _validate_list,
    _validate_selectors,
    validate_opaque,
    validate_pool_name,
    validate_toleration,
)

ALLOCATION_MODES = [resourceapi.ALLOCATION_MODE_ALL, resourceapi.ALLOCATION_MODE_EXACT_COUNT]
EXACTLY_ONE_REQUEST_KIND = "exactly one of `exactly` or `firstAvailable` is required"
EXACTLY_ONE_CONSTRAINT = (
    'exactly one of "matchAttribute" or "distinctAttribute" is '
    "required, but multiple fields are set"
)


def validate_claim_spec(
    spec: resourceapi.ResourceClaimSpec, path: Path, context: ResourceContext, namespace: str | None
) -> ErrorList:
    devices = spec.devices or resourceapi.DeviceClaim()
    devices_path = path.child("devices")
    requests = devices.requests or []
    errors = _validate_list(
        requests,
        DEVICE_REQUESTS_MAX,
        devices_path.child("requests"),
        lambda r, p: _validate_request(r, p, context, namespace),
    )
    errors += _duplicates([r.name or "" for r in requests], devices_path.child("requests"), "name")
    references = _request_references(requests)
    errors += _validate_list(
        devices.constraints,
        DEVICE_CONSTRAINTS_MAX,
        devices_path.child("constraints"),
        lambda c, p: _validate_constraint(c, p, references, context),
    )
    errors += _validate_list(
        devices.config,
        DEVICE_CONFIG_MAX,
        devices_path.child("config"),
        lambda c, p: _validate_claim_config(c, p, references),
    )
    return errors


def _request_references(requests: list[resourceapi.DeviceRequest]) -> set[str]:
    references: set[str] = set()
    for request in requests:
        if not request.name:
            continue
        references.add(request.name)
        references.update(
            f"{request.name}/{sub.name}" for sub in request.first_available or [] if sub.name
        )
    return references


def _validate_request(
    request: resourceapi.DeviceRequest, path: Path, context: ResourceContext, namespace: str | None
) -> ErrorList:
    errors = metavalidation.validate_dns_label(request.name, path.child("name"))
    has_exactly = request.exactly is not None
    has_first = bool(request.first_available)
    if has_exactly and has_first:
        errors.append(
            invalid(path, None, EXACTLY_ONE_REQUEST_KIND + ", but multiple fields are set")
        )
    elif request.exactly is not None:
        errors += _validate_exact(request.exactly, path.child("exactly"), context, namespace)
    elif has_first:
        if not context.features.dra_prioritized_list:
            return [
                *errors,
                forbidden(
                    path.child("firstAvailable"), "the DRAPrioritizedList feature gate is disabled"
                ),
            ]
        subrequests = request.first_available or []
        first_path = path.child("firstAvailable")
        errors += _validate_list(
            subrequests,
            FIRST_AVAILABLE_MAX,
            first_path,
            lambda s, p: _validate_subrequest(s, p, context),
        )
        errors += _duplicates([s.name or "" for s in subrequests], first_path, "name")
    else:
        errors.append(required(path, EXACTLY_ONE_REQUEST_KIND))
    return errors


def _validate_exact(
    exact: resourceapi.ExactDeviceRequest,
    path: Path,
    context: ResourceContext,
    namespace: str | None,
) -> ErrorList:
    errors = _validate_common_request(exact, path, context)
    if exact.admin_access:
        if not context.features.dra_admin_access:
            errors.append(
                forbidden(path.child("adminAccess"), "the DRAAdminAccess feature gate is disabled")
            )
        elif not context.admin_access_allowed(namespace):
            errors.append(forbidden(path.child("adminAccess"), ADMIN_ACCESS_FORBIDDEN))
    return errors


def _validate_subrequest(
    sub: resourceapi.DeviceSubRequest, path: Path, context: ResourceContext
) -> ErrorList:
    errors = metavalidation.validate_dns_label(sub.name, path.child("name"))
    return errors + _validate_common_request(sub, path, context)


def _validate_common_request(
    request: resourceapi.ExactDeviceRequest | resourceapi.DeviceSubRequest,
    path: Path,
    context: ResourceContext,
) -> ErrorList:
    errors = metavalidation.validate_dns_subdomain(
        request.device_class_name, path.child("deviceClassName")
    )
    errors += _validate_selectors(request.selectors, path.child("selectors"), context)
    errors += _validate_mode_and_count(request.allocation_mode, request.count, path)
    errors += _validate_list(
        request.tolerations, TOLERATIONS_MAX, path.child("tolerations"), validate_toleration
    )
    if request.capacity is not None and request.capacity.requests:
        capacity_path = path.child("capacity", "requests")
        for name in request.capacity.requests:
            errors += metavalidation.validate_qualified_name(name, capacity_path.key(name))
    return errors


def _validate_mode_and_count(mode: str | None, count: int | None, path: Path) -> ErrorList:
    mode = mode or resourceapi.ALLOCATION_MODE_EXACT_COUNT
    if mode == resourceapi.ALLOCATION_MODE_EXACT_COUNT:
        if count is None or count <= 0:
            return [invalid(path.child("count"), count or 0, "must be greater than zero")]
        return []
    if mode == resourceapi.ALLOCATION_MODE_ALL:
        if count:
            return [
                invalid(
                    path.child("count"), count, "must not be specified when allocationMode is 'All'"
                )
            ]
        return []
    return [not_supported(path.child("allocationMode"), mode, ALLOCATION_MODES)]


def _validate_request_refs(
    refs: list[str] | None, path: Path, references: set[str], limit: int = DEVICE_REQUESTS_MAX
) -> ErrorList:
    refs = refs or []
    if len(refs) > limit:
        return [too_many(path, len(refs), limit)]
    errors: ErrorList = [
        invalid(path.index(i), ref, REQUEST_REF_MESSAGE)
        for i, ref in enumerate(refs)
        if ref not in references
    ]
    return errors + _duplicates(refs, path)


def _validate_constraint(
    constraint: resourceapi.DeviceConstraint,
    path: Path,
    references: set[str],
    context: ResourceContext,
) -> ErrorList:
    errors = _validate_request_refs(constraint.requests, path.child("requests"), references)
    match, distinct = constraint.match_attribute, constraint.distinct_attribute
    if not context.features.dra_consumable_capacity:
        if match is None:
            return [*errors, required(path.child("matchAttribute"))]
        distinct = None
    if match is not None and distinct is not None:
        errors.append(invalid(path, None, EXACTLY_ONE_CONSTRAINT))
    elif match is None and distinct is None:
        errors.append(required(path, EXACTLY_ONE_CONSTRAINT))
    elif match is not None:
        errors += metavalidation.validate_fully_qualified_name(match, path.child("matchAttribute"))
    elif distinct is not None:
        errors += metavalidation.validate_fully_qualified_name(
            distinct, path.child("distinctAttribute")
        )
    return errors


def _validate_claim_config(
    config: resourceapi.DeviceClaimConfiguration, path: Path, references: set[str]
) -> ErrorList:
    errors = _validate_request_refs(config.requests, path.child("requests"), references)
    return errors + validate_opaque(config, path)


# ---------------------------------------------------------------------------- status
def validate_claim_status(
    claim: resourceapi.ResourceClaim,
    old: resourceapi.ResourceClaim | None,
    context: ResourceContext,
) -> ErrorList:
    status = claim.status or resourceapi.ResourceClaimStatus()
    old_status = (old.status if old else None) or resourceapi.ResourceClaimStatus()
    path = Path("status")
    errors: ErrorList = []
    if (
        old_status.allocation is not None
        and status.allocation is not None
        and status.allocation.to_wire() != old_status.allocation.to_wire()
    ):
        errors.append(invalid(path.child("allocation"), "<allocation>", "field is immutable"))
    elif status.allocation is not None and old_status.allocation is None:
        errors += _validate_allocation(status.allocation, path.child("allocation"), claim, context)
    reserved = status.reserved_for or []
    if reserved and status.allocation is None:
        errors.append(
            forbidden(path.child("reservedFor"), "may not be specified when `allocated` is not set")
        )
    errors += _validate_reserved_for(
        reserved,
        old_status.reserved_for or [],
        path.child("reservedFor"),
        claim.metadata.deletion_timestamp is not None,
    )
    return errors


def _validate_allocation(
    allocation: resourceapi.AllocationResult,
    path: Path,
    claim: resourceapi.ResourceClaim,
    context: ResourceContext,
) -> ErrorList:
    devices = allocation.devices or resourceapi.DeviceAllocationResult()
    references = _request_references(
        (claim.spec.devices or resourceapi.DeviceClaim()).requests or []
    )
    results_path = path.child("devices", "results")
    errors = _validate_list(
        devices.results,
        DEVICE_REQUESTS_MAX,
        results_path,
        lambda r, p: _validate_result(r, p, references),
    )
    for index, result in enumerate(devices.results or []):
        if result.admin_access and not context.admin_access_allowed(claim.metadata.namespace):
            errors.append(
                forbidden(results_path.index(index).child("adminAccess"), ADMIN_ACCESS_FORBIDDEN)
            )
    errors += _validate_list(
        devices.config,
        ALLOCATION_CONFIG_MAX,
        path.child("devices", "config"),
        lambda c, p: _validate_allocation_config(c, p, references),
    )
    if allocation.node_selector is not None:
        errors += metavalidation.validate_node_selector(
            allocation.node_selector, path.child("nodeSelector"), exactly_one_term=False
        )
    return errors


def _validate_result(
    result: resourceapi.DeviceRequestAllocationResult, path: Path, references: set[str]
) -> ErrorList:
    errors: ErrorList = []
    if result.request not in references:
        errors.append(invalid(path.child("request"), result.request or "", REQUEST_REF_MESSAGE))
    errors += metavalidation.validate_driver_name(result.driver, path.child("driver"))
    errors += validate_pool_name(result.pool, path.child("pool"))
    errors += metavalidation.validate_dns_label(result.device, path.child("device"))
    if result.share_id is not None:
        errors += [
            invalid(path.child("shareID"), result.share_id, msg)
            for msg in names.is_normalized_uuid(result.share_id)
        ]
    errors += _validate_list(
        result.tolerations, TOLERATIONS_MAX, path.child("tolerations"), validate_toleration
    )
    return errors


def _validate_allocation_config(
    config: resourceapi.DeviceAllocationConfiguration, path: Path, references: set[str]
) -> ErrorList:
    errors: ErrorList = []
    sources = [resourceapi.CONFIG_SOURCE_CLAIM, resourceapi.CONFIG_SOURCE_CLASS]
    if not config.source:
        errors.append(required(path.child("source")))
    elif config.source not in sources:
        errors.append(not_supported(path.child("source"), config.source, sources))
    errors += _validate_request_refs(config.requests, path.child("requests"), references)
    return errors + validate_opaque(config, path, is_create=False)


def _validate_reserved_for(
    reserved: list[resourceapi.ResourceClaimConsumerReference],
    old: list[resourceapi.ResourceClaimConsumerReference],
    path: Path,
    deleting: bool,
) -> ErrorList:
    if len(reserved) > RESERVED_FOR_MAX:
        return [too_many(path, len(reserved), RESERVED_FOR_MAX)]
    errors: ErrorList = []
    for index, ref in enumerate(reserved):
        item = path.index(index)
        for name in ("resource", "name", "uid"):
            if not getattr(ref, name):
                errors.append(required(item.child(name)))
    errors += _duplicates([ref.uid or "" for ref in reserved], path, "uid")
    old_uids = {ref.uid for ref in old}
    if deleting and any(ref.uid not in old_uids for ref in reserved):
        errors.append(
            forbidden(
                path,
                "new entries may not be added while "
                "`deallocationRequested` or `deletionTimestamp` are set",
            )
        )
    return errors
