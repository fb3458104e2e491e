"""Entry points: validate any served object on create, update or status update.

Dispatches by kind to the per-kind validators, adds ``metadata`` validation with the right
name rule and scope, and applies the API server's defaulting first. The API server's
admission chain (a later issue) and ``allot validate`` both call these.
"""

from __future__ import annotations

from typing import Any

from allot.api import admission_v1 as admissionapi
from allot.api import apiextensions_v1 as extensionsapi
from allot.api import core_v1 as corev1
from allot.api import resource_v1 as resourceapi
from allot.api import tenancy
from allot.api.base import ApiModel
from allot.api.kinds import KindInfo, kind_info
from allot.validation import admission, claims, classes, core, names, schema, slices
from allot.validation import meta as metavalidation
from allot.validation import tenancy as tenantvalidation
from allot.validation.field import ErrorList, Path, invalid
from allot.validation.resource import ResourceContext

_NAME_RULES = {
    "subdomain": names.is_dns1123_subdomain,
    "label": names.is_dns1123_label,
}


def apply_defaults(obj: ApiModel) -> None:
    """Defaulting the API server performs before validation."""
    if isinstance(obj, resourceapi.ResourceClaim):
        claims.apply_claim_defaults(obj.spec)
    elif isinstance(obj, resourceapi.ResourceClaimTemplate):
        claims.apply_claim_defaults(obj.spec.spec)
    elif isinstance(obj, corev1.Pod):
        if obj.spec.restart_policy is None:
            obj.spec.restart_policy = "Always"
        for container in (obj.spec.init_containers or []) + (obj.spec.containers or []):
            _default_requests_to_limits(container.resources)


def _default_requests_to_limits(resources: corev1.ResourceRequirements | None) -> None:
    """``SetDefaults_Pod``: a limit without a request is also the request."""
    if resources is None or not resources.limits:
        return
    requests = dict(resources.requests or {})
    for name, limit in resources.limits.items():
        requests.setdefault(name, limit)
    resources.requests = requests


def validate_create(obj: ApiModel, context: ResourceContext) -> ErrorList:
    info = kind_info(obj)
    errors = _validate_meta(obj, info)
    return errors + _validate_kind(obj, context)


def validate_update(new: ApiModel, old: ApiModel, context: ResourceContext) -> ErrorList:
    """Validate a spec/metadata update (``old`` is the stored object)."""
    info = kind_info(new)
    errors = _validate_meta(new, info)
    if isinstance(new, resourceapi.ResourceClaim) and isinstance(old, resourceapi.ResourceClaim):
        if new.spec.to_wire() != old.spec.to_wire():
            errors.append(invalid(Path("spec"), new.spec.to_wire(), "field is immutable"))
        return errors
    if isinstance(new, resourceapi.ResourceClaimTemplate) and isinstance(
        old, resourceapi.ResourceClaimTemplate
    ):
        if new.spec.to_wire() != old.spec.to_wire():
            errors.append(invalid(Path("spec"), new.spec.to_wire(), "field is immutable"))
        return errors
    if isinstance(new, resourceapi.ResourceSlice) and isinstance(old, resourceapi.ResourceSlice):
        errors += slices.validate_slice_update(new.spec, old.spec)
    if isinstance(new, resourceapi.DeviceClass) and isinstance(old, resourceapi.DeviceClass):
        context = _with_stored_selectors(new, old, context)
    return errors + _validate_kind(new, context)


def validate_status_update(new: ApiModel, old: ApiModel, context: ResourceContext) -> ErrorList:
    if isinstance(new, resourceapi.ResourceClaim) and isinstance(old, resourceapi.ResourceClaim):
        return claims.validate_claim_status(new, old, context)
    return []


def _with_stored_selectors(
    new: resourceapi.DeviceClass, old: resourceapi.DeviceClass, context: ResourceContext
) -> ResourceContext:
    new_selectors = [s.to_wire() for s in new.spec.selectors or []]
    old_selectors = [s.to_wire() for s in old.spec.selectors or []]
    if new_selectors != old_selectors:
        return context
    stored = frozenset(
        s.cel.expression for s in old.spec.selectors or [] if s.cel and s.cel.expression
    )
    return ResourceContext(
        compiler=context.compiler,
        features=context.features,
        namespace_labels=context.namespace_labels,
        stored_expressions=stored,
    )


def _validate_meta(obj: ApiModel, info: KindInfo) -> ErrorList:
    metadata: Any = getattr(obj, "metadata", None)
    if metadata is None:
        return []
    return metavalidation.validate_object_meta(
        metadata, namespaced=info.namespaced, name_validator=_NAME_RULES[info.name_rule]
    )


def _validate_kind(obj: ApiModel, context: ResourceContext) -> ErrorList:
    if isinstance(obj, resourceapi.DeviceClass):
        return classes.validate_class_spec(obj.spec, context)
    if isinstance(obj, resourceapi.ResourceSlice):
        return slices.validate_slice_spec(obj.spec, context.features)
    if isinstance(obj, resourceapi.ResourceClaim):
        return claims.validate_claim_spec(obj.spec, Path("spec"), context, obj.metadata.namespace)
    if isinstance(obj, resourceapi.ResourceClaimTemplate):
        errors = _validate_template_meta(obj.spec.metadata)
        return errors + claims.validate_claim_spec(
            obj.spec.spec,
            Path(
                "spec",
            ).child("spec"),
            context,
            obj.metadata.namespace,
        )
    if isinstance(obj, corev1.Pod):
        return core.validate_pod_spec(obj.spec, Path("spec"))
    if isinstance(obj, corev1.ConfigMap):
        return core.validate_config_map(obj)
    if isinstance(obj, corev1.Event):
        return core.validate_event(obj)
    return _validate_platform_kind(obj)


def _validate_platform_kind(obj: ApiModel) -> ErrorList:
    if isinstance(obj, extensionsapi.CustomObject):
        return schema.validate_custom(obj.to_wire(), type(obj).openapi_schema)
    if isinstance(obj, extensionsapi.CustomResourceDefinition):
        return schema.validate_crd(obj)
    if isinstance(obj, corev1.ResourceQuota):
        return admission.validate_quota(obj)
    if isinstance(obj, admissionapi.ValidatingAdmissionPolicy):
        return admission.validate_policy_spec(obj.spec)
    if isinstance(obj, admissionapi.ValidatingAdmissionPolicyBinding):
        return admission.validate_binding_spec(obj.spec)
    if isinstance(obj, tenancy.Tenant):
        return tenantvalidation.validate_tenant(obj)
    return []


def _validate_template_meta(template_meta: Any) -> ErrorList:
    """A template's ``spec.metadata`` may carry labels and annotations only."""
    if template_meta is None:
        return []
    path = Path("spec").child("metadata")
    errors: ErrorList = []
    wire = template_meta.to_wire()
    for key in wire:
        if key not in ("labels", "annotations"):
            errors.append(
                invalid(
                    path.child(key),
                    wire[key],
                    "must not be set; only labels and annotations are allowed",
                )
            )
    errors += metavalidation.validate_labels(template_meta.labels or {}, path.child("labels"))
    errors += metavalidation.validate_annotations(
        template_meta.annotations or {}, path.child("annotations")
    )
    return errors
