"""OpenAPI v3 documents generated from the pydantic models.

kubectl needs them for ``create``/``apply`` (a PATCH operation per kind with a
``fieldValidation`` parameter makes it skip client-side validation and send
``fieldValidation=Strict``) and for ``explain`` (schemas named like upstream's,
``io.k8s.api.resource.v1.ResourceClaim``, with ``x-kubernetes-group-version-kind`` and
``$ref`` drill-down). Documents are built once per process and served with a content hash.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from allot.apiserver import resources
from allot.apiserver.descriptions import FIELD_DESCRIPTIONS

_MODULE_PREFIX = {
    "allot.api.resource_v1": "io.k8s.api.resource.v1",
    "allot.api.core_v1": "io.k8s.api.core.v1",
    "allot.api.meta": "io.k8s.apimachinery.pkg.apis.meta.v1",
}


def _schema_name(model: type[BaseModel]) -> str:
    return f"{_MODULE_PREFIX.get(model.__module__, 'dev.allot')}.{model.__name__}"


@functools.lru_cache(maxsize=1)
def _components() -> dict[str, Any]:
    models = [r.info.model for r in resources.RESOURCES]
    _, schema = models_json_schema(
        [(m, "validation") for m in models],
        by_alias=True,
        ref_template="#/components/schemas/{model}",
    )
    definitions: dict[str, Any] = schema.get("$defs", {})
    names = _definition_names(models)
    text = json.dumps(definitions)
    for short, full in sorted(names.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(f'"#/components/schemas/{short}"', f'"#/components/schemas/{full}"')
    renamed = {names.get(k, k): _openapi3(v) for k, v in json.loads(text).items()}
    for (model, field), description in FIELD_DESCRIPTIONS.items():
        for name, schema in renamed.items():
            if name.endswith(f".{model}") and field in schema.get("properties", {}):
                schema["properties"][field]["description"] = description
    for resource in resources.RESOURCES:
        entry = renamed[_schema_name(resource.info.model)]
        entry["x-kubernetes-group-version-kind"] = [
            {"group": resource.group, "kind": resource.kind, "version": resource.version}
        ]
    return renamed


def _openapi3(schema: Any) -> Any:
    """JSON-Schema-isms pydantic emits that OpenAPI 3.0 (and kubectl) do not expect."""
    if isinstance(schema, list):
        return [_openapi3(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1:
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            schema = {**rest, **kept[0]}
    if "$ref" in schema and len(schema) > 1:
        schema = {
            "allOf": [{"$ref": schema["$ref"]}],
            **{k: v for k, v in schema.items() if k != "$ref"},
        }
    cleaned = {
        k: _openapi3(v)
        for k, v in schema.items()
        if k not in ("title", "additionalProperties") and not (k == "default" and v is None)
    }
    if "const" in cleaned:
        cleaned.pop("const")
    if schema.get("additionalProperties") not in (None, False):
        cleaned["additionalProperties"] = _openapi3(schema["additionalProperties"])
    return cleaned


def _definition_names(models: Sequence[type[BaseModel]]) -> dict[str, str]:
    """pydantic's definition names -> upstream-style qualified names."""
    names: dict[str, str] = {}
    seen: set[type[BaseModel]] = set()

    def visit(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        names[model.__name__] = _schema_name(model)
        for field in model.model_fields.values():
            for candidate in _models_in(field.annotation):
                visit(candidate)

    for model in models:
        visit(model)
    return names


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found.append(annotation)
    for argument in getattr(annotation, "__args__", ()) or ():
        found += _models_in(argument)
    return found


def _operations(resource: resources.ServedResource) -> dict[str, Any]:
    prefix = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
    scope = "/namespaces/{namespace}" if resource.namespaced else ""
    gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    reference = {"$ref": f"#/components/schemas/{_schema_name(resource.info.model)}"}
    parameters = [
        {
            "name": "fieldValidation",
            "in": "query",
            "schema": {"type": "string", "uniqueItems": True},
        },
        {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
        {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
    ]
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}}

    def operation(action: str, with_parameters: bool = True) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
            "responses": ok,
        }
        if with_parameters:
            entry["parameters"] = parameters
        return entry

    return {
        f"{prefix}{scope}/{resource.plural}": {
            "get": operation("list", False),
            "post": operation("post"),
        },
        f"{prefix}{scope}/{resource.plural}/{{name}}": {
            "get": operation("get", False),
            "put": operation("put"),
            "patch": operation("patch"),
            "delete": operation("delete", False),
        },
    }


@functools.lru_cache(maxsize=16)
def document(group: str, version: str) -> dict[str, Any] | None:
    served = resources.in_group_version(group, version, custom=False)
    if not served:
        return None
    paths: dict[str, Any] = {}
    for resource in served:
        paths.update(_operations(resource))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.0"},
        "paths": paths,
        "components": {"schemas": _components()},
    }


def document_bytes(group: str, version: str) -> bytes | None:
    doc = document(group, version)
    return None if doc is None else json.dumps(doc, separators=(",", ":")).encode()


def path_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


@functools.lru_cache(maxsize=1)
def index_hashes() -> dict[str, str]:
    hashes = {}
    for group, version in resources.group_versions(custom=False):
        body = document_bytes(group, version) or b""
        hashes[path_key(group, version)] = hashlib.sha512(body).hexdigest()[:64].upper()
    return hashes


def index(prefix: str) -> dict[str, Any]:
    return {
        "paths": {
            key: {"serverRelativeURL": f"{prefix}/openapi/v3/{key}?hash={digest}"}
            for key, digest in index_hashes().items()
        }
    }
