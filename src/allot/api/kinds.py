"""The kinds allot serves, and strict decoding of wire documents into them.

One table says, per kind, its group/version, plural resource name, scope, name rule and
model. :func:`decode` turns a parsed JSON/YAML document into a model the way the API
server's strict decoder does: unknown fields become ``unknown field "spec.foo"`` (all of
them, in document order), wrongly typed values name the field and the expected type, and
a v1beta1-shaped DRA request under ``resource.k8s.io/v1`` gets a hint on how to fix it.
Used by the manifests layer, the API server and the tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from allot.api import admission_v1 as admissionapi
from allot.api import apiextensions_v1 as extensionsapi
from allot.api import apps_v1 as appsapi
from allot.api import batch_v1 as batchapi
from allot.api import core_v1 as corev1
from allot.api import resource_v1 as resourceapi
from allot.api import tenancy
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
    name_rule: str  # "subdomain" or "label"
    model: type[ApiModel]

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


KINDS: tuple[KindInfo, ...] = (
    KindInfo(
        "resource.k8s.io",
        "v1",
        "DeviceClass",
        "deviceclasses",
        False,
        "subdomain",
        resourceapi.DeviceClass,
    ),
    KindInfo(
        "resource.k8s.io",
        "v1",
        "ResourceSlice",
        "resourceslices",
        False,
        "subdomain",
        resourceapi.ResourceSlice,
    ),
    KindInfo(
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        "resourceclaims",
        True,
        "subdomain",
        resourceapi.ResourceClaim,
    ),
    KindInfo(
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        True,
        "subdomain",
        resourceapi.ResourceClaimTemplate,
    ),
    KindInfo("", "v1", "Pod", "pods", True, "subdomain", corev1.Pod),
    KindInfo("", "v1", "Node", "nodes", False, "subdomain", corev1.Node),
    KindInfo("", "v1", "Namespace", "namespaces", False, "label", corev1.Namespace),
    KindInfo("", "v1", "Event", "events", True, "subdomain", corev1.Event),
    KindInfo("", "v1", "ConfigMap", "configmaps", True, "subdomain", corev1.ConfigMap),
    KindInfo("", "v1", "ResourceQuota", "resourcequotas", True, "subdomain", corev1.ResourceQuota),
    KindInfo("", "v1", "Service", "services", True, "label", corev1.Service),
    KindInfo(
        "", "v1", "ServiceAccount", "serviceaccounts", True, "subdomain", corev1.ServiceAccount
    ),
    KindInfo("", "v1", "Secret", "secrets", True, "subdomain", corev1.Secret),
    KindInfo("apps", "v1", "Deployment", "deployments", True, "subdomain", appsapi.Deployment),
    KindInfo("apps", "v1", "ReplicaSet", "replicasets", True, "subdomain", appsapi.ReplicaSet),
    KindInfo("apps", "v1", "StatefulSet", "statefulsets", True, "label", appsapi.StatefulSet),
    KindInfo(
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        True,
        "subdomain",
        appsapi.ControllerRevision,
    ),
    KindInfo("batch", "v1", "Job", "jobs", True, "subdomain", batchapi.Job),
    KindInfo("batch", "v1", "CronJob", "cronjobs", True, "subdomain", batchapi.CronJob),
    KindInfo(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        False,
        "subdomain",
        admissionapi.ValidatingAdmissionPolicy,
    ),
    KindInfo(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        False,
        "subdomain",
        admissionapi.ValidatingAdmissionPolicyBinding,
    ),
    KindInfo(
        tenancy.TENANCY_GROUP,
        tenancy.TENANCY_VERSION,
        "Tenant",
        "tenants",
        False,
        "label",
        tenancy.Tenant,
    ),
    KindInfo(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        "subdomain",
        extensionsapi.CustomResourceDefinition,
    ),
    KindInfo(
        tenancy.TENANCY_GROUP,
        tenancy.TENANCY_VERSION,
        "Alert",
        "alerts",
        False,
        "subdomain",
        tenancy.Alert,
    ),
)
_BY_GVK = {(info.api_version, info.kind): info for info in KINDS}
_BY_MODEL = {info.model: info for info in KINDS}

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
    return _BY_MODEL[type(obj)]


def register_kind(info: KindInfo) -> None:
    """Serve a custom kind (a CRD version) besides the built-in ones."""
    _BY_GVK[(info.api_version, info.kind)] = info
    _BY_MODEL[info.model] = info


def unregister_kind(api_version: str, kind: str) -> None:
    info = _BY_GVK.get((api_version, kind))
    if info is not None and info not in KINDS:
        del _BY_GVK[(api_version, kind)]
        _BY_MODEL.pop(info.model, None)


def is_builtin(api_version: str, kind: str) -> bool:
    info = _BY_GVK.get((api_version, kind))
    return info is not None and info in KINDS


def lookup(api_version: str, kind: str) -> KindInfo:
    """The served kind, or UnknownKindError with kubectl's wording."""
    info = _BY_GVK.get((api_version, kind))
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


def decode(document: Any) -> ApiModel:
    """Decode one wire document strictly into its model."""
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
    info = lookup(api_version, kind)
    if len(json.dumps(document, separators=(",", ":"), default=str)) > MAX_REQUEST_BODY_BYTES:
        raise ObjectTooLargeError(MAX_REQUEST_BODY_BYTES)
    if info.model is corev1.Secret:
        _check_secret_data(document, info)
    try:
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
