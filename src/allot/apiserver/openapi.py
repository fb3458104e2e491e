"""OpenAPI v3 documents generated from the pydantic models.

kubectl needs them for ``create``/``apply`` (a PATCH operation per kind with a
``fieldValidation`` parameter makes it skip client-side validation and send
``fieldValidation=Strict``) and for ``explain`` (schemas named like upstream's,
``io.k8s.api.resource.v1.ResourceClaim``, with ``x-kubernetes-group-version-kind`` and
``$ref`` drill-down). Documents are built once per process and served with a content hash.
A cluster's CRDs get documents of their own (built per request from the cluster's custom
kinds, never another cluster's), with the CRD's schema as upstream's apiextensions serves it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from allot.api.autoscaling_v1 import Scale
from allot.managedfields.schema import ATOMIC_STRUCTS, LIST_TYPES
from allot.registry import resources
from allot.registry.descriptions import FIELD_DESCRIPTIONS, OBJECT_FIELDS, TYPE_DESCRIPTIONS

_MODULE_PREFIX = {
    "allot.api.resource_v1": "io.k8s.api.resource.v1",
    "allot.api.core_v1": "io.k8s.api.core.v1",
    "allot.api.core_v1_nodes": "io.k8s.api.core.v1",
    "allot.api.apps_v1": "io.k8s.api.apps.v1",
    "allot.api.batch_v1": "io.k8s.api.batch.v1",
    "allot.api.autoscaling_v1": "io.k8s.api.autoscaling.v1",
    "allot.api.rbac_v1": "io.k8s.api.rbac.v1",
    "allot.api.policy_v1": "io.k8s.api.policy.v1",
    "allot.api.coordination_v1": "io.k8s.api.coordination.v1",
    "allot.api.discovery_v1": "io.k8s.api.discovery.v1",
    "allot.api.networking_v1": "io.k8s.api.networking.v1",
    "allot.api.autoscaling_v2": "io.k8s.api.autoscaling.v2",
    "allot.api.scheduling_v1": "io.k8s.api.scheduling.v1",
    "allot.api.core_v1_storage": "io.k8s.api.core.v1",
    "allot.api.storage_v1": "io.k8s.api.storage.v1",
    "allot.api.meta": "io.k8s.apimachinery.pkg.apis.meta.v1",
}


def _schema_name(model: type[BaseModel]) -> str:
    return f"{_MODULE_PREFIX.get(model.__module__, 'dev.allot')}.{model.__name__}"


PATCH_MERGE_KEYS: dict[tuple[str, str], str] = {
    ("ObjectMeta", "ownerReferences"): "uid",
    ("ObjectMeta", "finalizers"): "",
    ("PodSpec", "containers"): "name",
    ("PodSpec", "initContainers"): "name",
    ("PodSpec", "ephemeralContainers"): "name",
    ("PodSpec", "volumes"): "name",
    ("PodSpec", "imagePullSecrets"): "name",
    ("PodSpec", "hostAliases"): "ip",
    ("PodSpec", "resourceClaims"): "name",
    ("Container", "ports"): "containerPort",
    ("Container", "env"): "name",
    ("Container", "volumeMounts"): "mountPath",
    ("ServiceSpec", "ports"): "port",
    ("PodStatus", "conditions"): "type",
    ("NodeStatus", "conditions"): "type",
    ("NodeStatus", "addresses"): "type",
    ("DeploymentStatus", "conditions"): "type",
    ("ReplicaSetStatus", "conditions"): "type",
    ("StatefulSetStatus", "conditions"): "type",
    ("JobStatus", "conditions"): "type",
    ("PodDisruptionBudgetStatus", "conditions"): "type",
}
"""The lists upstream's types merge in a strategic merge patch, with their merge keys (the
``patchMergeKey``/``patchStrategy`` tags): kubectl's client-side apply reads them from the
schemas to send item-wise patches (removals as ``$patch: delete``) instead of whole lists.
Only lists the server's strategic merge (:mod:`allot.registry.patching`) merges the same
way are listed."""
PATCH_RETAIN_KEYS = {("DeploymentSpec", "strategy"), ("PodSpec", "volumes")}
"""The fields upstream tags ``patchStrategy:"retainKeys"`` (``"merge,retainKeys"`` for the
volumes): kubectl's client-side apply sends ``$retainKeys`` with them, which the server
applies, so a Deployment switched to ``Recreate`` drops its ``rollingUpdate``."""


@functools.lru_cache(maxsize=1)
def _components() -> dict[str, Any]:
    models: list[type[BaseModel]] = [r.info.model for r in resources.built_in_resources()]
    models.append(Scale)
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
    _describe(renamed)
    for model, field in sorted({*PATCH_MERGE_KEYS, *PATCH_RETAIN_KEYS}):
        for name, schema in renamed.items():
            if name.endswith(f".{model}") and field in schema.get("properties", {}):
                schema["properties"][field].update(_patch_meta(model, field))
    _list_types(renamed)
    renamed[SCALE]["x-kubernetes-group-version-kind"] = [dict(SCALE_GVK)]
    for resource in resources.built_in_resources():
        entry = renamed[_schema_name(resource.info.model)]
        entry["x-kubernetes-group-version-kind"] = [
            {"group": resource.group, "kind": resource.kind, "version": resource.version}
        ]
        for field, description in OBJECT_FIELDS.items():
            if field in entry.get("properties", {}):
                entry["properties"][field].setdefault("description", description)
    for schema in renamed.values():
        for field, prop in schema.get("properties", {}).items():
            schema["properties"][field] = _ref_alone(prop)
    return renamed


def _describe(renamed: dict[str, Any]) -> None:
    """:mod:`allot.registry.descriptions` on the schemas: a type's own description (it
    replaces the model's docstring, which is written for developers) and its fields'."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for name, schema in renamed.items():
        by_model.setdefault(name.rsplit(".", 1)[-1], []).append(schema)
    for model, description in TYPE_DESCRIPTIONS.items():
        for schema in by_model.get(model, []):
            schema["description"] = description
    for (model, field), description in FIELD_DESCRIPTIONS.items():
        for schema in by_model.get(model, []):
            if field in schema.get("properties", {}):
                schema["properties"][field]["description"] = description


def _ref_alone(prop: dict[str, Any]) -> dict[str, Any]:
    """A property whose ``$ref`` has siblings (a description, patch metadata) as
    ``allOf: [{$ref}]`` beside them: OpenAPI 3.0 ignores a reference's siblings, and so
    does ``kubectl explain`` (it printed ``<empty>`` for ``resourceclaim.spec``)."""
    if "$ref" not in prop or len(prop) == 1:
        return prop
    return {"allOf": [{"$ref": prop["$ref"]}], **{k: v for k, v in prop.items() if k != "$ref"}}


def _patch_meta(model: str, field: str) -> dict[str, str]:
    """A field's ``x-kubernetes-patch-strategy`` and ``-merge-key``, as upstream's tags."""
    strategies = [
        strategy
        for strategy, tagged in (
            ("merge", (model, field) in PATCH_MERGE_KEYS),
            ("retainKeys", (model, field) in PATCH_RETAIN_KEYS),
        )
        if tagged
    ]
    meta = {"x-kubernetes-patch-strategy": ",".join(strategies)}
    if key := PATCH_MERGE_KEYS.get((model, field)):
        meta["x-kubernetes-patch-merge-key"] = key
    return meta


def _list_types(renamed: dict[str, Any]) -> None:
    """Upstream's list and map types on the schemas (what server-side apply merges by,
    :mod:`allot.managedfields.schema`), as the API server publishes them."""
    by_model: dict[str, dict[str, Any]] = {}
    for name, schema in renamed.items():
        by_model.setdefault(name.rsplit(".", 1)[-1], {})[name] = schema
    for where, kind in LIST_TYPES.items():
        model, field = where.split(".", 1)
        for schema in by_model.get(model, {}).values():
            prop = schema.get("properties", {}).get(field)
            if prop is None:
                continue
            if kind == "atomic-map":
                prop["x-kubernetes-map-type"] = "atomic"
            elif kind == "set":
                prop["x-kubernetes-list-type"] = "set"
            else:
                prop["x-kubernetes-list-type"] = "map"
                prop["x-kubernetes-list-map-keys"] = list(kind)
    for model in ATOMIC_STRUCTS:
        for schema in by_model.get(model, {}).values():
            schema["x-kubernetes-map-type"] = "atomic"


def _openapi3(schema: Any) -> Any:
    """JSON-Schema-isms pydantic emits that OpenAPI 3.0 (and kubectl) do not expect."""
    if isinstance(schema, list):
        return [_openapi3(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if kept == [{"type": "integer"}, {"type": "string"}]:  # IntOrString, as upstream
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            schema = {**rest, "$ref": f"#/components/schemas/{INT_OR_STRING}"}
        elif len(kept) == 1:
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


META = "io.k8s.apimachinery.pkg.apis.meta.v1"
SCALE = "io.k8s.api.autoscaling.v1.Scale"
SCALE_GVK = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
# Request bodies that are not stored kinds, as upstream names them (shapes, not every field).
_REQUEST_SCHEMAS: dict[str, Any] = {
    INT_OR_STRING: {"type": "string", "format": "int-or-string"},
    f"{META}.Patch": {
        "type": "object",
        "description": "Patch is provided to give a concrete name and type to the patch body.",
    },
    f"{META}.DeleteOptions": {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "dryRun": {"type": "array", "items": {"type": "string"}},
            "gracePeriodSeconds": {"type": "integer", "format": "int64"},
            "orphanDependents": {"type": "boolean"},
            "preconditions": {
                "type": "object",
                "properties": {"resourceVersion": {"type": "string"}, "uid": {"type": "string"}},
            },
            "propagationPolicy": {"type": "string"},
        },
    },
    "io.k8s.api.core.v1.Binding": {
        "type": "object",
        "required": ["target"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": f"#/components/schemas/{META}.ObjectMeta"},
            "target": {"$ref": "#/components/schemas/io.k8s.api.core.v1.ObjectReference"},
        },
    },
    "io.k8s.api.policy.v1.Eviction": {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "deleteOptions": {"$ref": f"#/components/schemas/{META}.DeleteOptions"},
            "kind": {"type": "string"},
            "metadata": {"$ref": f"#/components/schemas/{META}.ObjectMeta"},
        },
    },
}
EVICTION = "io.k8s.api.policy.v1.Eviction"
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
_LIST_QUERY = (
    ("allowWatchBookmarks", "boolean"),
    ("continue", "string"),
    ("fieldSelector", "string"),
    ("labelSelector", "string"),
    ("limit", "integer"),
    ("resourceVersion", "string"),
    ("resourceVersionMatch", "string"),
    ("sendInitialEvents", "boolean"),
    ("timeoutSeconds", "integer"),
    ("watch", "boolean"),
)
_WRITE_QUERY = (("dryRun", "string"), ("fieldManager", "string"), ("fieldValidation", "string"))
_DELETE_QUERY = (
    ("dryRun", "string"),
    ("gracePeriodSeconds", "integer"),
    ("orphanDependents", "boolean"),
    ("propagationPolicy", "string"),
)
_LOG_QUERY = (
    ("container", "string"),
    ("follow", "boolean"),
    ("limitBytes", "integer"),
    ("previous", "boolean"),
    ("tailLines", "integer"),
    ("timestamps", "boolean"),
)


def _query(names: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    return [
        {"name": name, "in": "query", "schema": {"type": kind, "uniqueItems": True}}
        for name, kind in names
    ]


def _path_parameter(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _body(schema_name: str, media_types: Sequence[str] = ("*/*",)) -> dict[str, Any]:
    reference = {"$ref": f"#/components/schemas/{schema_name}"}
    return {"required": True, "content": {m: {"schema": reference} for m in media_types}}


def _operations(resource: resources.ServedResource) -> dict[str, Any]:
    """Upstream's paths for one kind: collection, item and subresources, with parameters
    and request bodies (kubectl reads the PATCH ``fieldValidation`` parameter; the fuzz
    suite drives every operation from them)."""
    prefix = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
    scope = "/namespaces/{namespace}" if resource.namespaced else ""
    collection = f"{prefix}{scope}/{resource.plural}"
    item = f"{collection}/{{name}}"
    scope_parameters = [_path_parameter("namespace")] if resource.namespaced else []
    kind = _kind_schema_name(resource)
    operation = _operation_builder(resource)
    paths: dict[str, Any] = {
        collection: {
            "parameters": scope_parameters,
            "get": operation("list", _query(_LIST_QUERY)),
            "post": operation("post", _query(_WRITE_QUERY), _body(kind)),
            "delete": operation(
                "deletecollection",
                _query(_LIST_QUERY[:7] + _DELETE_QUERY),
                _body(f"{META}.DeleteOptions"),
            ),
        },
        item: {
            "parameters": [*scope_parameters, _path_parameter("name")],
            **_item(operation, kind),
        },
    }
    for subresource in resource.subresources:
        scaled = subresource == "scale"  # autoscaling/v1 Scale in and out
        paths[f"{item}/{subresource}"] = {
            "parameters": [*scope_parameters, _path_parameter("name")],
            **_subresource(
                _operation_builder(resource, SCALE_GVK, SCALE) if scaled else operation,
                SCALE if scaled else kind,
                subresource,
            ),
        }
    return paths


def _item(operation: Any, kind: str) -> dict[str, Any]:
    return {
        "get": operation("get", []),
        "put": operation("put", _query(_WRITE_QUERY), _body(kind)),
        "patch": operation(
            "patch",
            _query((*_WRITE_QUERY, ("force", "boolean"))),
            _body(f"{META}.Patch", _PATCH_TYPES),
        ),
        "delete": operation("delete", _query(_DELETE_QUERY), _body(f"{META}.DeleteOptions")),
    }


def _subresource(operation: Any, kind: str, subresource: str) -> dict[str, Any]:
    if subresource == "log":
        return {"get": operation("connect", _query(_LOG_QUERY))}
    if subresource in ("binding", "eviction"):
        body = "io.k8s.api.core.v1.Binding" if subresource == "binding" else EVICTION
        return {"post": operation("post", _query(_WRITE_QUERY), _body(body))}
    operations = _item(operation, kind)
    return {verb: operations[verb] for verb in ("get", "put", "patch")}


def _operation_builder(
    resource: resources.ServedResource,
    answer_gvk: dict[str, str] | None = None,
    answer_schema: str | None = None,
) -> Any:
    gvk = answer_gvk or {
        "group": resource.group,
        "version": resource.version,
        "kind": resource.kind,
    }
    schema = answer_schema or _kind_schema_name(resource)
    reference = {"$ref": f"#/components/schemas/{schema}"}
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}}

    def operation(
        action: str, parameters: list[dict[str, Any]], body: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
            "responses": ok,
        }
        if parameters:
            entry["parameters"] = parameters
        if body is not None:
            entry["requestBody"] = body
        return entry

    return operation


@functools.lru_cache(maxsize=16)
def document(group: str, version: str) -> dict[str, Any] | None:
    """A built-in group version's document (the same in every cluster)."""
    served = resources.in_group_version(group, version, None)
    if not served:
        return None
    paths: dict[str, Any] = {}
    for resource in served:
        paths.update(_operations(resource))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.0"},
        "paths": paths,
        "components": {"schemas": {**_components(), **_REQUEST_SCHEMAS}},
    }


def document_bytes(cluster: str, group: str, version: str) -> bytes | None:
    """A group version's document in ``cluster``: built-in, else of its own CRDs."""
    doc = document(group, version) or custom_document(cluster, group, version)
    return None if doc is None else json.dumps(doc, separators=(",", ":")).encode()


def custom_document(cluster: str, group: str, version: str) -> dict[str, Any] | None:
    """The document of a group version that only ``cluster``'s CRDs serve: each kind's
    paths and its schema, the CRD's ``openAPIV3Schema`` named as upstream names a CRD's
    (``com.example.v1.Widget``), with ``metadata`` as ObjectMeta (``kubectl explain``)."""
    served = [
        r for r in resources.custom_resources(cluster) if (r.group, r.version) == (group, version)
    ]
    if not served:
        return None
    paths: dict[str, Any] = {}
    shared = {**_components(), **_REQUEST_SCHEMAS}  # ObjectMeta, DeleteOptions, Patch, ...
    schemas = {k: v for k, v in shared.items() if k.startswith(f"{META}.")}
    for resource in served:
        paths.update(_operations(resource))
        schemas[_kind_schema_name(resource)] = _custom_schema(resource)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _kind_schema_name(resource: resources.ServedResource) -> str:
    """The schema's name: the model's for a built-in kind, upstream's CRD naming (the
    group reversed, then version and kind) for a custom one."""
    if not resource.custom:
        return _schema_name(resource.info.model)
    reversed_group = ".".join(reversed(resource.group.split(".")))
    return f"{reversed_group}.{resource.version}.{resource.kind}"


def _custom_schema(resource: resources.ServedResource) -> dict[str, Any]:
    source: Any = getattr(resource.info.model, "openapi_schema", {}) or {}
    schema: dict[str, Any] = json.loads(json.dumps(source))  # a copy: the model keeps its own
    schema.setdefault("type", "object")
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string", "description": _API_VERSION_TEXT}
    properties["kind"] = {"type": "string", "description": _KIND_TEXT}
    properties["metadata"] = {
        "allOf": [{"$ref": f"#/components/schemas/{META}.ObjectMeta"}],
        "description": "Standard object's metadata.",
    }
    schema["x-kubernetes-group-version-kind"] = [
        {"group": resource.group, "kind": resource.kind, "version": resource.version}
    ]
    return schema


_API_VERSION_TEXT = (
    "The versioned schema this object is written in (group/version); the server serves "
    "the versions its CustomResourceDefinition marks as served."
)
_KIND_TEXT = "The REST kind of this object, in CamelCase, as the CustomResourceDefinition names it."


def path_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _digest(body: bytes) -> str:
    return hashlib.sha512(body).hexdigest()[:64].upper()


@functools.lru_cache(maxsize=1)
def index_hashes() -> dict[str, str]:
    """The built-in group versions' document hashes (the same in every cluster)."""
    hashes = {}
    for group, version in resources.group_versions(None):
        doc = document(group, version)
        body = b"" if doc is None else json.dumps(doc, separators=(",", ":")).encode()
        hashes[path_key(group, version)] = _digest(body)
    return hashes


def index(cluster: str, prefix: str) -> dict[str, Any]:
    """``/openapi/v3``: the built-in group versions and those of ``cluster``'s CRDs,
    each hashed by its content (a changed CRD changes its document's URL)."""
    hashes = dict(index_hashes())
    for group, version in resources.group_versions(cluster):
        key = path_key(group, version)
        if key not in hashes:
            hashes[key] = _digest(document_bytes(cluster, group, version) or b"")
    return {
        "paths": {
            key: {"serverRelativeURL": f"{prefix}/openapi/v3/{key}?hash={digest}"}
            for key, digest in hashes.items()
        }
    }


V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
"""The response's type (kubectl's Accept names it with ``@v1.0``, which Go's media type
parser refuses in a Content-Type, so kube-openapi answers with ``.v1.0``)."""


def empty_v2(protobuf: bool) -> bytes:
    """An OpenAPI v2 document that describes no kind, in JSON or as the protobuf message
    kubectl asks for (``swagger``: field 1; ``info``: field 2, with ``title`` 1 and
    ``version`` 2). kubectl falls back to v2 to validate a kind missing from the v3
    documents (one allot does not serve); finding nothing there it skips validation and
    answers as upstream does, ``no matches for kind``, instead of failing to download."""
    if not protobuf:
        return json.dumps(
            {"swagger": "2.0", "info": {"title": "allot", "version": "v1.36.0"}, "paths": {}}
        ).encode()
    info = _field(1, b"allot") + _field(2, b"v1.36.0")
    return _field(1, b"2.0") + _field(2, info)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2); payloads here are under 128 bytes."""
    return bytes([number << 3 | 2, len(payload)]) + payload
