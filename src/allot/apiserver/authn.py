"""Who a request is: its bearer token, then any impersonation headers.

A cluster's own token (``tokens.json``) authenticates as that cluster's administrator
(``system:masters``); another cluster's token is 403, as before. A ServiceAccount token
(:mod:`allot.registry.rbac.satokens`) authenticates as its account in its own cluster
while it is unexpired and the account, with the uid it was issued for, exists; anywhere
else it is unknown (401). Then ``Impersonate-User``, ``Impersonate-Group``,
``Impersonate-Uid`` and ``Impersonate-Extra-<key>`` (kubectl ``--as``, ``--as-group``)
replace the user, each asked of the authorizer first as upstream's impersonation filter
does (verb ``impersonate`` on ``users``, ``groups``, ``serviceaccounts``, and
``authentication.k8s.io`` ``uids`` and ``userextras/<key>``), refused with upstream's 403
texts. Called by :class:`~allot.apiserver.app.ApiServer` for every request.
"""

from __future__ import annotations

from urllib.parse import unquote

from starlette.datastructures import Headers

from allot.api.meta import StatusDetails
from allot.apiserver.errors import Forbidden, Unauthorized
from allot.registry.clusters import Registry
from allot.registry.errors import InternalError
from allot.registry.rbac.identity import (
    AUTHENTICATED,
    UNAUTHENTICATED,
    UserInfo,
    cluster_admin,
    service_account_user,
    split_service_account,
)
from allot.registry.rbac.rules import Attributes, forbidden_message
from allot.registry.resources import by_kind

EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATION_GROUP = "authentication.k8s.io"


class ForbiddenRequest(Forbidden):
    """The authorizer's refusal, as upstream's ``responsewriters.Forbidden`` writes it:
    ``<resource>[.<group>] ["<name>"] is forbidden: User "..." cannot ...``."""

    def __init__(self, attributes: Attributes, reason: str = "") -> None:
        text = forbidden_message(attributes)
        if reason:
            text = f"{text}: {reason}"
        if not attributes.resource_request or not attributes.resource:
            super().__init__(f"forbidden: {text}")
            self.details = StatusDetails()
            return
        qualified = attributes.resource
        if attributes.api_group:
            qualified = f"{qualified}.{attributes.api_group}"
        head = f'{qualified} "{attributes.name}"' if attributes.name else qualified
        super().__init__(f"{head} is forbidden: {text}")
        self.details = StatusDetails(
            name=attributes.name or None,
            group=attributes.api_group or None,
            kind=attributes.resource,
        )


def authenticate(registry: Registry, headers: Headers, cluster: str) -> UserInfo:
    """The user of a request's bearer token (401 without a valid one, 403 for another
    cluster's own token)."""
    header = headers.get("authorization", "")
    token = header[7:].strip() if header.lower().startswith("bearer ") else ""
    if not token:
        raise Unauthorized()
    owner = registry.tokens.cluster_for(token)
    if owner == cluster:
        return cluster_admin(cluster)
    if owner is not None:
        raise Forbidden(
            f'clusters "{cluster}" is forbidden: User "system:allot:{owner}" '
            f"cannot access cluster {cluster!r} with this token"
        )
    record = registry.service_account_tokens.lookup(token)
    if record is None or record.cluster != cluster:
        raise Unauthorized()
    account = registry.store.peek(
        cluster, by_kind("ServiceAccount").store, record.namespace, record.name
    )
    if account is None or account["metadata"].get("uid") != record.uid:
        raise Unauthorized()
    return service_account_user(record.namespace, record.name, record.uid)


def impersonate(registry: Registry, headers: Headers, cluster: str, user: UserInfo) -> UserInfo:
    """The user the impersonation headers ask for, once each is allowed; ``user`` when
    there are none."""
    name = headers.get("impersonate-user", "")
    groups = headers.getlist("impersonate-group")
    uid = headers.get("impersonate-uid", "")
    extras = _extras(headers)
    if not (name or groups or uid or extras):
        return user
    if not name:
        asked = [*(f"Group {g}" for g in groups), *(f"UserExtra {k}" for k, _ in extras)]
        raise InternalError(
            f"Internal error occurred: requested [{', '.join(asked)}] without impersonating a user"
        )
    account = split_service_account(name)
    checks: list[Attributes] = []
    if account is not None:
        checks.append(_acting(user, "serviceaccounts", account[1], namespace=account[0]))
    else:
        checks.append(_acting(user, "users", name))
    checks += [_acting(user, "groups", group) for group in groups]
    if uid:
        checks.append(_acting(user, "uids", uid, group=AUTHENTICATION_GROUP))
    for key, value in extras:
        checks.append(_acting(user, "userextras", value, group=AUTHENTICATION_GROUP, sub=key))
    for attributes in checks:
        decision = registry.authorizer.authorize(cluster, attributes)
        if not decision.allowed:
            raise ForbiddenRequest(attributes, decision.reason)
    return _impersonated(name, account, groups, uid, extras)


def _impersonated(
    name: str,
    account: tuple[str, str] | None,
    groups: list[str],
    uid: str,
    extras: list[tuple[str, str]],
) -> UserInfo:
    chosen = list(groups)
    if account is not None and not groups:
        chosen = list(service_account_user(*account).groups[:2])
    if name != "system:anonymous" and not {AUTHENTICATED, UNAUTHENTICATED} & set(chosen):
        chosen.append(AUTHENTICATED)
    merged: dict[str, list[str]] = {}
    for key, value in extras:
        merged.setdefault(key, []).append(value)
    return UserInfo(
        name,
        uid=uid,
        groups=tuple(chosen),
        extra=tuple((key, tuple(values)) for key, values in merged.items()),
    )


def _acting(
    user: UserInfo, resource: str, name: str, *, namespace: str = "", group: str = "", sub: str = ""
) -> Attributes:
    return Attributes(
        user,
        "impersonate",
        namespace=namespace,
        api_group=group,
        resource=resource,
        subresource=sub,
        name=name,
    )


def _extras(headers: Headers) -> list[tuple[str, str]]:
    """(key, value) of every ``Impersonate-Extra-<key>`` header (keys unescaped and
    lower-cased, as upstream)."""
    found: list[tuple[str, str]] = []
    for header, value in headers.items():
        if header.lower().startswith(EXTRA_PREFIX):
            found.append((unquote(header[len(EXTRA_PREFIX) :]).lower(), value))
    return found
