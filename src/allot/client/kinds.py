"""Kinds as the client protocol names them: by ``kind``, with ``apiVersion`` where needed.

:func:`builtin` answers from allot's table of served kinds (:mod:`allot.api.kinds`), whose
kind names are unique, so ``"Pod"`` or ``"ResourceClaim"`` alone names one; a kind the table
lacks (a custom resource, or a built-in name in another group) needs its ``api_version``
and is resolved by each implementation (the in-process registry's custom kinds, the remote
server's discovery). :class:`KindRef` carries what both need: the path parts and the
storage key that watch events name.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from allot.api.kinds import KINDS


@dataclass(frozen=True)
class KindRef:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def resource(self) -> str:
        """The storage key (``pods``, ``resourceclaims.resource.k8s.io``): what watch
        events and dispatcher subscriptions name."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None, name: str | None = None, subresource: str = "") -> str:
        """The REST path of a collection (``name`` None) or an object."""
        base = f"/apis/{self.api_version}" if self.group else f"/api/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        path = f"{base}/{self.plural}"
        if name:
            path += f"/{name}"
        if subresource:
            path += f"/{subresource}"
        return path


@cache
def _by_kind() -> dict[str, KindRef]:
    return {
        info.kind: KindRef(info.api_version, info.kind, info.plural, info.namespaced)
        for info in KINDS
    }


def builtin(kind: str, api_version: str | None = None) -> KindRef | None:
    """The built-in kind of that name (and apiVersion, when given), or None."""
    found = _by_kind().get(kind)
    if found is None or (api_version is not None and api_version != found.api_version):
        return None
    return found


def resource_of(kind: str, api_version: str | None = None) -> str:
    """The storage key of a built-in kind (KeyError for any other)."""
    found = builtin(kind, api_version)
    if found is None:
        raise KeyError(f"{kind} ({api_version or 'any version'}) is not a built-in kind")
    return found.resource
