"""The client protocol's errors, one class per Kubernetes status reason, raised alike by both
implementations.

Class tree::

    ClientError          any refused or failed request; ``status`` is its metav1.Status
    ├── BadRequest       400
    ├── Unauthorized     401
    ├── Forbidden        403 (RBAC, admission; ``missing_rule`` names the RBAC rule)
    ├── NotFound         404
    ├── AlreadyExists    409 reason AlreadyExists
    ├── Conflict         409 (a stale resourceVersion, a server-side apply conflict)
    ├── Gone             410 (a watch asked for history the server no longer keeps)
    ├── Invalid          422 (the field errors are the Status' causes)
    ├── TooManyRequests  429
    └── Unavailable      the server cannot be reached, or answered 5xx

Both implementations build these from a Status (:func:`from_status`): the in-process one
from :func:`allot.statuses.to_status` of the registry's exception, the remote one from the
response body, so a controller sees the same class, reason and message on either engine.
"""

from __future__ import annotations

from typing import Any

Status = dict[str, Any]


class ClientError(Exception):
    code = 0
    reason = ""

    def __init__(self, status: Status) -> None:
        super().__init__(str(status.get("message") or status.get("reason") or "request failed"))
        self.status = status

    @property
    def message(self) -> str:
        return str(self.status.get("message") or "")

    @property
    def causes(self) -> list[dict[str, Any]]:
        return list((self.status.get("details") or {}).get("causes") or [])


class BadRequest(ClientError):
    code, reason = 400, "BadRequest"


class Unauthorized(ClientError):
    code, reason = 401, "Unauthorized"


class Forbidden(ClientError):
    code, reason = 403, "Forbidden"

    def __init__(self, status: Status, rule: RbacRule | None = None) -> None:
        super().__init__(status)
        self.rule = rule
        """The request refused, as an RBAC rule (set by a client that knows what it asked)."""

    def missing_rule(self) -> str:
        """The RBAC rule the refused request needed, worded for a ClusterRole, when the
        refusal is the authorizer's (its message says ``cannot``); "" otherwise (an
        admission plugin's refusal is no missing permission)."""
        if self.rule is None or " cannot " not in self.message:
            return ""
        return self.rule.text()


class NotFound(ClientError):
    code, reason = 404, "NotFound"


class AlreadyExists(ClientError):
    code, reason = 409, "AlreadyExists"


class Conflict(ClientError):
    code, reason = 409, "Conflict"


class Gone(ClientError):
    code, reason = 410, "Expired"


class Invalid(ClientError):
    code, reason = 422, "Invalid"


class TooManyRequests(ClientError):
    code, reason = 429, "TooManyRequests"


class Unavailable(ClientError):
    code, reason = 503, "ServiceUnavailable"


REFUSED: tuple[type[ClientError], ...] = (BadRequest, Forbidden, Invalid)
"""A write the server judged and refused (validation, an admission plugin or policy, a
quota), as against one that could not be made (gone, a conflict, the server away)."""


class RbacRule:
    """One request as the RBAC rule that allows it: verb, API group, resource (with its
    subresource), namespace (None: cluster-wide)."""

    def __init__(self, verb: str, group: str, resource: str, namespace: str | None) -> None:
        self.verb = verb
        self.group = group
        self.resource = resource
        self.namespace = namespace

    def text(self) -> str:
        where = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return (
            f'missing RBAC rule: apiGroups: ["{self.group}"], resources: ["{self.resource}"], '
            f'verbs: ["{self.verb}"] ({where})'
        )


_BY_REASON: dict[str, type[ClientError]] = {
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Expired": Gone,
    "Gone": Gone,
    "Invalid": Invalid,
    "NotFound": NotFound,
    "Forbidden": Forbidden,
    "Unauthorized": Unauthorized,
    "TooManyRequests": TooManyRequests,
}
_BY_CODE: dict[int, type[ClientError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def from_status(status: Status, rule: RbacRule | None = None) -> ClientError:
    """The error a Status stands for: by its reason, else its code (5xx and no code:
    :class:`Unavailable`; any other 4xx: :class:`BadRequest`)."""
    code = int(status.get("code") or 0)
    cls = _BY_REASON.get(str(status.get("reason") or ""))
    if cls is None or (cls.code and code and cls.code != code):
        cls = _BY_CODE.get(code) or (BadRequest if 400 <= code < 500 else Unavailable)
    if cls is Forbidden:
        return Forbidden(status, rule)
    return cls(status)


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> Status:
    """A metav1.Status as the API server writes one (for errors no server answered)."""
    found: Status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        found["details"] = details
    return found


def unavailable(message: str) -> Unavailable:
    return Unavailable(status(0, "ServiceUnavailable", message))
