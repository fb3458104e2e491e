"""Entry points: validate any served object on create, update or status update.

The generic part of the API server's validation: ``metadata`` with the kind's name rule and
scope, defaulting first, then the kind's own rules. What a kind adds (its defaulting, its
spec validation, what an update may not change, its status validation) is its
:class:`KindRules`, which each kind's strategy module in :mod:`allot.registry.kinds`
provides from the validators of this package. Called by the registry's admission chain and
by ``allot validate`` (:mod:`allot.manifests`), with the same rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from allot.api import resource_v1 as resourceapi
from allot.api.base import ApiModel
from allot.api.kinds import KindInfo, kind_info
from allot.validation import claims, names
from allot.validation import meta as metavalidation
from allot.validation.field import ErrorList, Path, invalid
from allot.validation.resource import ResourceContext

_NAME_RULES = {
    "subdomain": names.is_dns1123_subdomain,
    "label": names.is_dns1123_label,
    "path": names.is_valid_path_segment_name,
}
Validate = Callable[[Any, ResourceContext], ErrorList]
ValidateUpdate = Callable[[Any, Any, ResourceContext], ErrorList]


def _no_errors(*args: Any) -> ErrorList:
    return []


@dataclass(frozen=True)
class KindRules:
    """A kind's validation: ``validate`` on create and update, ``immutable_spec`` (an
    update may not change ``spec``; the kind's own rules are then skipped, as upstream's
    claim strategies do), ``validate_update`` for what else an update checks,
    ``validate_status`` for ``/status`` writes, ``defaults`` before all of it."""

    defaults: Callable[[Any], None] | None = None
    validate: Validate = _no_errors
    validate_update: ValidateUpdate = _no_errors
    validate_status: ValidateUpdate = _no_errors
    immutable_spec: bool = False
    stored_selectors: bool = False  # DeviceClass: unchanged selectors were already accepted


def apply_defaults(obj: ApiModel, rules: KindRules) -> None:
    """Defaulting the API server performs before validation."""
    if rules.defaults is not None:
        rules.defaults(obj)


def validate_create(obj: ApiModel, context: ResourceContext, rules: KindRules) -> ErrorList:
    return _validate_meta(obj, kind_info(obj)) + rules.validate(obj, context)


def validate_update(
    new: ApiModel, old: ApiModel, context: ResourceContext, rules: KindRules
) -> ErrorList:
    """Validate a spec/metadata update (``old`` is the stored object)."""
    errors = _validate_meta(new, kind_info(new))
    if rules.immutable_spec:
        spec = new.spec.to_wire()  # type: ignore[attr-defined]
        if spec != old.spec.to_wire():  # type: ignore[attr-defined]
            errors.append(invalid(Path("spec"), spec, "field is immutable"))
        return errors
    errors += rules.validate_update(new, old, context)
    if rules.stored_selectors:
        context = _with_stored_selectors(new, old, context)
    return errors + rules.validate(new, context)


def validate_status_update(
    new: ApiModel, old: ApiModel, context: ResourceContext, rules: KindRules
) -> ErrorList:
    return rules.validate_status(new, old, context)


def _with_stored_selectors(new: Any, old: Any, context: ResourceContext) -> ResourceContext:
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


def default_pod(pod: Any) -> None:
    """``SetDefaults_Pod``: ``restartPolicy: Always``; a limit without a request is also
    the request; ``securityContext: {}`` (``SetDefaults_PodSpec``), which clients read
    without checking for nil (``kubectl debug`` panics on a pod without one)."""
    default_pod_spec(pod.spec)
    if pod.spec.security_context is None:
        pod.spec.security_context = {}


def default_pod_spec(spec: Any) -> None:
    """The pod defaults of a pod's spec or a workload's pod template."""
    if spec.restart_policy is None:
        spec.restart_policy = "Always"
    for container in (spec.init_containers or []) + (spec.containers or []):
        resources = container.resources
        if resources is None or not resources.limits:
            continue
        requests = dict(resources.requests or {})
        for name, limit in resources.limits.items():
            requests.setdefault(name, limit)
        resources.requests = requests


def validate_claim_template(
    obj: resourceapi.ResourceClaimTemplate, context: ResourceContext
) -> ErrorList:
    errors = validate_template_meta(obj.spec.metadata)
    return errors + claims.validate_claim_spec(
        obj.spec.spec, Path("spec").child("spec"), context, obj.metadata.namespace
    )


def validate_template_meta(template_meta: Any) -> ErrorList:
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
