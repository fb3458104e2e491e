"""The kinds allot serves, and strict decoding of wire documents into them.

One table says, per kind, its group/version, plural resource name, scope, name rule and
model, named ``module:Class`` and imported when first used (a command that decodes only
nodes and slices builds no workload, admission or tenancy model). :func:`decode` turns a
parsed JSON/YAML document into a model the way the API server's strict decoder does:
unknown fields become ``unknown field "spec.foo"`` (all of them, in document order),
wrongly typed values name the field and the expected type, and a v1beta1-shaped DRA
request under ``resource.k8s.io/v1`` gets a hint on how to fix it. Custom kinds (CRD
versions) are registered per cluster (:mod:`allot.registry.crds`): built-in kinds are the
same everywhere, a custom kind is known only to the cluster whose CRD made it. Used by the
manifests layer, the API server and the tests.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from pydantic import ValidationError

from allot.api.base import ApiModel
from allot.api.errors import (
    DecodeError,
    ObjectTooLargeError,
    StrictDecodingError,
    UnknownKindError,
)

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
"""The API server's request body limit (``--max-request-bytes`` default)."""


@dataclass(frozen=True)
class KindInfo:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    name_rule: str  # "subdomain", "label" or "path" (RBAC: a path segment)
    model_source: type[ApiModel] | str
    """The model class, or ``"module:Class"`` for a built-in kind: its module is imported
    when :attr:`model` is first read, so a command that decodes nodes and slices never
    builds the workload, admission or tenancy models (issue 15, start-up)."""

    @property
    def model(self) -> type[ApiModel]:
        source = self.model_source
        return _import_model(source) if isinstance(source, str) else source

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified_kind(self) -> str:
        """``ResourceClaim.resource.k8s.io`` (the prefix of Invalid messages)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def qualified_resource(self) -> str:
        """``resourceclaims.resource.k8s.io`` (the prefix of NotFound messages)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


@cache
def _import_model(source: str) -> type[ApiModel]:
    module, _, name = source.partition(":")
    return cast(type[ApiModel], getattr(importlib.import_module(module), name))


TENANCY_GROUP = "allot.dev"
TENANCY_VERSION = "v1alpha1"
""":data:`allot.api.tenancy.TENANCY_GROUP` and ``TENANCY_VERSION``, spelled here so the
table needs no model module (a test checks that they agree)."""


def _built_in(
    api_version: str, kind: str, plural: str, namespaced: bool, name_rule: str, module: str
) -> KindInfo:
    """A built-in kind whose model is the class ``kind`` of ``allot.api.<module>``."""
    group, _, version = api_version.rpartition("/")
    source = f"allot.api.{module}:{kind}"
    return KindInfo(group, version, kind, plural, namespaced, name_rule, source)


KINDS: tuple[KindInfo, ...] = (
    _built_in(
        "resource.k8s.io/v1", "DeviceClass", "deviceclasses", False, "subdomain", "resource_v1"
    ),
    _built_in(
        "resource.k8s.io/v1", "ResourceSlice", "resourceslices", False, "subdomain", "resource_v1"
    ),
    _built_in(
        "resource.k8s.io/v1", "ResourceClaim", "resourceclaims", True, "subdomain", "resource_v1"
    ),
    _built_in(
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        True,
        "subdomain",
        "resource_v1",
    ),
    _built_in("v1", "Pod", "pods", True, "subdomain", "core_v1"),
    _built_in("v1", "Node", "nodes", False, "subdomain", "core_v1_nodes"),
    _built_in("v1", "Namespace", "namespaces", False, "label", "core_v1"),
    _built_in("v1", "Event", "events", True, "subdomain", "core_v1"),
    _built_in("v1", "ConfigMap", "configmaps", True, "subdomain", "core_v1"),
    _built_in("v1", "ResourceQuota", "resourcequotas", True, "subdomain", "core_v1"),
    _built_in("v1", "Service", "services", True, "label", "core_v1"),
    _built_in("v1", "Endpoints", "endpoints", True, "subdomain", "core_v1"),
    _built_in("v1", "ServiceAccount", "serviceaccounts", True, "subdomain", "core_v1"),
    _built_in("v1", "Secret", "secrets", True, "subdomain", "core_v1"),
    _built_in(
        "v1", "ReplicationController", "replicationcontrollers", True, "subdomain", "core_v1"
    ),
    _built_in("apps/v1", "Deployment", "deployments", True, "subdomain", "apps_v1"),
    _built_in("apps/v1", "ReplicaSet", "replicasets", True, "subdomain", "apps_v1"),
    _built_in("apps/v1", "StatefulSet", "statefulsets", True, "label", "apps_v1"),
    _built_in("apps/v1", "DaemonSet", "daemonsets", True, "subdomain", "apps_v1"),
    _built_in("apps/v1", "ControllerRevision", "controllerrevisions", True, "subdomain", "apps_v1"),
    _built_in("batch/v1", "Job", "jobs", True, "subdomain", "batch_v1"),
    _built_in("batch/v1", "CronJob", "cronjobs", True, "subdomain", "batch_v1"),
    _built_in(
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        False,
        "subdomain",
        "admission_v1",
    ),
    _built_in(
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        False,
        "subdomain",
        "admission_v1",
    ),
    _built_in("rbac.authorization.k8s.io/v1", "Role", "roles", True, "path", "rbac_v1"),
    _built_in(
        "rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True, "path", "rbac_v1"
    ),
    _built_in(
        "rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False, "path", "rbac_v1"
    ),
    _built_in(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        False,
        "path",
        "rbac_v1",
    ),
    _built_in(
        "policy/v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        True,
        "subdomain",
        "policy_v1",
    ),
    _built_in(
        "discovery.k8s.io/v1", "EndpointSlice", "endpointslices", True, "subdomain", "discovery_v1"
    ),
    _built_in("coordination.k8s.io/v1", "Lease", "leases", True, "subdomain", "coordination_v1"),
    _built_in(
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        True,
        "subdomain",
        "core_v1_storage",
    ),
    _built_in("v1", "PersistentVolume", "persistentvolumes", False, "subdomain", "core_v1_storage"),
    _built_in(
        "storage.k8s.io/v1", "StorageClass", "storageclasses", False, "subdomain", "storage_v1"
    ),
    _built_in(
        "scheduling.k8s.io/v1",
        "PriorityClass",
        "priorityclasses",
        False,
        "subdomain",
        "scheduling_v1",
    ),
    _built_in(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        True,
        "subdomain",
        "autoscaling_v2",
    ),
    _built_in("networking.k8s.io/v1", "Ingress", "ingresses", True, "subdomain", "networking_v1"),
    _built_in(
        "networking.k8s.io/v1",
        "IngressClass",
        "ingressclasses",
        False,
        "subdomain",
        "networking_v1",
    ),
    _built_in(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "networkpolicies",
        True,
        "subdomain",
        "networking_v1",
    ),
    _built_in(f"{TENANCY_GROUP}/{TENANCY_VERSION}", "Tenant", "tenants", False, "label", "tenancy"),
    _built_in(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        "subdomain",
        "apiextensions_v1",
    ),
    _built_in(
        f"{TENANCY_GROUP}/{TENANCY_VERSION}", "Alert", "alerts", False, "subdomain", "tenancy"
    ),
)
_BY_GVK = {(info.api_version, info.kind): info for info in KINDS}
_BY_SOURCE = {cast(str, info.model_source): info for info in KINDS}
_BY_MODEL: dict[type[ApiModel], KindInfo] = {}

V1BETA_REQUEST_FIELDS = (
    "deviceClassName",
    "selectors",
    "count",
    "allocationMode",
    "adminAccess",
    "tolerations",
    "capacity",
)
SERVED_ELSEWHERE = {
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1alpha3",
}


def kind_info(obj: ApiModel) -> KindInfo:
    model = type(obj)
    info = _BY_MODEL.get(model)
    if info is None:
        info = _BY_SOURCE[f"{model.__module__}:{model.__qualname__}"]
        _BY_MODEL[model] = info
    return info


_CUSTOM_BY_GVK: dict[str, dict[tuple[str, str], KindInfo]] = {}
"""Custom kinds (CRD versions) per cluster: each cluster serves its own CRDs, so two
clusters may define the same group and kind with different schemas."""


def register_kind(cluster: str, info: KindInfo) -> None:
    """Serve a custom kind (a CRD version) in ``cluster``, besides the built-in ones."""
    _CUSTOM_BY_GVK.setdefault(cluster, {})[(info.api_version, info.kind)] = info
    _BY_MODEL[info.model] = info


def unregister_kind(cluster: str, api_version: str, kind: str) -> None:
    kinds = _CUSTOM_BY_GVK.get(cluster, {})
    info = kinds.pop((api_version, kind), None)
    if info is not None:
        _BY_MODEL.pop(info.model, None)
    if not kinds:
        _CUSTOM_BY_GVK.pop(cluster, None)


def custom_kind_clusters() -> list[str]:
    """The clusters that serve at least one custom kind (a removed cluster never does)."""
    return sorted(_CUSTOM_BY_GVK)


def is_builtin(api_version: str, kind: str) -> bool:
    return (api_version, kind) in _BY_GVK


def lookup(api_version: str, kind: str, cluster: str | None = None) -> KindInfo:
    """The served kind: a built-in one, else ``cluster``'s custom kind (None: built-in
    kinds only); UnknownKindError with kubectl's wording."""
    info = _BY_GVK.get((api_version, kind))
    if info is None and cluster is not None:
        info = _CUSTOM_BY_GVK.get(cluster, {}).get((api_version, kind))
    if info is None:
        message = f'no matches for kind "{kind}" in version "{api_version}"'
        if api_version in SERVED_ELSEWHERE:
            message += (
                "; allot serves resource.k8s.io/v1 only (GA since Kubernetes 1.34): "
                "set apiVersion: resource.k8s.io/v1 and move request fields under "
                "'exactly:'"
            )
        raise UnknownKindError(message, api_version=api_version, kind=kind)
    return info


def decode(
    document: Any,
    spec_of: ApiModel | None = None,
    *,
    check_size: bool = True,
    cluster: str | None = None,
) -> ApiModel:
    """Decode one wire document strictly into its model.

    ``spec_of``: a decoded object whose ``spec`` the document is known to carry unchanged
    (a ``/status`` write keeps the stored spec): that spec is taken as it is, shared, not
    decoded again; everything else is decoded (and the size checked) as always.
    ``check_size=False``: the caller does not need the request limit checked here (the
    registry, whose store checks what it stores; documents read back from a cluster).
    ``cluster``: whose custom kinds (CRDs) are known besides the built-in ones."""
    if not isinstance(document, dict):
        raise UnknownKindError(
            "Object 'Kind' is missing in document: not a JSON object", api_version="", kind=""
        )
    kind = document.get("kind")
    api_version = document.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        raise UnknownKindError(
            f"Object 'Kind' is missing in '{_preview(document)}'",
            api_version=str(api_version or ""),
            kind="",
        )
    if not isinstance(api_version, str) or not api_version:
        raise UnknownKindError(
            f"Object 'apiVersion' is missing in '{_preview(document)}'", api_version="", kind=kind
        )
    info = lookup(api_version, kind, cluster)
    if check_size and len(json.dumps(document, separators=(",", ":"), default=str)) > (
        MAX_REQUEST_BODY_BYTES
    ):
        raise ObjectTooLargeError(MAX_REQUEST_BODY_BYTES)
    if info.kind == "Secret" and not info.group:
        _check_secret_data(document, info)
    kept = getattr(spec_of, "spec", None) if "spec" in document else None
    try:
        if kept is not None and type(spec_of) is info.model:
            return info.model.model_validate({**document, "spec": kept})
        return info.model.model_validate(document)
    except ValidationError as err:
        problems = [_describe(error, info) for error in err.errors()]
        raise StrictDecodingError(info.kind, info.version, problems, _hints(err, info)) from None


def _check_secret_data(document: dict[str, Any], info: KindInfo) -> None:
    """A Secret's ``data`` values are base64 (Go ``[]byte``): undecodable text is a decode
    error, as the API server's JSON decoder answers it."""
    data = document.get("data")
    if not isinstance(data, dict):
        return
    from allot.api import core_v1 as corev1  # only Secrets need it (start-up, issue 15)

    for value in data.values():
        problem = corev1.base64_error(value) if isinstance(value, str) else None
        if problem is not None:
            raise DecodeError(
                f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
                f"{problem}"
            )


def _preview(document: dict[str, Any]) -> str:
    text = json.dumps(document, separators=(",", ":"), default=str)
    return text if len(text) <= 200 else text[:200] + "..."


def render_location(location: tuple[int | str, ...]) -> str:
    """pydantic's error location as a Kubernetes field path (``spec.devices[0].name``)."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text = f"{text}.{part}" if text else str(part)
    return text


_JSON_TYPE_NAMES = {
    str: "string",
    int: "number",
    float: "number",
    bool: "bool",
    list: "array",
    dict: "object",
    type(None): "null",
}
_EXPECTED = {
    "int_type": "int64",
    "int_parsing": "int64",
    "int_from_float": "int64",
    "bool_type": "bool",
    "bool_parsing": "bool",
    "string_type": "string",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "datetime_type": "time",
    "datetime_parsing": "time",
    "datetime_from_date_parsing": "time",
}


def _describe(error: Any, info: KindInfo) -> str:
    path = render_location(tuple(error["loc"]))
    if error["type"] == "extra_forbidden":
        return f'unknown field "{path}"'
    expected = _EXPECTED.get(error["type"])
    if expected is not None:
        got = _JSON_TYPE_NAMES.get(type(error.get("input")), "value")
        return (
            f"json: cannot unmarshal {got} into Go struct field {info.kind}.{path} "
            f"of type {expected}"
        )
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    return f"{path}: {message}" if path else message


def _hints(err: ValidationError, info: KindInfo) -> list[str]:
    """Advice for a DRA request written in the v1beta1 shape (fields beside ``name``)."""
    if info.group != "resource.k8s.io":
        return []
    misplaced: dict[str, list[str]] = {}
    for error in err.errors():
        location = tuple(error["loc"])
        if (
            error["type"] == "extra_forbidden"
            and _is_request_level(location)
            and location[-1] in V1BETA_REQUEST_FIELDS
        ):
            misplaced.setdefault(render_location(location[:-1]), []).append(str(location[-1]))
    return [
        f"{request} has the v1beta1 shape: in resource.k8s.io/v1, move "
        f"{', '.join(fields)} under {request}.exactly (or list alternatives under "
        f"{request}.firstAvailable)"
        for request, fields in misplaced.items()
    ]


def _is_request_level(location: tuple[int | str, ...]) -> bool:
    return len(location) >= 4 and location[-3] == "requests" and isinstance(location[-2], int)
