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
