"""What server-side apply knows of a kind's shape: maps, lists and their types, atomic parts.

structured-merge-diff walks objects with a schema: a struct or map is granular (its
fields are owned one by one) unless atomic; a list is atomic (owned and replaced whole)
unless it is a set (``x-kubernetes-list-type: set``, items owned by value) or a map
(``x-kubernetes-list-type: map`` with ``x-kubernetes-list-map-keys``, items owned by
key). Built-in kinds get their shape from allot's pydantic models plus upstream's
``+listType``/``+listMapKey``/``+structType``/``+mapType`` tags of the Go types (the
tables below, read from ``k8s.io/api`` for the types allot models); custom kinds from
their CRD's OpenAPI schema. Anything else (``x-kubernetes-preserve-unknown-fields``, a
model's free-form ``dict``) is "deduced" as upstream deduces it: maps granular, lists
atomic. Called by :mod:`.typed` and :mod:`.managers`; built once per model class.
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

LIST_TYPES: dict[str, tuple[str, ...] | str] = {
    "AllocatedDeviceStatus.conditions": ("type",),
    "Container.env": ("name",),
    "Container.ports": ("containerPort", "protocol"),
    "Container.volumeDevices": ("devicePath",),
    "Container.volumeMounts": ("mountPath",),
    "ContainerStatus.allocatedResourcesStatus": ("name",),
    "ContainerStatus.volumeMounts": ("mountPath",),
    "DeploymentStatus.conditions": ("type",),
    "DeviceRequestAllocationResult.skipNodeOperations": "set",
    "Endpoint.addresses": "set",
    "HorizontalPodAutoscalerStatus.conditions": ("type",),
    "NamespaceStatus.conditions": ("type",),
    "NodeSpec.podCIDRs": "set",
    "NodeStatus.addresses": ("type",),
    "NodeStatus.conditions": ("type",),
    "PersistentVolumeClaimStatus.conditions": ("type",),
    "PodDisruptionBudgetStatus.conditions": ("type",),
    "PodFailurePolicyOnExitCodesRequirement.values": "set",
    "PodSpec.containers": ("name",),
    "PodSpec.ephemeralContainers": ("name",),
    "PodSpec.evictionResponders": ("name",),
    "PodSpec.hostAliases": ("ip",),
    "PodSpec.imagePullSecrets": ("name",),
    "PodSpec.initContainers": ("name",),
    "PodSpec.nodeSelector": "atomic-map",
    "PodSpec.resourceClaims": ("name",),
    "PodSpec.schedulingGates": ("name",),
    "PodSpec.topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "PodSpec.volumes": ("name",),
    "PodStatus.conditions": ("type",),
    "PodStatus.nodeAllocatableResourceClaimStatuses": ("resourceClaimName",),
    "PodStatus.podIPs": ("ip",),
    "PodStatus.resourceClaimStatuses": ("name",),
    "PodStatus.volumeHealth": ("name",),
    "ReplicaSetStatus.conditions": ("type",),
    "ResourceClaimStatus.devices": ("driver", "device", "pool", "shareID"),
    "ResourceClaimStatus.reservedFor": ("uid",),
    "ResourceRequirements.claims": ("name",),
    "ResourceSliceSpec.skipNodeOperations": "set",
    "ServiceAccount.secrets": ("name",),
    "ServiceSpec.ports": ("port", "protocol"),
    "ServiceSpec.selector": "atomic-map",
    "ServiceStatus.conditions": ("type",),
    "StatefulSetStatus.conditions": ("type",),
    "UncountedTerminatedPods.failed": "set",
    "UncountedTerminatedPods.succeeded": "set",
    "ValidatingAdmissionPolicyBindingSpec.validationActions": "set",
    "ValidatingAdmissionPolicySpec.matchConditions": ("name",),
    "ValidatingAdmissionPolicySpec.variables": ("name",),
    "ValidatingAdmissionPolicyStatus.conditions": ("type",),
    "ObjectMeta.finalizers": "set",
    "ObjectMeta.ownerReferences": ("uid",),
}
"""Lists that are not atomic, by ``Struct.jsonField``: a tuple of map keys (a list map),
``"set"``, or ``"atomic-map"`` for a map field owned whole (``+mapType=atomic``). Legacy
``patchMergeKey`` tags without ``+listType`` count as list maps, as upstream's schema
conversion reads them."""

KEY_DEFAULTS: dict[tuple[str, str], Any] = {
    ("Container.ports", "protocol"): "TCP",
    ("ServiceSpec.ports", "protocol"): "TCP",
}
"""Defaults of map keys an item may omit (``protocol`` is ``TCP`` unless given)."""

ATOMIC_STRUCTS = frozenset(
    {
        "CrossVersionObjectReference",
        "EndpointAddress",
        "EndpointPort",
        "LocalObjectReference",
        "MatchResources",
        "NamedRuleWithOperations",
        "NodeSelector",
        "NodeSelectorTerm",
        "ObjectReference",
        "ParamKind",
        "ParamRef",
        "RoleRef",
        "ScopeSelector",
        "ServiceBackendPort",
        "Subject",
        "TopologySelectorTerm",
        "TypedLocalObjectReference",
        "Variable",
        "LabelSelector",
    }
)
"""Structs tagged ``+structType=atomic`` upstream (owned and replaced whole)."""

VALUE_STRUCTS: dict[str, tuple[str, ...]] = {
    "": ("metadata", "spec", "status"),
    "PodTemplateSpec": ("metadata", "spec"),
    "DeploymentSpec": ("template", "strategy"),
    "ReplicaSetSpec": ("template",),
    "StatefulSetSpec": ("template", "updateStrategy"),
    "DaemonSetSpec": ("template", "updateStrategy"),
    "JobSpec": ("template",),
    "CronJobSpec": ("jobTemplate",),
    "JobTemplateSpec": ("metadata", "spec"),
}
"""Struct fields Go holds by value (not pointers): an empty object of the kind already has
them, so a create does not count them as added (``""`` is the top level). Upstream's
update manager compares a create with such an empty object."""

NULL_FIELDS: dict[str, tuple[str, ...]] = {
    "PodSpec": ("containers",),
    "DeploymentSpec": ("selector",),
    "ReplicaSetSpec": ("selector",),
    "StatefulSetSpec": ("selector",),
    "DaemonSetSpec": ("selector",),
}
"""Fields without ``omitempty`` that an empty object writes as ``null``: present, so a
create does not count the field itself as added either."""


@dataclass(eq=False)
class Atom:
    """One node of a schema: ``scalar``, ``map`` (a struct, a map, or both) or ``list``.

    ``list_type`` is ``atomic``, ``set`` or ``map`` (with ``keys``); a map is granular
    unless ``atomic``; ``deduced`` nodes take their shape from the value."""

    shape: str
    atomic: bool = False
    list_type: str = "atomic"
    keys: tuple[str, ...] = ()
    key_defaults: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    deduced: bool = False
    _fields: dict[str, Atom] | None = None
    _element: Atom | None = None
    _resolve: typing.Callable[[], tuple[dict[str, Atom], Atom | None]] | None = None

    @property
    def fields(self) -> dict[str, Atom]:
        self._load()
        return self._fields or {}

    @property
    def element(self) -> Atom | None:
        self._load()
        return self._element

    def _load(self) -> None:
        if self._resolve is not None:
            self._fields, self._element = self._resolve()
            self._resolve = None

    def child(self, name: str) -> tuple[Atom, bool]:
        """The type of a map's entry and whether it is a named (struct) field."""
        if self._resolve is not None:
            self._load()
        found = self._fields.get(name) if self._fields else None
        if found is not None:
            return found, True
        return self._element or DEDUCED, False


SCALAR = Atom("scalar")
DEDUCED = Atom("map", deduced=True)
DEDUCED._element = DEDUCED


# ------------------------------------------------------------------ pydantic models
@functools.cache
def of_model(model: type[BaseModel]) -> Atom:
    """The schema of a model class (a custom kind's from the CRD schema it carries)."""
    openapi = getattr(model, "openapi_schema", None)
    if isinstance(openapi, dict):
        return _custom_kind(openapi)
    return _struct(model)


@functools.cache
def _struct(model: type[BaseModel]) -> Atom:
    name = model.__name__
    atom = Atom("map", atomic=name in ATOMIC_STRUCTS, name=name)

    def resolve() -> tuple[dict[str, Atom], Atom | None]:
        fields = {}
        for attribute, info in model.model_fields.items():
            wire = info.alias or attribute
            fields[wire] = _annotation(info.annotation, f"{name}.{wire}")
        return fields, None

    atom._resolve = resolve
    return atom


def _annotation(annotation: Any, where: str) -> Atom:
    annotation = _unwrap(annotation)
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return DEDUCED
    if origin is list:
        (item,) = typing.get_args(annotation) or (Any,)
        return _list(_annotation(item, ""), LIST_TYPES.get(where), where)
    if origin is dict:
        _, value = typing.get_args(annotation) or (str, Any)
        element = _annotation(value, "")
        return Atom("map", atomic=LIST_TYPES.get(where) == "atomic-map", _element=element)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _struct(annotation)
    return SCALAR


def _unwrap(annotation: Any) -> Any:
    """Strip ``Annotated`` and ``| None``; a union of several types is a scalar."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            options = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return str
            annotation = options[0]
        else:
            return annotation


def _list(element: Atom, kind: tuple[str, ...] | str | None, where: str) -> Atom:
    if isinstance(kind, tuple):
        defaults = {k: v for (w, k), v in KEY_DEFAULTS.items() if w == where}
        return Atom("list", list_type="map", keys=kind, key_defaults=defaults, _element=element)
    if kind == "set":
        return Atom("list", list_type="set", _element=element)
    return Atom("list", _element=element)


# --------------------------------------------------------------- CRD schemas
def _custom_kind(schema: dict[str, Any]) -> Atom:
    from allot.api.meta import ObjectMeta

    top = of_openapi(schema)
    if top.deduced:
        fields: dict[str, Atom] = {}
        element: Atom | None = DEDUCED
    else:
        fields, element = dict(top.fields), top.element
    fields.update({"apiVersion": SCALAR, "kind": SCALAR, "metadata": _struct(ObjectMeta)})
    return Atom("map", _fields=fields, _element=element)


def of_openapi(schema: dict[str, Any]) -> Atom:
    """The schema of an OpenAPI v3 structural schema (a CRD version's)."""
    if schema.get("x-kubernetes-int-or-string"):
        return SCALAR
    kind = schema.get("type")
    properties = schema.get("properties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if kind == "array":
        element = of_openapi(schema.get("items") or {})
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "map":
            keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
            items = (schema.get("items") or {}).get("properties") or {}
            defaults = {k: items[k]["default"] for k in keys if "default" in (items.get(k) or {})}
            return Atom("list", list_type="map", keys=keys, key_defaults=defaults, _element=element)
        return _list(element, "set" if list_type == "set" else None, "")
    if kind == "object" or properties is not None or preserve:
        if not properties and preserve and "additionalProperties" not in schema:
            return DEDUCED
        additional = schema.get("additionalProperties")
        values: Atom | None = of_openapi(additional) if isinstance(additional, dict) else None
        if values is None and preserve:
            values = DEDUCED
        fields = {name: of_openapi(sub) for name, sub in (properties or {}).items()}
        atomic = schema.get("x-kubernetes-map-type") == "atomic"
        return Atom("map", atomic=atomic, _fields=fields, _element=values)
    if kind is None:
        return DEDUCED
    return SCALAR
