"""The default RBAC policy of every cluster, created and reconciled at start.

kube-apiserver's RBAC post-start hook ensures the bootstrap ClusterRoles and
ClusterRoleBindings exist (``cluster-admin``, ``admin``, ``edit``, ``view``,
``system:discovery``, ``system:basic-user``, ``system:public-info-viewer`` and the
``system:aggregate-to-*`` roles): a missing one is created; one annotated
``rbac.authorization.kubernetes.io/autoupdate: "true"`` gets back the rules, subjects,
labels and annotations it lacks (extra ones a user added stay); one annotated ``"false"``
is left alone. The policy is ``allot/data/rbac-bootstrap.yaml``. Called by
:class:`~allot.registry.clusters.Registry` for every cluster it adds or finds at start.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import yaml

from allot.registry.rbac.aggregation import aggregated_rules
from allot.registry.resources import by_kind
from allot.store import Store
from allot.types import Obj

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAPPING = {"kubernetes.io/bootstrapping": "rbac-defaults"}
RBAC_GROUP = "rbac.authorization.k8s.io"


@functools.cache
def _policy() -> dict[str, Any]:
    text = resources.files("allot").joinpath("data", "rbac-bootstrap.yaml").read_text()
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def cluster_roles() -> list[Obj]:
    """The bootstrap ClusterRoles as wire objects (aggregated ones without rules)."""
    roles: list[Obj] = []
    for entry in _policy()["clusterRoles"]:
        role: Obj = {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "ClusterRole",
            "metadata": _metadata(entry["name"], entry.get("labels")),
        }
        if "aggregateFrom" in entry:
            selector = {"matchLabels": {entry["aggregateFrom"]: "true"}}
            role["aggregationRule"] = {"clusterRoleSelectors": [selector]}
            role["rules"] = []
        else:
            role["rules"] = [dict(rule) for rule in entry["rules"]]
        roles.append(role)
    return roles


def cluster_role_bindings() -> list[Obj]:
    return [
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _metadata(entry["name"], None),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": entry["role"]},
            "subjects": [
                {"apiGroup": RBAC_GROUP, "kind": "Group", "name": group}
                for group in entry["groups"]
            ],
        }
        for entry in _policy()["clusterRoleBindings"]
    ]


def _metadata(name: str, labels: dict[str, str] | None) -> Obj:
    return {
        "name": name,
        "labels": {**BOOTSTRAPPING, **(labels or {})},
        "annotations": {AUTOUPDATE: "true"},
    }


def ensure(store: Store, cluster: str) -> None:
    """Create what is missing of the bootstrap policy in ``cluster`` and reconcile what
    may be updated; then fill the aggregated roles."""
    roles_resource = by_kind("ClusterRole").store
    for role in cluster_roles():
        _reconcile(store, cluster, roles_resource, role, _merge_rules)
    bindings_resource = by_kind("ClusterRoleBinding").store
    for binding in cluster_role_bindings():
        _reconcile(store, cluster, bindings_resource, binding, _merge_subjects)
    _fill_aggregated(store, cluster)


def _reconcile(store: Store, cluster: str, resource: Any, wanted: Obj, merge: Any) -> None:
    name = wanted["metadata"]["name"]
    current = store.peek(cluster, resource, "", name)
    if current is None:
        store.create(cluster, resource, wanted)
        return
    metadata = current["metadata"]
    if (metadata.get("annotations") or {}).get(AUTOUPDATE) == "false":
        return
    updated = merge(current, wanted)
    updated["metadata"] = {
        **metadata,
        "labels": {**(metadata.get("labels") or {}), **wanted["metadata"]["labels"]},
        "annotations": {
            **(metadata.get("annotations") or {}),
            **wanted["metadata"]["annotations"],
        },
    }
    if updated != current:
        store.update(cluster, resource, updated)


def _merge_rules(current: Obj, wanted: Obj) -> Obj:
    merged = dict(current)
    rules = list(current.get("rules") or [])
    merged["rules"] = rules + [r for r in wanted.get("rules") or [] if r not in rules]
    if "aggregationRule" in wanted and not current.get("aggregationRule"):
        merged["aggregationRule"] = wanted["aggregationRule"]
    return merged


def _merge_subjects(current: Obj, wanted: Obj) -> Obj:
    merged = dict(current)
    subjects = list(current.get("subjects") or [])
    merged["subjects"] = subjects + [s for s in wanted["subjects"] if s not in subjects]
    return merged


def _fill_aggregated(store: Store, cluster: str) -> None:
    """Write every aggregated ClusterRole's gathered rules (the controller keeps them so
    afterwards); views before edits before admins need no order: the gathering repeats
    until nothing changes."""
    resource = by_kind("ClusterRole").store
    changed = True
    while changed:
        changed = False
        roles = store.scan(cluster, resource)
        for role in roles:
            rules = aggregated_rules(role, roles)
            if rules is not None and rules != (role.get("rules") or []):
                store.update(cluster, resource, {**role, "rules": rules})
                changed = True
                break
