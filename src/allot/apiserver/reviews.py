"""The access reviews and the TokenRequest subresource: answers built from RBAC.

``SelfSubjectAccessReview`` (``kubectl auth can-i``) and ``SubjectAccessReview`` ask the
authorizer about the requester or a named user; in a tenant cluster, a write its guard
refuses whatever the object is "no" with the guard's refusal, as RBAC would deny it in a
vCluster whose syncer owns those objects. ``SelfSubjectRulesReview`` (``kubectl auth
can-i --list``) lists the rules that apply in a namespace (members of ``system:masters``
get upstream's "everything" rules first). ``SelfSubjectReview`` (``kubectl auth whoami``)
says who the request ran as. ``serviceaccounts/<name>/token``
(``kubectl create token``) issues a ServiceAccount token. Called by
:class:`~allot.apiserver.app.ApiServer`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from allot.api.kinds import KindInfo
from allot.registry.clusters import Registry
from allot.registry.rbac.identity import UserInfo
from allot.registry.rbac.rules import Attributes
from allot.registry.rbac.satokens import DEFAULT_SECONDS, MAX_SECONDS, MIN_SECONDS
from allot.registry.resources import by_kind
from allot.statuses import InvalidObjectError
from allot.store.errors import NotFound
from allot.types import Obj, rfc3339
from allot.validation.field import Path, invalid

AUTHORIZATION = "authorization.k8s.io/v1"
EVERYTHING = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
EVERY_URL = {"verbs": ["*"], "nonResourceURLs": ["*"]}
TOKEN_REQUEST = KindInfo(
    "authentication.k8s.io", "v1", "TokenRequest", "token", True, "subdomain", "builtins:dict"
)
"""For the Invalid text only (``TokenRequest.authentication.k8s.io "sa" is invalid``)."""
StaticRefusal = Callable[[str, dict[str, Any]], "str | None"]


def access_review(
    registry: Registry,
    cluster: str,
    requester: UserInfo,
    body: Obj,
    static_refusal: StaticRefusal,
) -> Obj:
    """A SelfSubjectAccessReview (about ``requester``) or SubjectAccessReview (about
    ``spec.user``/``groups``) with its status."""
    spec = body.get("spec") or {}
    kind = str(body.get("kind") or "SelfSubjectAccessReview")
    user = requester if kind == "SelfSubjectAccessReview" else _named_user(spec)
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        attributes = Attributes(
            user,
            str(resource.get("verb") or ""),
            namespace=str(resource.get("namespace") or ""),
            api_group=str(resource.get("group") or ""),
            api_version=str(resource.get("version") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            name=str(resource.get("name") or ""),
        )
    else:
        other = spec.get("nonResourceAttributes") or {}
        attributes = Attributes(
            user,
            str(other.get("verb") or ""),
            resource_request=False,
            path=str(other.get("path") or ""),
        )
    decision = registry.authorizer.authorize(cluster, attributes)
    status: dict[str, object] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    refusal = static_refusal(cluster, resource) if isinstance(resource, dict) else None
    if decision.allowed and refusal is not None:
        status = {"allowed": False, "denied": True, "reason": refusal}
    return {**body, "apiVersion": AUTHORIZATION, "kind": kind, "status": status}


def _named_user(spec: dict[str, Any]) -> UserInfo:
    extra = spec.get("extra") or {}
    return UserInfo(
        str(spec.get("user") or ""),
        uid=str(spec.get("uid") or ""),
        groups=tuple(str(g) for g in spec.get("groups") or ()),
        extra=tuple((str(k), tuple(v or ())) for k, v in extra.items()),
    )


def self_review(user: UserInfo) -> Obj:
    """A SelfSubjectReview (``kubectl auth whoami``): who the request ran as."""
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": user.to_wire()},
    }


def rules_review(registry: Registry, cluster: str, user: UserInfo, body: Obj) -> Obj:
    """A SelfSubjectRulesReview: what ``user`` may do in ``spec.namespace``."""
    namespace = str((body.get("spec") or {}).get("namespace") or "")
    rules, errors = registry.authorizer.rules_for(cluster, user, namespace)
    resource_rules: list[Obj] = [EVERYTHING] if user.privileged else []
    url_rules: list[Obj] = [EVERY_URL] if user.privileged else []
    for rule in rules:
        wire = rule.to_wire()
        if rule.resources:
            resource_rules.append({k: v for k, v in wire.items() if k != "nonResourceURLs"})
        if rule.non_resource_urls:
            url_rules.append({"verbs": wire["verbs"], "nonResourceURLs": wire["nonResourceURLs"]})
    status: Obj = {
        "resourceRules": resource_rules,
        "nonResourceRules": url_rules,
        "incomplete": False,
    }
    if errors:
        status["evaluationError"] = ", ".join(errors)
    return {**body, "apiVersion": AUTHORIZATION, "kind": "SelfSubjectRulesReview", "status": status}


def token_request(registry: Registry, cluster: str, namespace: str, name: str, body: Obj) -> Obj:
    """Issue a token for the ServiceAccount ``namespace/name`` (``kubectl create token``)."""
    account = registry.store.peek(cluster, by_kind("ServiceAccount").store, namespace, name)
    if account is None:
        raise NotFound(
            f'serviceaccounts "{name}" not found',
            resource="serviceaccounts",
            name=name,
            plural="serviceaccounts",
        )
    spec = dict(body.get("spec") or {})
    seconds = spec.get("expirationSeconds")
    seconds = DEFAULT_SECONDS if seconds is None else seconds
    _check_duration(name, seconds)
    spec["expirationSeconds"] = seconds
    spec.setdefault("audiences", ["https://kubernetes.default.svc.cluster.local"])
    token, expires = registry.service_account_tokens.issue(
        cluster, namespace, name, str(account["metadata"].get("uid") or ""), int(seconds)
    )
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": rfc3339(registry.clock()),
        },
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": rfc3339(expires)},
    }


def _check_duration(name: str, seconds: object) -> None:
    detail = None
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        detail = "must be an integer"
    elif seconds < MIN_SECONDS:
        detail = "may not specify a duration less than 10 minutes"
    elif seconds > MAX_SECONDS:
        detail = "may not specify a duration larger than 2^32 seconds"
    if detail is not None:
        error = invalid(Path("spec.expirationSeconds"), seconds, detail)
        raise InvalidObjectError(TOKEN_REQUEST, name, [error])
