"""allot's CustomResourceDefinitions (Tenant, Alert), their schemas generated from the
pydantic models, so that a real cluster serves the kinds the embedded platform has built in
(``allot controller`` writes Alerts there).

pydantic's JSON schema is turned into a structural OpenAPI v3 schema as the API server
requires: references inlined, ``anyOf [X, null]`` reduced to ``X`` (an omitted field is
``None`` in the model), titles and null defaults dropped, free-form objects marked
``x-kubernetes-preserve-unknown-fields``, and Quantity fields declared
``x-kubernetes-int-or-string`` (vCluster values write quotas as numbers). ``status`` is a
subresource; ``additionalPrinterColumns`` match ``kubectl get tenants`` and ``kubectl get
alerts`` on the embedded platform. Pure; used by ``render``.
"""

from __future__ import annotations

from typing import Any

from allot.api.base import ApiModel
from allot.api.tenancy import TENANCY_GROUP, TENANCY_VERSION, Alert, Tenant
from allot.types import Obj

QUANTITY_PATHS = (("spec", "quota", "hard", "*"), ("spec", "quota", "gpuMemory"))
INT_OR_STRING: Obj = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}


def tenant_crd() -> Obj:
    return _crd(Tenant, "tenants", ["tn"], _columns(), QUANTITY_PATHS)


def alert_crd() -> Obj:
    columns = [  # the embedded platform's table (registry.kinds.alerts)
        {"name": "Rule", "type": "string", "jsonPath": ".spec.rule"},
        {"name": "Severity", "type": "string", "jsonPath": ".spec.severity"},
        {"name": "Tenant", "type": "string", "jsonPath": ".spec.tenant"},
        {"name": "Since", "type": "date", "jsonPath": ".status.activeSince"},
        {"name": "Message", "type": "string", "jsonPath": ".spec.message"},
    ]
    return _crd(Alert, "alerts", [], columns, ())


def _crd(
    model: type[ApiModel],
    plural: str,
    short_names: list[str],
    columns: list[Obj],
    quantities: tuple[tuple[str, ...], ...],
) -> Obj:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    schema = _structural(raw, raw.get("$defs", {}))
    schema["properties"]["metadata"] = {"type": "object"}
    for path in quantities:
        _replace(schema, path, INT_OR_STRING)
    schema["properties"].pop("apiVersion", None)
    schema["properties"].pop("kind", None)
    schema["properties"] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        **schema["properties"],
    }
    kind = plural[:-1].capitalize()
    names: Obj = {"kind": kind, "listKind": f"{kind}List", "plural": plural}
    names["singular"] = plural[:-1]
    if short_names:
        names["shortNames"] = short_names
    names["categories"] = ["allot"]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{TENANCY_GROUP}"},
        "spec": {
            "group": TENANCY_GROUP,
            "names": names,
            "scope": "Cluster",
            "versions": [
                {
                    "name": TENANCY_VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                }
            ],
        },
    }


def _columns() -> list[Obj]:
    return [
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Namespace", "type": "string", "jsonPath": ".status.namespace"},
        {"name": "Classes", "type": "string", "jsonPath": ".status.entitledDeviceClasses"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def _structural(schema: Any, definitions: Obj) -> Any:
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        target = definitions[schema["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return _structural(merged, definitions)
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1:
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            return _structural({**rest, **kept[0]}, definitions)
    result: Obj = {}
    for key, value in schema.items():
        if key in ("title", "$defs") or (key == "default" and value is None):
            continue
        if key == "properties":
            result[key] = {name: _structural(v, definitions) for name, v in value.items()}
        elif key == "items":
            result[key] = _structural(value, definitions)
        elif key == "additionalProperties":
            if value is True:
                result["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(value, dict):
                result[key] = _structural(value, definitions)
        else:
            result[key] = value
    if "description" in result:
        result["description"] = str(result["description"]).replace("``", "")
    free_form = "properties" not in result and "additionalProperties" not in result
    if result.get("type") == "object" and free_form:
        result["x-kubernetes-preserve-unknown-fields"] = True
    return result


def _replace(schema: Obj, path: tuple[str, ...], replacement: Obj) -> None:
    node = schema
    for part in path[:-1]:
        node = node["properties"][part] if part != "*" else node["additionalProperties"]
    last = path[-1]
    if last == "*":
        node["additionalProperties"] = dict(replacement)
    else:
        description = node["properties"][last].get("description")
        extra = {"description": description} if description else {}
        node["properties"][last] = {**replacement, **extra}
