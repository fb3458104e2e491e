"""The Kubernetes API at the root of the address, for the cluster a request's token names.

Every cluster is served below ``/clusters/<name>`` and its kubeconfig's ``server`` carries
that path, which clients honour, all but ``kubectl proxy``: by default it forwards
``/api/...`` to the server's address without the path (its ``--append-server-path`` is
off), as a kube-apiserver or a vCluster answers at the root of its own address. So a
request for the API's own paths (``/api``, ``/apis``, ``/version``, ``/openapi``) at the
root is served as the same path of the cluster its bearer token belongs to (a cluster's
own token or one of its ServiceAccount tokens): a token names exactly one cluster, so this
reaches nothing that cluster's prefix does not. Without a token that names a cluster such
a path stays unrouted (404). Wraps the application that
:class:`allot.apiserver.app.ApiServer` builds; used by :mod:`allot.apiserver.server`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

API_ROOTS = ("/api", "/apis", "/version", "/openapi")


def is_api_path(path: str) -> bool:
    """``/api``, ``/apis``, ``/version``, ``/openapi`` or a path below one of them."""
    return any(path == root or path.startswith(f"{root}/") for root in API_ROOTS)


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str:
    """The request's bearer token ("" without one)."""
    for name, value in headers:
        if name.lower() == b"authorization":
            text = value.decode("latin-1")
            return text[7:].strip() if text.lower().startswith("bearer ") else ""
    return ""


class TokenRouted:
    """``app`` with the API's root paths sent to the cluster of the request's token."""

    def __init__(self, app: ASGIApp, cluster_for: Callable[[str], str | None]) -> None:
        self.app = app
        self.cluster_for = cluster_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_api_path(scope["path"]):
            token = bearer_token(scope.get("headers") or [])
            cluster = self.cluster_for(token) if token else None
            if cluster is not None:
                scope = _below(scope, f"/clusters/{cluster}")
        await self.app(scope, receive, send)


def _below(scope: Scope, prefix: str) -> dict[str, Any]:
    """The request as if it had been sent below ``prefix`` (a cluster's name is a DNS
    label: nothing in it needs encoding)."""
    raw = scope.get("raw_path") or scope["path"].encode()
    return {**scope, "path": prefix + scope["path"], "raw_path": prefix.encode() + raw}
