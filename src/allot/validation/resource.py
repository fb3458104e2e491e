"""Validation of ``resource.k8s.io/v1`` objects as the 1.36 API server does it.

Ported rule by rule from ``pkg/apis/resource/validation`` (see the conformance ledger for
the few texts that could not be confirmed). Claim and template specs are validated on
create and are immutable afterwards; DeviceClass selectors are re-compiled only when they
changed ("stored expressions" are trusted); slices keep driver, pool name and node name
immutable. Called by :mod:`allot.validation.objects`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from allot.api import resource_v1 as resourceapi
from allot.api.features import KUBERNETES_1_36, Features
from allot.cel import CompileError, CompileErrorReason, SelectorCompiler
from allot.validation import meta as metavalidation
from allot.validation import names
from allot.validation.field import (
    ErrorList,
    Path,
    duplicate,
    forbidden,
    internal,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)

DEVICE_REQUESTS_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_CONFIG_MAX = 32
ALLOCATION_CONFIG_MAX = 64
DEVICE_SELECTORS_MAX = 32
FIRST_AVAILABLE_MAX = 8
TOLERATIONS_MAX = 16
TAINTS_MAX = 16
OPAQUE_PARAMETERS_MAX = 10 * 1024
SLICE_MAX_DEVICES = 128
SLICE_MAX_DEVICES_ADVANCED = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_ATTRIBUTE_VALUES = 48
ATTRIBUTE_MAX_VALUE_LENGTH = 64
MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_SET = 32
MAX_CONSUMPTIONS_PER_DEVICE = 2
BINDING_CONDITIONS_MAX = 4
RESERVED_FOR_MAX = 256
POOL_NAME_MAX = 253
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
ADMIN_ACCESS_FORBIDDEN = (
    "admin access to devices requires the "
    "`resource.kubernetes.io/admin-access: true` label on the containing "
    "namespace"
)
REQUEST_REF_MESSAGE = (
    "must be the name of a request in the claim or the name of a request "
    "and a subrequest separated by '/'"
)

Item = TypeVar("Item")


@dataclass
class ResourceContext:
    """What validation needs beyond the object: gates, the CEL compiler, namespace labels."""

    compiler: SelectorCompiler
    features: Features = KUBERNETES_1_36
    namespace_labels: Callable[[str], dict[str, str] | None] | None = None
    stored_expressions: frozenset[str] = field(default_factory=frozenset)

    def admin_access_allowed(self, namespace: str | None) -> bool:
        if self.namespace_labels is None or namespace is None:
            return True  # no namespace information: the check happens at the API server
        labels = self.namespace_labels(namespace) or {}
        return labels.get(ADMIN_ACCESS_LABEL) == "true"


# --------------------------------------------------------------------------- helpers
def _validate_list(
    items: Sequence[Item] | None, limit: int, path: Path, each: Callable[[Item, Path], ErrorList]
) -> ErrorList:
    items = items or []
    if len(items) > limit:
        return [too_many(path, len(items), limit)]
    errors: ErrorList = []
    for index, item in enumerate(items):
        errors += each(item, path.index(index))
    return errors


def _duplicates(keys: Sequence[str], path: Path, child: str | None = None) -> ErrorList:
    seen: set[str] = set()
    errors: ErrorList = []
    for index, key in enumerate(keys):
        if key in seen:
            item = path.index(index)
            errors.append(duplicate(item.child(child) if child else item, key))
        seen.add(key)
    return errors


def validate_selector(
    selector: resourceapi.DeviceSelector, path: Path, context: ResourceContext
) -> ErrorList:
    if selector.cel is None:
        return [required(path.child("cel"))]
    expression_path = path.child("cel", "expression")
    expression = selector.cel.expression or ""
    if not expression:
        return [required(expression_path)]
    stored = expression in context.stored_expressions
    try:
        context.compiler.compile(expression, stored=stored)
    except CompileError as err:
        if err.reason is CompileErrorReason.TOO_LONG:
            return [too_long(expression_path, 10 * 1024)]
        if err.reason is CompileErrorReason.FORBIDDEN:
            return [forbidden(expression_path, err.detail)]
        if err.reason is CompileErrorReason.INTERNAL:
            return [internal(expression_path, err.detail)]
        return [invalid(expression_path, expression, err.detail)]
    return []


def _validate_selectors(
    selectors: list[resourceapi.DeviceSelector] | None, path: Path, context: ResourceContext
) -> ErrorList:
    return _validate_list(
        selectors, DEVICE_SELECTORS_MAX, path, lambda s, p: validate_selector(s, p, context)
    )


def validate_opaque(
    config: resourceapi.DeviceConfiguration, path: Path, *, is_create: bool = True
) -> ErrorList:
    opaque = config.opaque
    if opaque is None:
        return [required(path.child("opaque"))]
    opaque_path = path.child("opaque")
    errors = metavalidation.validate_driver_name(opaque.driver, opaque_path.child("driver"))
    parameters_path = opaque_path.child("parameters")
    if opaque.parameters is None:
        errors.append(required(parameters_path))
    elif not isinstance(opaque.parameters, dict):
        errors.append(invalid(parameters_path, "<value omitted>", "must be a valid JSON object"))
    elif is_create and metavalidation.json_size(opaque.parameters) > OPAQUE_PARAMETERS_MAX:
        errors.append(too_long(parameters_path, OPAQUE_PARAMETERS_MAX))
    return errors


def validate_toleration(toleration: resourceapi.DeviceToleration, path: Path) -> ErrorList:
    errors: ErrorList = []
    if toleration.key:
        errors += [
            invalid(path.child("key"), toleration.key, msg)
            for msg in names.is_qualified_name(toleration.key)
        ]
    operator = toleration.operator or resourceapi.TOLERATION_OP_EQUAL
    if not toleration.key and operator != resourceapi.TOLERATION_OP_EXISTS:
        errors.append(
            invalid(
                path.child("operator"),
                operator,
                "operator must be Exists when `key` is empty, which means "
                '"match all values and all keys"',
            )
        )
    if operator == resourceapi.TOLERATION_OP_EXISTS:
        if toleration.value:
            errors.append(
                invalid(
                    path.child("value"), toleration.value, "must be empty for operator `Exists`"
                )
            )
    elif operator == resourceapi.TOLERATION_OP_EQUAL:
        errors += [
            invalid(path.child("value"), toleration.value, msg)
            for msg in names.is_label_value(toleration.value or "")
        ]
    else:
        errors.append(
            not_supported(
                path.child("operator"),
                operator,
                [resourceapi.TOLERATION_OP_EQUAL, resourceapi.TOLERATION_OP_EXISTS],
            )
        )
    if toleration.effect and toleration.effect not in resourceapi.TAINT_EFFECTS:
        errors.append(
            not_supported(path.child("effect"), toleration.effect, list(resourceapi.TAINT_EFFECTS))
        )
    return errors


def validate_pool_name(name: str | None, path: Path) -> ErrorList:
    """One or more DNS subdomains separated by ``/``, at most 253 characters in all."""
    if not name:
        return [required(path)]
    errors: ErrorList = []
    if len(name) > POOL_NAME_MAX:
        errors.append(too_long(path, POOL_NAME_MAX))
    for part in name.split("/"):
        errors += [invalid(path, name, msg) for msg in names.is_dns1123_subdomain(part)]
    return errors
