"""The admission chain every write passes: decode, default, validate, then admission hooks.

``fieldValidation`` follows the API server: ``Strict`` rejects unknown fields with the
strict-decoding error, ``Warn`` (the server default) drops them and returns warnings,
``Ignore`` drops them silently. Defaulting and validation are ``allot.validation``'s.
Deleting ``default``, ``kube-system`` or ``kube-public`` is refused first, as the
NamespaceLifecycle plugin built into kube-apiserver refuses it. Then the plugins run in
the order the platform assembled them (:meth:`AdmissionChain.assemble`: the tenant guard,
ValidatingAdmissionPolicy, ResourceQuota, the catalogue's warnings, the revoked-class
re-check); each sees the decoded object and may raise
:class:`AdmissionDenied`; a rejected write changes nothing. Called by the handlers.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from allot.api.base import ApiModel
from allot.api.costs import COSTS
from allot.api.errors import StrictDecodingError
from allot.api.kinds import decode, render_location
from allot.api.meta import StatusCause, StatusDetails
from allot.cel import SelectorCompiler
from allot.managedfields import fieldpaths
from allot.registry.kinds import rules_for
from allot.registry.resources import ServedResource
from allot.statuses import InvalidObjectError, RequestError
from allot.validation.objects import (
    apply_defaults,
    validate_create,
    validate_status_update,
    validate_update,
)
from allot.validation.resource import ResourceContext


class Operation(enum.Enum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"


CONTROLLER_USER = "system:allot:controller"
"""The user of writes the platform's controllers make; HTTP requests carry the token's."""
REASON_CODES = {"Unauthorized": 401, "Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413}


class AdmissionDenied(RequestError):
    """An admission plugin refused the request, worded as the API server's
    ``admission.NewForbidden``: ``<resource> "<name>" is forbidden: <cause>``; ``reason``
    decides the HTTP code (a policy's validation reason, Forbidden for quota)."""

    def __init__(
        self, resource: ServedResource, name: str, cause: str, reason: str = "Forbidden"
    ) -> None:
        super().__init__(f'{resource.info.qualified_resource} "{name}" is forbidden: {cause}')
        self.cause = cause
        self.reason = reason
        self.code = REASON_CODES.get(reason, 400)
        self.details = StatusDetails(
            name=name or None,
            group=resource.group or None,
            kind=resource.plural,
            causes=[StatusCause(message=cause)],
        )


@dataclass
class AdmissionRequest:
    cluster: str
    operation: Operation
    resource: ServedResource
    subresource: str
    namespace: str
    name: str
    object: ApiModel | None
    old_object: ApiModel | None
    dry_run: bool = False
    user: str = CONTROLLER_USER
    groups: tuple[str, ...] | None = None
    """The groups of the user of an HTTP request; None for the platform's own writes."""
    with_status: bool = False
    """An update of the object that writes its status too (a controller's one write of
    both): validated as an update and as a status update."""
    completed: list[tuple[str, ...]] = field(default_factory=list)
    """The field paths (:mod:`allot.managedfields.fieldpaths`) mutating plugins set on the
    object: no manager owns them, as upstream's field manager records a write before
    mutating admission runs."""

    def completes(self, *names: str, item: Any = None) -> None:
        """A mutating plugin set the field at ``names`` (or added ``item`` to the set
        there) that the request left out."""
        path = tuple(fieldpaths.field(name) for name in names)
        self.completed.append(path if item is None else (*path, fieldpaths.value_element(item)))

    @property
    def internal(self) -> bool:
        """Made by the platform's own controllers, not through HTTP."""
        return self.user == CONTROLLER_USER


IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
"""What the NamespaceLifecycle admission plugin never lets go (``kube-node-lease`` may)."""


def _refuse_immortal_namespace(request: AdmissionRequest) -> None:
    """NamespaceLifecycle: ``kubectl delete ns default`` (every user, every cluster) is
    403 ``namespaces "default" is forbidden: this namespace may not be deleted``."""
    if (
        request.operation is Operation.DELETE
        and not request.subresource
        and request.resource.kind == "Namespace"
        and request.name in IMMORTAL_NAMESPACES
    ):
        raise AdmissionDenied(request.resource, request.name, "this namespace may not be deleted")


class AdmissionHook(Protocol):
    def admit(self, request: AdmissionRequest) -> list[str]:
        """Return warnings, or raise AdmissionDenied."""


@runtime_checkable
class StaticRefusals(Protocol):
    """A plugin that refuses some writes whatever the object (a kind a cluster may not
    write at all), and can say so before any object exists: for access reviews."""

    def forbids(self, cluster: str, resource: ServedResource, subresource: str) -> str | None:
        """Why any write of ``resource`` (``subresource``) in ``cluster`` is refused."""


@dataclass
class AdmissionChain:
    namespace_labels: Callable[[str, str], dict[str, str] | None]
    compiler: SelectorCompiler = field(default_factory=SelectorCompiler)
    hooks: list[AdmissionHook] = field(default_factory=list)

    def assemble(self, plugins: Sequence[AdmissionHook]) -> None:
        """Set the plugins every admitted write passes, in order (the platform's one place
        that decides the chain)."""
        self.hooks = list(plugins)

    def decode(
        self, cluster: str, body: dict[str, Any], mode: str, spec_of: ApiModel | None = None
    ) -> tuple[ApiModel, list[str]]:
        """Decode honouring ``fieldValidation``; returns the object and warnings.
        ``cluster``: whose custom kinds the body may be of. ``spec_of``: the decoded object
        whose spec ``body`` carries unchanged (not decoded again, see
        :func:`allot.api.kinds.decode`)."""
        try:  # the store checks the size
            return decode(body, spec_of, check_size=False, cluster=cluster), []
        except StrictDecodingError as err:
            unknown = [p for p in err.problems if p.startswith("unknown field ")]
            if mode == "Strict" or len(unknown) != len(err.problems):
                raise
            info_model = _model_for(cluster, body)
            cleaned = strip_unknown(info_model, body) if info_model else body
            warnings = [] if mode == "Ignore" else [*unknown, *err.hints]
            return decode(cleaned, check_size=False, cluster=cluster), warnings

    def forbids(self, cluster: str, resource: ServedResource, subresource: str) -> str | None:
        """Why every write of ``resource`` in ``cluster`` would be refused, whatever the
        object (the first plugin's answer that has one), or None: what a
        SelfSubjectAccessReview answers for the write verbs."""
        for hook in self.hooks:
            if isinstance(hook, StaticRefusals):
                refusal = hook.forbids(cluster, resource, subresource)
                if refusal is not None:
                    return refusal
        return None

    def admit(self, request: AdmissionRequest) -> list[str]:
        COSTS.admitted(request.cluster, request.resource.store.key, request.subresource)
        _refuse_immortal_namespace(request)
        obj = request.object
        context = ResourceContext(
            compiler=self.compiler,
            namespace_labels=lambda ns: self.namespace_labels(request.cluster, ns),
        )
        if obj is not None:
            errors = self._validate(request, obj, context)
            if errors:
                raise InvalidObjectError(request.resource.info, request.name, errors)
        warnings: list[str] = []
        for hook in self.hooks:
            warnings += hook.admit(request)
        return warnings

    @staticmethod
    def _validate(request: AdmissionRequest, obj: ApiModel, context: ResourceContext) -> list[Any]:
        rules = rules_for(obj)
        apply_defaults(obj, rules)  # as decoding does for every write: a re-apply is equal
        if request.operation is Operation.CREATE:
            return validate_create(obj, context, rules)
        if request.old_object is None:
            return []
        if request.subresource == "status":
            return validate_status_update(obj, request.old_object, context, rules)
        errors = validate_update(obj, request.old_object, context, rules)
        if request.with_status:
            texts = {str(error) for error in errors}
            more = validate_status_update(obj, request.old_object, context, rules)
            errors += [error for error in more if str(error) not in texts]
        return errors


def _model_for(cluster: str, body: dict[str, Any]) -> type[BaseModel] | None:
    from allot.api.kinds import lookup

    try:
        return lookup(str(body.get("apiVersion")), str(body.get("kind")), cluster).model
    except Exception:
        return None


def strip_unknown(model: type[BaseModel], data: Any) -> Any:
    """``data`` without the fields ``model`` does not know (for Warn/Ignore)."""
    if not isinstance(data, dict):
        return data
    fields = {(info.alias or name): info for name, info in model.model_fields.items()}
    cleaned = {}
    for key, value in data.items():
        info = fields.get(key)
        if info is None:
            continue
        cleaned[key] = _strip_value(info.annotation, value)
    return cleaned


def _strip_value(annotation: Any, value: Any) -> Any:
    models = [a for a in _flatten(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
    if not models:
        return value
    target = models[0]
    if isinstance(value, list):
        return [strip_unknown(target, item) for item in value]
    if isinstance(value, dict) and _is_map(annotation):
        return {k: strip_unknown(target, v) for k, v in value.items()}
    return strip_unknown(target, value)


def _flatten(annotation: Any) -> list[Any]:
    found = [annotation]
    for argument in getattr(annotation, "__args__", ()) or ():
        found += _flatten(argument)
    for argument in getattr(annotation, "__metadata__", ()) or ():
        del argument
    origin = getattr(annotation, "__origin__", None)
    if origin is not None and hasattr(annotation, "__metadata__"):
        found += _flatten(origin)
    return found


def _is_map(annotation: Any) -> bool:
    return any(getattr(a, "__origin__", None) is dict for a in _flatten(annotation))


def warning_header(warnings: list[str]) -> list[tuple[str, str]]:
    """RFC 7234 ``Warning`` values as kube-apiserver writes them (``299 - "text"``, quotes
    and backslashes escaped), the text's UTF-8 bytes passed through unchanged."""
    return [("Warning", f'299 - "{_quoted(w)}"') for w in dict.fromkeys(warnings)]


def _quoted(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return escaped.encode("utf-8").decode("latin-1")


def describe_location(location: tuple[int | str, ...]) -> str:
    return render_location(location)
