"""Kubernetes' CEL authorizer library for admission policies: ``authorizer`` and
``authorizer.requestResource``.

Upstream (``k8s.io/apiserver/pkg/cel/library/authz.go``) offers
``authorizer.group(g).resource(r).subresource(s).namespace(n).name(x).check(verb)``,
``authorizer.path(p).check(verb)``, ``authorizer.serviceAccount(ns, name)`` (checks as
that account) and ``authorizer.requestResource`` (the request's own resource), each
``check`` giving a Decision with ``allowed()``, ``reason()``, ``errored()`` and
``error()``. The values are messages of :mod:`allot.cel.values` carrying the cluster and
the user (JSON); ``check`` calls a :data:`Checker` given by whoever evaluates (the
registry's RBAC authorizer), so this package stays pure. Used by
:mod:`allot.cel.policy`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from cel_expr_python import cel

from allot.cel import cost, values

T = cel.Type
Checker = Callable[[str, dict[str, Any], dict[str, str]], tuple[bool, str]]
"""(cluster, user as authentication/v1 UserInfo, attributes) -> (allowed, reason);
attributes: verb and either path, or group, resource, subresource, namespace, name."""

AUTHORIZER = T(f"{values.AUTHORIZATION_PACKAGE}.Authorizer")
PATH_CHECK = T(f"{values.AUTHORIZATION_PACKAGE}.PathCheck")
GROUP_CHECK = T(f"{values.AUTHORIZATION_PACKAGE}.GroupCheck")
RESOURCE_CHECK = T(f"{values.AUTHORIZATION_PACKAGE}.ResourceCheck")
DECISION = T(f"{values.AUTHORIZATION_PACKAGE}.Decision")
VARIABLES = {"authorizer": AUTHORIZER, "authorizer.requestResource": RESOURCE_CHECK}
RESOURCE_PARTS = ("subresource", "namespace", "name")
SERVICE_ACCOUNT_GROUPS = "system:serviceaccounts"


def authorizer_value(cluster: str, user: dict[str, Any]) -> Any:
    return values.authorization_message("Authorizer", cluster=cluster, user=json.dumps(user))


def resource_check_value(cluster: str, user: dict[str, Any], **parts: str) -> Any:
    """``authorizer.requestResource``: group, resource, subresource, namespace, name."""
    return values.authorization_message(
        "ResourceCheck", cluster=cluster, user=json.dumps(user), **parts
    )


def function_declarations(checker: Checker | None) -> list[Any]:
    """The library's functions; ``check`` asks ``checker`` (None: every check errs)."""

    def check_path(value: Any, verb: str) -> Any:
        return _decide(checker, value, {"verb": verb, "path": value.path})

    def check_resource(value: Any, verb: str) -> Any:
        attributes = {"verb": verb, "group": value.group, "resource": value.resource}
        attributes.update({part: getattr(value, part) for part in RESOURCE_PARTS})
        return _decide(checker, value, attributes)

    def check(value: Any, verb: str) -> Any:
        kind = getattr(getattr(value, "DESCRIPTOR", None), "name", type(value).__name__)
        if kind == "PathCheck":
            return check_path(value, verb)
        if kind == "ResourceCheck":
            return check_resource(value, verb)
        raise ValueError(f"no such overload: check on {kind}")

    def narrowed(part: str) -> Callable[[Any, str], Any]:
        def narrow(value: Any, text: str) -> Any:
            copy = type(value)()
            copy.CopyFrom(value)
            setattr(copy, part, text)
            return copy

        return narrow

    def member(name: str, result: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
        return cel.Overload(name, result, params, is_member=True, impl=impl)

    declared = {
        "path": [member("authorizer_path", PATH_CHECK, [AUTHORIZER, T.STRING], _path)],
        "group": [member("authorizer_group", GROUP_CHECK, [AUTHORIZER, T.STRING], _group)],
        "serviceAccount": [
            member(
                "authorizer_serviceaccount",
                AUTHORIZER,
                [AUTHORIZER, T.STRING, T.STRING],
                _service_account,
            )
        ],
        "resource": [
            member("groupcheck_resource", RESOURCE_CHECK, [GROUP_CHECK, T.STRING], _resource)
        ],
        # the runtime tells implementations apart by argument kinds, and every message is
        # one kind to it: both overloads type-check, one implementation serves them
        "check": [
            cel.Overload("pathcheck_check", DECISION, [PATH_CHECK, T.STRING], is_member=True),
            member("resourcecheck_check", DECISION, [RESOURCE_CHECK, T.STRING], check),
        ],
        "allowed": [member("decision_allowed", T.BOOL, [DECISION], lambda d: d.allowed)],
        "reason": [member("decision_reason", T.STRING, [DECISION], lambda d: d.reason)],
        "errored": [member("decision_errored", T.BOOL, [DECISION], lambda d: bool(d.error))],
        "error": [member("decision_error", T.STRING, [DECISION], lambda d: d.error)],
    }
    for part in RESOURCE_PARTS:
        overload = member(
            f"resourcecheck_{part}", RESOURCE_CHECK, [RESOURCE_CHECK, T.STRING], narrowed(part)
        )
        declared[part] = [overload]
    return [cel.FunctionDecl(name, overloads) for name, overloads in declared.items()]


def _path(value: Any, path: str) -> Any:
    return values.authorization_message(
        "PathCheck", cluster=value.cluster, user=value.user, path=path
    )


def _group(value: Any, group: str) -> Any:
    return values.authorization_message(
        "GroupCheck", cluster=value.cluster, user=value.user, group=group
    )


def _resource(value: Any, resource: str) -> Any:
    return values.authorization_message(
        "ResourceCheck",
        cluster=value.cluster,
        user=value.user,
        group=value.group,
        resource=resource,
    )


def _service_account(value: Any, namespace: str, name: str) -> Any:
    user = {
        "username": f"system:serviceaccount:{namespace}:{name}",
        "groups": [SERVICE_ACCOUNT_GROUPS, f"{SERVICE_ACCOUNT_GROUPS}:{namespace}"],
    }
    return authorizer_value(value.cluster, user)


AUTHORIZATION_CHECK_COST = 350_000
"""Kubernetes' fixed cost of one ``check``: two fit in an expression's budget, a third does
not (``library/cost.go``)."""


def _decide(checker: Checker | None, value: Any, attributes: dict[str, str]) -> Any:
    cost.charge(AUTHORIZATION_CHECK_COST)
    if checker is None:
        return values.authorization_message("Decision", error="no authorizer is configured")
    allowed, reason = checker(value.cluster, json.loads(value.user), attributes)
    return values.authorization_message("Decision", allowed=allowed, reason=reason)
