"""The one place where allot's exceptions become Kubernetes ``metav1.Status`` objects.

Every error a user sees, from ``allot validate``, the CLI and the API server alike, is a
``Status`` with ``reason``, ``message``, ``code`` and, for invalid objects, one cause per
field error, exactly as the Kubernetes API server writes them. allot's own advice (the
v1beta1-shape hint, for instance) travels as extra causes with reason ``Hint`` so that the
upstream ``message`` stays byte-identical. Mapping is by exception class (walking the MRO),
so a new subclass inherits its parent's mapping.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from allot.api.errors import (
    ApiError,
    DecodeError,
    ObjectTooLargeError,
    StrictDecodingError,
    UnknownKindError,
)
from allot.api.kinds import KindInfo
from allot.api.meta import Status, StatusCause, StatusDetails
from allot.store import errors as storeerrors
from allot.validation.field import FieldError

HINT_REASON = "Hint"


class RequestError(Exception):
    """Base of request-level errors raised above this layer (the API server's own).

    Subclasses set ``code`` and ``reason``; this module maps them generically, so the API
    server defines its errors without a second mapping.
    """

    code = 400
    reason = "BadRequest"
    details: StatusDetails | None = None


class InvalidObjectError(Exception):
    """Validation failed; carries the field errors and the object's identity."""

    def __init__(self, info: KindInfo, name: str, errors: list[FieldError]) -> None:
        super().__init__(invalid_message(info, name, errors))
        self.info = info
        self.name = name
        self.errors = errors


def invalid_message(info: KindInfo, name: str, errors: list[FieldError]) -> str:
    texts = list(dict.fromkeys(str(error) for error in errors))  # ToAggregate drops repeats
    body = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return f'{info.qualified_kind} "{name}" is invalid: {body}'


_QUANTITY_OPERATOR = re.compile(
    r"found no matching overload for '_(>=|>|<=|<)_' applied to "
    r"'\(kubernetes\.Quantity, kubernetes\.Quantity\)'"
)
_QUANTITY_ADVICE = {
    ">=": "a.compareTo(b) >= 0",
    ">": "a.isGreaterThan(b)",
    "<=": "a.compareTo(b) <= 0",
    "<": "a.isLessThan(b)",
}


def field_hints(errors: list[FieldError]) -> list[tuple[str, str]]:
    """allot's advice, as (field path, advice), for field errors whose upstream text leaves
    users guessing."""
    found: list[tuple[str, str]] = []
    for error in errors:
        match = _QUANTITY_OPERATOR.search(error.detail)
        if match:
            operator = match.group(1)
            found.append(
                (
                    str(error.path),
                    f"Quantities cannot be compared with '{operator}' in CEL; write "
                    f"{_QUANTITY_ADVICE[operator]}, e.g. "
                    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
                )
            )
    return found


def _invalid(err: Exception) -> Status:
    assert isinstance(err, InvalidObjectError)
    causes = [
        StatusCause(reason=e.type.reason, message=e.body(), field=str(e.path)) for e in err.errors
    ]
    causes += [  # kubectl prints each cause as "FIELD: MESSAGE", so this reads "F: hint: ..."
        StatusCause(reason=HINT_REASON, field=path, message=f"hint: {advice}")
        for path, advice in field_hints(err.errors)
    ]
    return Status(
        status="Failure",
        message=str(err),
        reason="Invalid",
        code=422,
        details=StatusDetails(
            name=err.name, group=err.info.group or None, kind=err.info.kind, causes=causes
        ),
    )


def _strict(err: Exception) -> Status:
    assert isinstance(err, StrictDecodingError)
    causes = [StatusCause(reason=HINT_REASON, message=hint) for hint in err.hints]
    return Status(
        status="Failure",
        message=str(err),
        reason="BadRequest",
        code=400,
        details=StatusDetails(causes=causes) if causes else None,
    )


def _bad_request(err: Exception) -> Status:
    return Status(status="Failure", message=str(err), reason="BadRequest", code=400)


def _unknown_kind(err: Exception) -> Status:
    assert isinstance(err, UnknownKindError)
    return Status(
        status="Failure",
        message=str(err),
        reason="NotFound",
        code=404,
        details=StatusDetails(kind=err.kind or None),
    )


def _request(err: Exception) -> Status:
    assert isinstance(err, RequestError)
    return Status(
        status="Failure", message=str(err), reason=err.reason, code=err.code, details=err.details
    )


def _store(reason: str, code: int) -> Callable[[Exception], Status]:
    def mapper(err: Exception) -> Status:
        assert isinstance(err, storeerrors.StoreError)
        details = None
        if err.name or err.plural:
            details = StatusDetails(
                name=err.name or None, group=err.group or None, kind=err.plural or None
            )
        return Status(status="Failure", message=str(err), reason=reason, code=code, details=details)

    return mapper


def _namespace_terminating(err: Exception) -> Status:
    assert isinstance(err, storeerrors.NamespaceTerminating)
    cause = StatusCause(
        reason="NamespaceTerminating",
        message=f"namespace {err.namespace} is being terminated",
        field="metadata.namespace",
    )
    details = StatusDetails(
        name=err.name or None, group=err.group or None, kind=err.plural or None, causes=[cause]
    )
    return Status(status="Failure", message=str(err), reason="Forbidden", code=403, details=details)


def _unwritable(err: Exception) -> Status:
    """The store could not write (a full disk): upstream answers etcd's ``database space
    exceeded`` as an internal error (500, ``Internal error occurred: etcdserver: mvcc:
    database space exceeded``), and so does allot, naming what is full instead. 500 rather
    than 507, which no Kubernetes client knows: kubectl prints ``Error from server
    (InternalError): Internal error occurred: the platform's disk is full``."""
    assert isinstance(err, storeerrors.Unwritable)
    remedy = (
        "free space on the filesystem of its data directory"
        if isinstance(err, storeerrors.DiskFull)
        else "see the platform's log for the error"
    )
    hint = StatusCause(
        reason=HINT_REASON,
        message=f"hint: nothing of this request was stored and reads still work; the "
        f"platform's owner must {remedy}",
    )
    return Status(
        status="Failure",
        message=f"Internal error occurred: {err}",
        reason="InternalError",
        code=500,
        details=StatusDetails(causes=[StatusCause(message=str(err)), hint]),
    )


def _too_large(err: Exception) -> Status:
    return Status(status="Failure", message=str(err), reason="RequestEntityTooLarge", code=413)


_MAPPERS: dict[type[Exception], Callable[[Exception], Status]] = {
    RequestError: _request,
    storeerrors.NotFound: _store("NotFound", 404),
    storeerrors.AlreadyExists: _store("AlreadyExists", 409),
    storeerrors.Conflict: _store("Conflict", 409),
    storeerrors.Expired: _store("Expired", 410),
    storeerrors.BadRequest: _store("BadRequest", 400),
    storeerrors.TooLarge: _too_large,
    storeerrors.NamespaceTerminating: _namespace_terminating,
    storeerrors.Unwritable: _unwritable,
    ObjectTooLargeError: _too_large,
    InvalidObjectError: _invalid,
    StrictDecodingError: _strict,
    UnknownKindError: _unknown_kind,
    DecodeError: _bad_request,
    ApiError: _bad_request,
}
_MAPPED = tuple(_MAPPERS)


def maps(err: BaseException) -> bool:
    """Whether ``err`` is one of the API's refusals (a class mapped here), not a bug."""
    return isinstance(err, _MAPPED)


def to_status(err: Exception) -> Status:
    """The ``Status`` for ``err``; unknown exceptions become a 500 InternalError."""
    for cls in type(err).__mro__:
        mapper = _MAPPERS.get(cls)
        if mapper is not None:
            return mapper(err)
    return Status(
        status="Failure",
        reason="InternalError",
        code=500,
        message=f"Internal error occurred: {err}",
    )


def hints(status: Status) -> list[str]:
    causes = status.details.causes if status.details and status.details.causes else []
    return [_hint_text(c) for c in causes if c.reason == HINT_REASON]


def without_hints(status: Status) -> tuple[Status, list[str]]:
    """The Status as kube-apiserver would send it (no ``Hint`` causes) and the hints, which
    the API server sends as ``Warning`` headers instead: kubectl prints every warning as
    ``Warning: ...``, also beside an error, where ``kubectl apply`` prints no cause."""
    advice = hints(status)
    if not advice or status.details is None:
        return status, advice
    kept = [c for c in status.details.causes or [] if c.reason != HINT_REASON]
    details: StatusDetails | None = status.details.model_copy(update={"causes": kept or None})
    if details == StatusDetails():  # only there for the hints (a strict decoding error)
        details = None
    return status.model_copy(update={"details": details}), advice


def _hint_text(cause: StatusCause) -> str:
    message = (cause.message or "").removeprefix("hint: ")
    return f"{cause.field}: {message}" if cause.field else message
