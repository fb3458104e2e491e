"""Errors of cluster access, wrapping the official client's ``ApiException``.

Class tree::

    KubeError            any failed request (``status`` is the HTTP code, 0 if none)
    ├── KubeNotFound     404
    └── KubeConflict     409 (AlreadyExists or a stale resourceVersion)

Messages carry the Status ``message`` from the server, truncated, never the raw body.
"""

from __future__ import annotations

from typing import Any


class KubeError(Exception):
    def __init__(self, message: str, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.status_body: dict[str, Any] | None = None
        """The server's whole Status document, when it answered one."""


class KubeNotFound(KubeError):
    pass


class KubeConflict(KubeError):
    pass
