"""Escalation prevention: a user may only grant the permissions it holds.

Upstream's policy-based storage of the RBAC kinds (``pkg/registry/rbac/*/policybased``):
creating or updating a Role or ClusterRole is refused unless the user holds every rule it
contains in that namespace (or may ``escalate`` roles), and a ClusterRole with an
``aggregationRule`` needs every permission; creating or updating a binding is refused
unless the user holds every rule of the referenced role or may ``bind`` it. Members of
``system:masters`` and the platform's own writes pass without a check. The refusal is
upstream's text: ``user "jane" (groups=[...]) is attempting to grant RBAC permissions not
currently held:`` and the missing rules, compacted and sorted. An admission plugin,
assembled into every cluster's chain by the :class:`~allot.registry.clusters.Registry`.
"""

from __future__ import annotations

from allot.registry.admission import AdmissionDenied, AdmissionRequest, Operation
from allot.registry.rbac.authorizer import Binding, RbacAuthorizer, aggregate
from allot.registry.rbac.identity import SYSTEM_MASTERS, UserInfo
from allot.registry.rbac.rules import (
    Attributes,
    Rule,
    compact,
    compact_string,
    covers,
    go_quote,
    go_quoted_list,
    rules_of,
)
from allot.registry.resources import by_kind
from allot.store.errors import NotFound
from allot.types import Obj

RBAC_GROUP = "rbac.authorization.k8s.io"
ROLE_KINDS = {"Role": "roles", "ClusterRole": "clusterroles"}
BINDING_KINDS = ("RoleBinding", "ClusterRoleBinding")
FULL_AUTHORITY = (Rule(("*",), ("*",), ("*",)), Rule(("*",), non_resource_urls=("*",)))


class EscalationCheck:
    def __init__(self, authorizer: RbacAuthorizer) -> None:
        self.authorizer = authorizer

    def admit(self, request: AdmissionRequest) -> list[str]:
        kind = request.resource.kind
        if (
            request.groups is None
            or SYSTEM_MASTERS in request.groups
            or request.operation is Operation.DELETE
            or request.subresource
            or request.resource.group != RBAC_GROUP
            or request.object is None
        ):
            return []
        user = UserInfo(request.user, groups=request.groups)
        obj = request.object.to_wire()
        if kind in ROLE_KINDS:
            self._check_role(request, user, obj)
        elif kind in BINDING_KINDS:
            self._check_binding(request, user, obj)
        return []

    def _check_role(self, request: AdmissionRequest, user: UserInfo, obj: Obj) -> None:
        plural = ROLE_KINDS[request.resource.kind]
        if self._may(request, user, "escalate", plural, request.name):
            return
        self._confirm_no_escalation(request, user, rules_of(obj.get("rules")))
        if obj.get("aggregationRule") and self._missing(request, user, FULL_AUTHORITY):
            raise AdmissionDenied(
                request.resource,
                request.name,
                "must have cluster-admin privileges to use the aggregationRule",
            )

    def _check_binding(self, request: AdmissionRequest, user: UserInfo, obj: Obj) -> None:
        role_ref = obj.get("roleRef") or {}
        role_kind, role_name = str(role_ref.get("kind") or ""), str(role_ref.get("name") or "")
        plural = ROLE_KINDS.get(role_kind)
        if plural and self._may(request, user, "bind", plural, role_name):
            return
        binding = Binding(
            request.resource.kind, request.name, request.namespace, role_kind, role_name, ()
        )
        rules, _ = self.authorizer.role_rules(request.cluster, binding)
        if rules is None:
            resource = by_kind(role_kind).store if plural else request.resource.store
            raise NotFound(
                f'{resource.key} "{role_name}" not found',
                resource=resource.key,
                name=role_name,
                group=RBAC_GROUP,
                plural=resource.plural,
            )
        self._confirm_no_escalation(request, user, rules)

    def _may(
        self, request: AdmissionRequest, user: UserInfo, verb: str, plural: str, name: str
    ) -> bool:
        """Whether ``user`` may ``verb`` (``escalate``, ``bind``) the role ``name`` where
        the request writes (upstream checks the request's namespace)."""
        attributes = Attributes(
            user,
            verb,
            namespace=request.namespace,
            api_group=RBAC_GROUP,
            resource=plural,
            name=name,
        )
        return self.authorizer.authorize(request.cluster, attributes).allowed

    def _missing(
        self, request: AdmissionRequest, user: UserInfo, rules: tuple[Rule, ...]
    ) -> list[Rule]:
        held, _ = self.authorizer.rules_for(request.cluster, user, request.namespace)
        return covers(held, rules)

    def _confirm_no_escalation(
        self, request: AdmissionRequest, user: UserInfo, rules: tuple[Rule, ...]
    ) -> None:
        held, errors = self.authorizer.rules_for(request.cluster, user, request.namespace)
        missing = covers(held, rules)
        if not missing:
            return
        described = sorted({compact_string(rule) for rule in compact(missing)})
        who = f"user {go_quote(user.name)} (groups={go_quoted_list(user.groups)})"
        message = (
            f"{who} is attempting to grant RBAC permissions not currently held:\n"
            + "\n".join(described)
        )
        if errors:
            message += f"; resolution errors: [{aggregate(errors)}]"
        raise AdmissionDenied(request.resource, request.name, message)
