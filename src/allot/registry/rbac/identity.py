"""Who a request runs as: a user's name, uid, groups and extra values.

Upstream's ``user.Info``. A cluster's own bearer token authenticates as its administrator
(group ``system:masters``, which RBAC never consults); a ServiceAccount token as the
account; impersonation headers replace either. Built by :mod:`allot.apiserver.authn`,
read by the authorizer, the escalation check and admission policies' ``request.userInfo``.
"""

from __future__ import annotations

from dataclasses import dataclass

SYSTEM_MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def privileged(self) -> bool:
        """A member of ``system:masters``: every request allowed, nothing checked."""
        return SYSTEM_MASTERS in self.groups

    def to_wire(self) -> dict[str, object]:
        """``authentication.k8s.io/v1`` UserInfo (admission policies, reviews)."""
        wire: dict[str, object] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            wire["uid"] = self.uid
        if self.extra:
            wire["extra"] = {key: list(values) for key, values in self.extra}
        return wire


def cluster_admin(cluster: str) -> UserInfo:
    """The user a cluster's own token authenticates as: full rights in that cluster."""
    return UserInfo(f"system:allot:{cluster}", groups=(SYSTEM_MASTERS, AUTHENTICATED))


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """A ServiceAccount's user and its groups, as its token authenticates it."""
    return UserInfo(
        service_account_name(namespace, name),
        uid=uid,
        groups=(SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED),
    )


def service_account_name(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of ``system:serviceaccount:<ns>:<name>``, else None (upstream's
    ``SplitUsername``: exactly two non-empty parts after the prefix)."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX) :].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]
