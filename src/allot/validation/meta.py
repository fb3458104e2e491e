"""``metadata`` validation shared by all kinds (``ValidateObjectMeta`` upstream).

Also holds the small format validators that several kinds share: label keys and values,
driver names, qualified attribute names, node selectors. Called by the per-kind
validators in this package.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from allot.api.core_v1_nodes import NodeSelector, NodeSelectorRequirement
from allot.api.meta import LabelSelector, ObjectMeta
from allot.validation import names
from allot.validation.field import (
    ErrorList,
    ErrorType,
    FieldError,
    Path,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)

NameValidator = Callable[[str], list[str]]
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
DRIVER_NAME_MAX_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
NODE_SELECTOR_OPERATORS = ["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"]
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_object_meta(
    meta: ObjectMeta, *, namespaced: bool, name_validator: NameValidator, path: Path | None = None
) -> ErrorList:
    path = path or Path("metadata")
    errors: ErrorList = []
    if meta.generate_name:
        prefix = meta.generate_name
        errors += [
            invalid(path.child("generateName"), prefix, msg)
            for msg in name_validator(_mask_trailing_dash(prefix))
        ]
    if not meta.name:
        if not meta.generate_name:
            errors.append(required(path.child("name"), "name or generateName is required"))
    else:
        errors += [invalid(path.child("name"), meta.name, msg) for msg in name_validator(meta.name)]
    if namespaced:
        if not meta.namespace:
            errors.append(required(path.child("namespace")))
        else:
            errors += [
                invalid(path.child("namespace"), meta.namespace, msg)
                for msg in names.is_dns1123_label(meta.namespace)
            ]
    elif meta.namespace:
        errors.append(forbidden(path.child("namespace"), "not allowed on this type"))
    errors += validate_labels(meta.labels or {}, path.child("labels"))
    errors += validate_annotations(meta.annotations or {}, path.child("annotations"))
    errors += _validate_owner_references(meta, path.child("ownerReferences"))
    return errors


def _mask_trailing_dash(prefix: str) -> str:
    return prefix[:-1] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix


def validate_labels(labels: Mapping[str, str], path: Path) -> ErrorList:
    errors: ErrorList = []
    for key, value in labels.items():
        errors += [invalid(path, key, msg) for msg in names.is_qualified_name(key)]
        errors += [invalid(path, value, msg) for msg in names.is_label_value(value)]
    return errors


def validate_annotations(annotations: Mapping[str, str], path: Path) -> ErrorList:
    errors: ErrorList = []
    total = 0
    for key, value in annotations.items():
        errors += [invalid(path, key, msg) for msg in names.is_qualified_name(key.lower())]
        total += len(key) + len(value)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errors.append(
            FieldError(
                path,
                ErrorType.TOO_LONG,
                f"may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes",
            )
        )
    return errors


def _validate_owner_references(meta: ObjectMeta, path: Path) -> ErrorList:
    errors: ErrorList = []
    controllers = 0
    for index, ref in enumerate(meta.owner_references or []):
        item = path.index(index)
        for field_name in ("api_version", "kind", "name", "uid"):
            if not getattr(ref, field_name):
                wire = {"api_version": "apiVersion"}.get(field_name, field_name)
                errors.append(required(item.child(wire), f"{wire} must not be empty"))
        controllers += bool(ref.controller)
    if controllers > 1:
        errors.append(
            invalid(path, controllers, "Only one reference can have Controller set to true")
        )
    return errors


def validate_driver_name(name: str | None, path: Path) -> ErrorList:
    if not name:
        return [required(path)]
    errors: ErrorList = []
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        errors.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
    errors += [invalid(path, name, msg) for msg in names.is_dns1123_subdomain(name.lower())]
    return errors


def validate_c_identifier(identifier: str, path: Path) -> ErrorList:
    errors: ErrorList = []
    if len(identifier) > DEVICE_MAX_ID_LENGTH:
        errors.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    errors += [
        FieldError(path, ErrorType.TYPE_INVALID, msg, identifier)
        for msg in names.is_c_identifier(identifier)
    ]
    return errors


def validate_qualified_name(name: str, path: Path) -> ErrorList:
    """An attribute or capacity name: ``<C identifier>`` or ``<domain>/<C identifier>``."""
    if not name:
        return [required(path, "name required")]
    parts = name.split("/")
    if len(parts) == 1:
        return validate_c_identifier(parts[0], path)
    if len(parts) > 2:
        return [invalid(path, name, "must not contain more than one slash")]
    domain, identifier = parts
    errors: ErrorList = []
    if not domain:
        errors.append(required(path, "the domain must not be empty"))
    else:
        errors += validate_driver_name(domain, path)
    if not identifier:
        errors.append(required(path, "the name must not be empty"))
    else:
        errors += validate_c_identifier(identifier, path)
    return errors


def validate_fully_qualified_name(name: str, path: Path) -> ErrorList:
    errors = validate_qualified_name(name, path)
    if name and "/" not in name:
        errors.append(
            invalid(
                path,
                name,
                "a fully qualified name must be a domain and a name separated by a slash",
            )
        )
    return errors


def validate_label_selector(selector: LabelSelector, path: Path) -> ErrorList:
    errors = validate_labels(selector.match_labels or {}, path.child("matchLabels"))
    for index, requirement in enumerate(selector.match_expressions or []):
        item = path.child("matchExpressions").index(index)
        operator, values = requirement.operator or "", requirement.values or []
        if operator in ("In", "NotIn") and not values:
            errors.append(
                required(
                    item.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"
                )
            )
        elif operator in ("Exists", "DoesNotExist") and values:
            errors.append(
                forbidden(
                    item.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
        elif operator not in SELECTOR_OPERATORS:
            errors.append(
                invalid(item.child("operator"), operator, "not a valid selector operator")
            )
        errors += [
            invalid(item.child("key"), requirement.key or "", message)
            for message in names.is_qualified_name(requirement.key or "")
        ]
    return errors


def validate_dns_label(value: str | None, path: Path) -> ErrorList:
    if not value:
        return [required(path)]
    return [invalid(path, value, msg) for msg in names.is_dns1123_label(value)]


def validate_dns_subdomain(value: str | None, path: Path) -> ErrorList:
    if not value:
        return [required(path)]
    return [invalid(path, value, msg) for msg in names.is_dns1123_subdomain(value)]


def validate_node_selector(
    selector: NodeSelector, path: Path, *, exactly_one_term: bool
) -> ErrorList:
    terms = selector.node_selector_terms or []
    terms_path = path.child("nodeSelectorTerms")
    if exactly_one_term and len(terms) != 1:
        return [invalid(terms_path, len(terms), "must have exactly one node selector term")]
    if not terms:
        return [required(terms_path, "must have at least one node selector term")]
    errors: ErrorList = []
    for index, term in enumerate(terms):
        term_path = terms_path.index(index)
        for position, requirement in enumerate(term.match_expressions or []):
            errors += _validate_node_requirement(
                requirement, term_path.child("matchExpressions").index(position)
            )
        for position, requirement in enumerate(term.match_fields or []):
            errors += _validate_node_requirement(
                requirement, term_path.child("matchFields").index(position)
            )
    return errors


def _validate_node_requirement(requirement: NodeSelectorRequirement, path: Path) -> ErrorList:
    errors: ErrorList = []
    operator = requirement.operator or ""
    count = len(requirement.values or [])
    if operator in ("In", "NotIn") and count == 0:
        errors.append(
            required(path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'")
        )
    elif operator in ("Exists", "DoesNotExist") and count:
        errors.append(
            forbidden(
                path.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )
        )
    elif operator in ("Gt", "Lt") and count != 1:
        errors.append(
            required(
                path.child("values"),
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            )
        )
    elif operator not in NODE_SELECTOR_OPERATORS:
        errors.append(not_supported(path.child("operator"), operator, NODE_SELECTOR_OPERATORS))
    errors += [
        invalid(path.child("key"), requirement.key or "", msg)
        for msg in names.is_qualified_name(requirement.key or "")
    ]
    return errors


def json_size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def validate_kind_and_name(kind: str | None, name: str | None, path: Path) -> ErrorList:
    """A reference's ``kind`` and ``name``: both required, each a valid path segment (the
    part ``ValidateCrossVersionObjectReference`` and the typed local references of
    Ingress backends share)."""
    errors: ErrorList = []
    for field, value in (("kind", kind), ("name", name)):
        if not value:
            errors.append(required(path.child(field)))
            continue
        messages = names.is_valid_path_segment_name(value)
        errors += [invalid(path.child(field), value, m) for m in messages]
    return errors
