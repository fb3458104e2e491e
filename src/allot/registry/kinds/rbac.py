"""Role, RoleBinding, ClusterRole, ClusterRoleBinding: serving details, defaulting,
validation and ``kubectl get`` columns. Roles print as upstream's default table (NAME,
CREATED AT); bindings as its printer (NAME ROLE AGE, and USERS GROUPS SERVICEACCOUNTS
with ``-o wide``). Stored and served only: allot authorizes no request by them (the
conformance ledger says so)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import rbac
from allot.validation.objects import KindRules

CREATED_AT = {**column("Created At", str(AGE["description"])), "type": "date"}
"""The second column of upstream's default table (kinds without a printer)."""


def _created_at(obj: Obj, now: dt.datetime) -> list[Any]:
    return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp") or ""]


def _subjects(binding: Obj) -> list[str]:
    """USERS, GROUPS and SERVICEACCOUNTS cells (``rbac.SubjectsStrings``)."""
    found: dict[str, list[str]] = {"User": [], "Group": [], "ServiceAccount": []}
    for subject in binding.get("subjects") or []:
        name, namespace = subject.get("name") or "", subject.get("namespace")
        if subject.get("kind") == "ServiceAccount" and namespace:
            name = f"{namespace}/{name}"
        found.get(subject.get("kind") or "", []).append(name)
    return [", ".join(found[kind]) for kind in ("User", "Group", "ServiceAccount")]


def _role_ref(binding: Obj) -> str:
    ref = binding.get("roleRef") or {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _binding_table(noun: str, role_ref: str) -> Table:
    return Table(
        [
            NAME,
            column("Role", role_ref),
            AGE,
            column("Users", f"Users in the {noun}", priority=1),
            column("Groups", f"Groups in the {noun}", priority=1),
            column("ServiceAccounts", f"ServiceAccounts in the {noun}", priority=1),
        ],
        lambda o, n: [
            o["metadata"]["name"],
            _role_ref(o),
            age(o, n),
            *_subjects(o),
        ],
    )


_ROLE_RULES = KindRules(validate=lambda obj, context: rbac.validate_role(obj))
_BINDING_RULES = KindRules(
    defaults=rbac.default_binding,
    validate=lambda obj, context: rbac.validate_binding(obj),
    validate_update=lambda new, old, context: rbac.validate_binding_update(new, old),
)
_REFERENCES_ROLE = (
    "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
    "namespace."
)
_REFERENCES_CLUSTER_ROLE = "RoleRef can only reference a ClusterRole in the global namespace."
_ROLE_TABLE = Table([NAME, CREATED_AT], _created_at)

STRATEGIES = (
    KindStrategy("Role", "role", rules=_ROLE_RULES, table=_ROLE_TABLE),
    KindStrategy("ClusterRole", "clusterrole", rules=_ROLE_RULES, table=_ROLE_TABLE),
    KindStrategy(
        "RoleBinding",
        "rolebinding",
        rules=_BINDING_RULES,
        table=_binding_table("roleBinding", _REFERENCES_ROLE),
    ),
    KindStrategy(
        "ClusterRoleBinding",
        "clusterrolebinding",
        rules=_BINDING_RULES,
        table=_binding_table("clusterRoleBinding", _REFERENCES_CLUSTER_ROLE),
    ),
)
