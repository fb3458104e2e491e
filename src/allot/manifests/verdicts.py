"""Judging manifests as the API server would on create, and printing like kubectl.

For every document: decode strictly, apply defaults, validate (with Namespaces from the same
input supplying the admin-access label, and its DeviceClasses, when there are any, the
catalogue a fair-sharing Tenant's shares must name), and record a :class:`Verdict` holding
either the accepted object or the ``Status`` the API server would return. What the API server does
to a new object before validating it is done too (a Job's generated selector, with a
placeholder uid; a Service's cluster IP). Kinds that Kubernetes serves but allot does not
(LimitRanges, PodTemplates...) are reported as skipped, not failed.
Called by ``allot validate`` and ``make demo``.
"""

from __future__ import annotations

import copy
import enum
from dataclasses import dataclass
from typing import Any

from allot.api.base import ApiModel
from allot.api.errors import ApiError
from allot.api.kinds import decode, is_builtin, kind_info, lookup
from allot.api.meta import Status
from allot.cel import SelectorCompiler
from allot.manifests.documents import Document
from allot.registry.kinds import Preparation, find_strategy, rules_for
from allot.statuses import InvalidObjectError, hints, to_status
from allot.validation.field import ErrorList
from allot.validation.objects import apply_defaults, validate_create
from allot.validation.resource import ResourceContext

UPSTREAM_GROUPS_NOT_SERVED = (
    "networking.k8s.io/",
    "autoscaling/",
    "storage.k8s.io/",
    "scheduling.k8s.io/",
)
UPSTREAM_CORE_KINDS_NOT_SERVED = (
    "PersistentVolume",
    "PersistentVolumeClaim",
    "LimitRange",
    "ResourceQuota",
    "ReplicationController",
)


class Outcome(enum.Enum):
    VALID = "valid"
    INVALID = "invalid"
    SKIPPED = "skipped"


@dataclass
class Verdict:
    document: Document
    outcome: Outcome
    summary: str  # "deviceclass.resource.k8s.io/gpu-whole" or "apps/v1 Deployment x"
    status: Status | None = None
    obj: ApiModel | None = None

    def render(self) -> str:
        """The lines kubectl would print for this document (plus allot's hints)."""
        if self.outcome is Outcome.VALID:
            return f"{self.summary} valid"
        if self.outcome is Outcome.SKIPPED:
            return (
                f"{self.summary} skipped: not a kind allot serves (Kubernetes would "
                "validate it with its own controllers)"
            )
        return _render_failure(self)


def judge(documents: list[Document], compiler: SelectorCompiler | None = None) -> list[Verdict]:
    compiler = compiler or SelectorCompiler()
    namespaces = _namespace_labels(documents)
    context = ResourceContext(
        compiler=compiler, namespace_labels=namespaces.get if namespaces else None
    )
    catalogue = _catalogue(documents)
    return [_judge_one(document, context, catalogue) for document in documents]


def _catalogue(documents: list[Document]) -> dict[str, Any]:
    """DeviceClass name -> labels, from the input (empty: the catalogue is unknown)."""
    found: dict[str, Any] = {}
    for document in documents:
        content = document.content
        metadata = content.get("metadata")
        if content.get("kind") == "DeviceClass" and isinstance(metadata, dict):
            found[str(metadata.get("name"))] = metadata.get("labels")
    return found


def _namespace_labels(documents: list[Document]) -> dict[str, dict[str, str]]:
    labels: dict[str, dict[str, str]] = {}
    for document in documents:
        content = document.content
        if content.get("kind") == "Namespace" and content.get("apiVersion") == "v1":
            metadata = content.get("metadata") or {}
            if isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
                labels[metadata["name"]] = dict(metadata.get("labels") or {})
    return labels


def _judge_one(document: Document, context: ResourceContext, catalogue: dict[str, Any]) -> Verdict:
    content = document.content
    api_version = str(content.get("apiVersion", ""))
    kind = str(content.get("kind", ""))
    name = _name_of(content)
    if _is_upstream_kind_not_served(api_version, kind):
        return Verdict(document, Outcome.SKIPPED, f"{api_version} {kind} {name}".strip())
    try:
        obj = decode(_prepared(content))
    except (ApiError, InvalidObjectError) as err:
        return Verdict(document, Outcome.INVALID, f"{kind} {name}".strip(), to_status(err))
    info = kind_info(obj)
    metadata = getattr(obj, "metadata", None)
    if info.namespaced and metadata is not None and not metadata.namespace:
        metadata.namespace = "default"
    rules = rules_for(obj)
    apply_defaults(obj, rules)
    summary = (
        f"{info.kind.lower()}.{info.group}/{name}" if info.group else f"{info.kind.lower()}/{name}"
    )
    errors = validate_create(obj, context, rules)
    if not errors and catalogue and info.kind == "Tenant":
        errors = _sharing_errors(obj, catalogue)
    if errors:
        status = to_status(InvalidObjectError(info, name, errors))
        return Verdict(document, Outcome.INVALID, summary, status, obj)
    return Verdict(document, Outcome.VALID, summary, None, obj)


def _sharing_errors(obj: ApiModel, catalogue: dict[str, Any]) -> ErrorList:
    """A fair-sharing Tenant's shares against the input's DeviceClasses. The tenancy model
    and rules are imported here: only a Tenant needs them (start-up, issue 15)."""
    from allot.api.tenancy import Tenant
    from allot.validation.tenancy import validate_sharing_classes

    return validate_sharing_classes(obj, catalogue) if isinstance(obj, Tenant) else []


DRY_RUN_UID = "00000000-0000-4000-8000-000000000000"
"""The uid a document judged offline is prepared with (upstream's dry run assigns one)."""


def _prepared(content: dict[str, Any]) -> dict[str, Any]:
    """The document as the kind's ``prepare_create`` leaves it (a copy)."""
    served = _served_kind(content)
    known = find_strategy(served) if served else None
    if known is None or known.prepare_create is None:
        return content
    prepared = copy.deepcopy(content)
    known.prepare_create(prepared, Preparation(lambda: DRY_RUN_UID, list))
    return prepared


def _served_kind(content: dict[str, Any]) -> str | None:
    try:
        return lookup(str(content.get("apiVersion")), str(content.get("kind"))).kind
    except ApiError:
        return None


def _name_of(content: dict[str, object]) -> str:
    metadata = content.get("metadata")
    if isinstance(metadata, dict):
        name = metadata.get("name") or metadata.get("generateName")
        if isinstance(name, str):
            return name
    return ""


def _is_upstream_kind_not_served(api_version: str, kind: str) -> bool:
    if is_builtin(api_version, kind):  # served although its group is not all served
        return False
    if api_version.startswith(UPSTREAM_GROUPS_NOT_SERVED):
        return True
    return api_version == "v1" and kind in UPSTREAM_CORE_KINDS_NOT_SERVED


def _render_failure(verdict: Verdict) -> str:
    status = verdict.status or Status()
    source = verdict.document.source
    if status.reason == "Invalid" and status.details is not None:
        causes = [c for c in status.details.causes or [] if c.reason != "Hint"]
        kind = status.details.kind or ""
        header = f'The {kind} "{status.details.name}" is invalid: '
        if len(causes) == 1:
            lines = [header + f"{causes[0].field}: {causes[0].message}"]
        else:
            lines = [header] + [f"* {c.field}: {c.message}" for c in causes]
    elif status.reason == "NotFound":
        lines = [
            f'error: resource mapping not found for name: "{_name_of(verdict.document.content)}"'
            f' namespace: "" from "{source}": {status.message}'
        ]
    else:
        lines = [
            f'Error from server ({status.reason}): error when creating "{source}": {status.message}'
        ]
    lines += [f"  hint: {hint}" for hint in hints(status)]
    return "\n".join(lines)
