"""Errors of the HTTP layer (paths, tokens, methods, sizes, watch slots), with codes.

They derive from :class:`allot.statuses.RequestError`, which ``allot.statuses`` maps to a
``Status`` (the only mapping in the code base). Texts are the upstream API server's.
"""

from __future__ import annotations

from allot.api.meta import StatusDetails
from allot.statuses import RequestError


class NotFoundPath(RequestError):
    """A path that names nothing served. kube-apiserver answers it with empty (not
    absent) ``details``, and clients read them: ``kubectl debug`` tells a missing
    ``ephemeralcontainers`` subresource from a missing pod by an empty ``details.name``,
    and dereferences ``details`` to do so."""

    code, reason = 404, "NotFound"

    def __init__(self) -> None:
        super().__init__("the server could not find the requested resource")
        self.details = StatusDetails()


STREAMING_SUBRESOURCES = ("exec", "attach", "portforward")


class StreamingNotServed(RequestError):
    """``kubectl exec``, ``attach`` and ``port-forward``: allot has no container runtime
    streaming server behind them, so it says so instead of 404 (which kubectl reports as
    ``unable to upgrade connection: the server could not find the requested resource``)."""

    code, reason = 400, "BadRequest"

    def __init__(self, subresource: str) -> None:
        super().__init__(
            f"pods/{subresource} is not served by allot: its container runtimes have no "
            "streaming server (kubectl exec, attach and port-forward); read a container's "
            "output with kubectl logs"
        )


class Unauthorized(RequestError):
    code, reason = 401, "Unauthorized"

    def __init__(self) -> None:
        super().__init__("Unauthorized")


class Forbidden(RequestError):
    code, reason = 403, "Forbidden"


class MethodNotAllowed(RequestError):
    code, reason = 405, "MethodNotAllowed"

    def __init__(self, method: str) -> None:
        super().__init__(
            f"the server does not allow this method on the requested resource ({method})"
        )


class RequestTooLarge(RequestError):
    code, reason = 413, "RequestEntityTooLarge"


class TooManyRequests(RequestError):
    code, reason = 429, "TooManyRequests"

    def __init__(self, message: str, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.details = StatusDetails(retry_after_seconds=retry_after_seconds)
