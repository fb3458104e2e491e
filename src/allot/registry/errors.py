"""Errors of the write path a request's content causes, each with its HTTP code and reason.

They derive from :class:`allot.statuses.RequestError`, which ``allot.statuses`` maps to a
``Status`` (the only mapping in the code base). Texts are the upstream API server's. Raised
by the registry's body decoding and patching, and by :mod:`allot.apiserver` for bad query
parameters and bodies.
"""

from __future__ import annotations

from allot.api.meta import StatusCause, StatusDetails
from allot.statuses import RequestError


class BadRequest(RequestError):
    code, reason = 400, "BadRequest"


class UnsupportedMediaType(RequestError):
    code, reason = 415, "UnsupportedMediaType"


class Unprocessable(RequestError):
    code, reason = 422, "Invalid"


class InvalidOptions(Unprocessable):
    """Options of a verb (``ListOptions``, ``CreateOptions``, ...) that do not validate:
    upstream's ``NewInvalid`` of the options kind, one cause per (reason, field, message),
    e.g. ``ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: ...``."""

    def __init__(self, kind: str, errors: list[tuple[str, str, str]]) -> None:
        shown = [f"{field}: {message}" for _, field, message in errors]
        listed = shown[0] if len(shown) == 1 else f"[{', '.join(shown)}]"
        super().__init__(f'{kind}.meta.k8s.io "" is invalid: {listed}')
        self.details = StatusDetails(
            group="meta.k8s.io",
            kind=kind,
            causes=[
                StatusCause(reason=reason, message=message, field=field)
                for reason, field, message in errors
            ],
        )


class TooManyRequests(RequestError):
    code, reason = 429, "TooManyRequests"


class InternalError(RequestError):
    """Upstream answers some conditions it does not support with 500 (an eviction of a
    pod under several disruption budgets); the message says which."""

    code, reason = 500, "InternalError"


class ApplyConflict(RequestError):
    """A server-side apply that would change fields other managers own (409), with a
    ``FieldManagerConflict`` cause per field, as upstream's ``NewApplyConflict``."""

    code, reason = 409, "Conflict"

    def __init__(self, message: str, causes: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.details = StatusDetails(
            causes=[
                StatusCause(reason="FieldManagerConflict", message=text, field=path)
                for text, path in causes
            ]
        )
