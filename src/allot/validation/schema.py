"""Validating custom objects against a CRD version's structural ``openAPIV3Schema``.

The subset the API server enforces and CRDs use: ``type`` (object, array, string,
integer, number, boolean), ``properties``, ``required``, ``additionalProperties``,
``items``, ``enum``, ``nullable``, ``x-kubernetes-int-or-string``,
``x-kubernetes-preserve-unknown-fields``, string and number bounds, ``pattern``, list
bounds. Messages follow the API server's (``spec.rules: Invalid value: "string":
spec.rules in body must be of type array: "string"``). Fields the schema does not
declare are refused as unknown (kubectl's default, strict field validation). Pure;
called from :mod:`allot.validation.objects`.
"""

from __future__ import annotations

import re
from typing import Any

from allot.api.apiextensions_v1 import CustomResourceDefinition
from allot.validation.field import ErrorList, Path, invalid, not_supported, required

_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def validate_value(value: Any, schema: dict[str, Any], path: Path) -> ErrorList:
    if value is None:
        return [] if schema.get("nullable") else _type_error(value, schema, path)
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, (int, str)) and not isinstance(value, bool)
        return (
            []
            if ok
            else [
                invalid(
                    path,
                    _type_name(value),
                    f'{path} in body must be of type int-or-string: "{_type_name(value)}"',
                )
            ]
        )
    errors = _type_error(value, schema, path)
    if errors:
        return errors
    if "enum" in schema and value not in schema["enum"]:
        return [not_supported(path, value, [str(v) for v in schema["enum"]])]
    if isinstance(value, dict):
        return _object(value, schema, path)
    if isinstance(value, list):
        return _array(value, schema, path)
    return _scalar(value, schema, path)


def _type_error(value: Any, schema: dict[str, Any], path: Path) -> ErrorList:
    wanted = schema.get("type")
    actual = _type_name(value)
    if not wanted:
        return []
    if wanted == "number" and actual in ("integer", "number"):
        return []
    if wanted == actual:
        return []
    return [invalid(path, actual, f'{path} in body must be of type {wanted}: "{actual}"')]


def _object(value: dict[str, Any], schema: dict[str, Any], path: Path) -> ErrorList:
    errors: ErrorList = []
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in value:
            errors.append(required(path.child(name)))
    extra = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields")
    for key, item in value.items():
        if key in properties:
            errors += validate_value(item, properties[key], path.child(key))
        elif isinstance(extra, dict):
            errors += validate_value(item, extra, path.key(key))
        elif not preserve and extra is not True and (properties or extra is False):
            errors.append(invalid(path.child(key), key, "unknown field (not in the schema)"))
    return errors


def _array(value: list[Any], schema: dict[str, Any], path: Path) -> ErrorList:
    errors: ErrorList = []
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(invalid(path, len(value), f"must have at most {schema['maxItems']} items"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(invalid(path, len(value), f"must have at least {schema['minItems']} items"))
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            errors += validate_value(item, items, path.index(index))
    return errors


def _scalar(value: Any, schema: dict[str, Any], path: Path) -> ErrorList:
    errors: ErrorList = []
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(
                invalid(path, value, f"must be no more than {schema['maxLength']} characters")
            )
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(
                invalid(path, value, f"must be at least {schema['minLength']} characters")
            )
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(
                invalid(path, value, f"{path} in body should match '{schema['pattern']}'")
            )
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(
                invalid(
                    path,
                    value,
                    f"{path} in body should be greater than or equal to {schema['minimum']}",
                )
            )
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(
                invalid(
                    path,
                    value,
                    f"{path} in body should be less than or equal to {schema['maximum']}",
                )
            )
    return errors


def validate_custom(wire: dict[str, Any], schema: dict[str, Any]) -> ErrorList:
    """A custom object's fields other than apiVersion, kind and metadata."""
    body = {k: v for k, v in wire.items() if k not in ("apiVersion", "kind", "metadata")}
    trimmed = {
        **schema,
        "properties": {
            k: v for k, v in (schema.get("properties") or {}).items()
            if k not in ("apiVersion", "kind", "metadata")
        },
    }  # fmt: skip
    return validate_value(body, trimmed, Path(""))


def validate_crd(crd: CustomResourceDefinition) -> ErrorList:
    """The checks that keep an unusable CRD out: names, scope, versions, storage."""
    spec, path = crd.spec, Path("spec")
    errors: ErrorList = []
    names = spec.names
    if not spec.group:
        errors.append(required(path.child("group")))
    if names is None or not names.plural or not names.kind:
        errors.append(required(path.child("names", "plural" if names and names.kind else "kind")))
    elif crd.metadata.name != f"{names.plural}.{spec.group}":
        errors.append(
            invalid(Path("metadata").child("name"), crd.metadata.name,
                    "must be spec.names.plural+\".\"+spec.group")
        )  # fmt: skip
    if spec.scope not in ("Cluster", "Namespaced"):
        errors.append(not_supported(path.child("scope"), spec.scope, ["Cluster", "Namespaced"]))
    versions = spec.versions or []
    if not versions:
        errors.append(required(path.child("versions")))
    elif sum(1 for v in versions if v.storage) != 1:
        detail = "must have exactly one version marked as storage version"
        errors.append(invalid(path.child("versions"), [v.name for v in versions], detail))
    return errors
