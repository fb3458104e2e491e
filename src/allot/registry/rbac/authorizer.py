"""The RBAC authorizer of every cluster: a request's attributes against its roles.

Upstream's ``plugin/pkg/auth/authorizer/rbac`` with ``pkg/registry/rbac/validation``'s
rule resolver: the ClusterRoleBindings, then (for a namespaced request) the namespace's
RoleBindings whose subjects name the user (User by name, Group by membership,
ServiceAccount by ``system:serviceaccount:<ns>:<name>``, its namespace defaulting to the
binding's), each binding's Role or ClusterRole resolved; the first rule that allows the
request decides. A binding whose role is missing contributes its error to the reason of a
denial. ``system:masters`` is allowed before any of this (upstream's privileged-group
authorizer comes first in the chain). Each cluster's roles and bindings are indexed once
and indexed again only when one of the four collections changed. Built by the
:class:`~allot.registry.clusters.Registry`; asked by the API server, the access reviews
and the escalation check.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from allot.registry.rbac.identity import UserInfo, service_account_name
from allot.registry.rbac.rules import Attributes, Rule, allows, go_quote, rules_of
from allot.registry.resources import by_kind
from allot.store import Store

KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True)
class Binding:
    """A RoleBinding or ClusterRoleBinding, reduced to what the resolver reads."""

    kind: str
    name: str
    namespace: str
    role_kind: str
    role_name: str
    subjects: tuple[Mapping[str, Any], ...]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> Binding:
        metadata, role_ref = obj["metadata"], obj.get("roleRef") or {}
        return cls(
            str(obj.get("kind") or ""),
            metadata["name"],
            metadata.get("namespace") or "",
            str(role_ref.get("kind") or ""),
            str(role_ref.get("name") or ""),
            tuple(obj.get("subjects") or ()),
        )

    def subject_for(self, user: UserInfo) -> Mapping[str, Any] | None:
        for subject in self.subjects:
            if _applies(subject, user, self.namespace):
                return subject
        return None

    def describe(self, subject: Mapping[str, Any]) -> str:
        """Upstream's binding describer (``RBAC: allowed by ...``)."""
        name = f"{self.name}/{self.namespace}" if self.namespace else self.name
        kind = str(subject.get("kind"))
        who = str(subject.get("name"))
        if kind == "ServiceAccount":
            who = f"{who}/{subject.get('namespace') or self.namespace}"
        return (
            f"{self.kind} {go_quote(name)} of {self.role_kind} {go_quote(self.role_name)} "
            f"to {kind} {go_quote(who)}"
        )


def _applies(subject: Mapping[str, Any], user: UserInfo, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = str(subject.get("namespace") or binding_namespace)
        return bool(namespace) and user.name == service_account_name(namespace, name)
    return False


@dataclass
class Policy:
    """One cluster's roles and bindings, indexed."""

    cluster_roles: dict[str, tuple[Rule, ...]] = field(default_factory=dict)
    roles: dict[tuple[str, str], tuple[Rule, ...]] = field(default_factory=dict)
    cluster_bindings: list[Binding] = field(default_factory=list)
    bindings: dict[str, list[Binding]] = field(default_factory=dict)

    def role_rules(self, binding: Binding) -> tuple[tuple[Rule, ...] | None, str]:
        """The rules a binding's roleRef names, or None and why not."""
        if binding.role_kind == "ClusterRole":
            found = self.cluster_roles.get(binding.role_name)
            missing = f"clusterrole.rbac.authorization.k8s.io {go_quote(binding.role_name)}"
        elif binding.role_kind == "Role":
            found = self.roles.get((binding.namespace, binding.role_name))
            missing = f"role.rbac.authorization.k8s.io {go_quote(binding.role_name)}"
        else:
            return None, f"unsupported role reference kind: {go_quote(binding.role_kind)}"
        return found, "" if found is not None else f"{missing} not found"

    def visit(self, user: UserInfo, namespace: str) -> Iterator[tuple[Binding, Any, Rule | str]]:
        """(binding, subject, rule) for every rule that applies to the user in the
        namespace, cluster bindings first; an unresolvable role yields its error."""
        chosen = list(self.cluster_bindings)
        if namespace:
            chosen += self.bindings.get(namespace, [])
        for binding in chosen:
            subject = binding.subject_for(user)
            if subject is None:
                continue
            rules, error = self.role_rules(binding)
            if rules is None:
                yield binding, subject, error
                continue
            for rule in rules:
                yield binding, subject, rule


class RbacAuthorizer:
    """Authorizes requests against each cluster's RBAC objects."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._resources = [by_kind(kind).store for kind in KINDS]
        self._policies: dict[str, tuple[tuple[int, ...], Policy]] = {}

    def authorize(self, cluster: str, attributes: Attributes) -> Decision:
        if attributes.user.privileged:
            return Decision(True, "")
        errors: list[str] = []
        for binding, subject, rule in self.policy(cluster).visit(
            attributes.user, attributes.namespace
        ):
            if isinstance(rule, str):
                errors.append(rule)
            elif allows(attributes, rule):
                return Decision(True, f"RBAC: allowed by {binding.describe(subject)}")
        return Decision(False, f"RBAC: {aggregate(errors)}" if errors else "")

    def rules_for(
        self, cluster: str, user: UserInfo, namespace: str
    ) -> tuple[list[Rule], list[str]]:
        """Every rule that applies to ``user`` in ``namespace`` and the resolution errors
        (upstream's ``RulesFor``)."""
        rules: list[Rule] = []
        errors: list[str] = []
        for _, _, rule in self.policy(cluster).visit(user, namespace):
            if isinstance(rule, str):
                errors.append(rule)
            else:
                rules.append(rule)
        return rules, errors

    def role_rules(self, cluster: str, binding: Binding) -> tuple[tuple[Rule, ...] | None, str]:
        return self.policy(cluster).role_rules(binding)

    def policy(self, cluster: str) -> Policy:
        version = tuple(self.store.changes(cluster, resource) for resource in self._resources)
        cached = self._policies.get(cluster)
        if cached is not None and cached[0] == version:
            return cached[1]
        policy = self._index(cluster)
        self._policies[cluster] = (version, policy)
        return policy

    def forget(self, cluster: str) -> None:
        self._policies.pop(cluster, None)

    def _index(self, cluster: str) -> Policy:
        roles, cluster_roles, role_bindings, cluster_role_bindings = (
            self.store.scan(cluster, resource) for resource in self._resources
        )
        policy = Policy()
        for role in cluster_roles:
            policy.cluster_roles[role["metadata"]["name"]] = rules_of(role.get("rules"))
        for role in roles:
            metadata = role["metadata"]
            policy.roles[(metadata["namespace"], metadata["name"])] = rules_of(role.get("rules"))
        for obj in sorted(cluster_role_bindings, key=_name):
            policy.cluster_bindings.append(Binding.from_wire(obj))
        for obj in sorted(role_bindings, key=_name):
            binding = Binding.from_wire(obj)
            policy.bindings.setdefault(binding.namespace, []).append(binding)
        return policy


def _name(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def aggregate(errors: list[str]) -> str:
    """``utilerrors.NewAggregate``'s text: one error as is, several in brackets."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
