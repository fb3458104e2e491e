"""The clusterrole-aggregation controller: a ClusterRole labelled ``aggregate-to-view``
extends ``view``, ``edit`` and ``admin`` in its own cluster only, and leaves them when its
label or it goes; the RBAC authorizer sees the result."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.controllers.clusterroleaggregation import ClusterRoleAggregation
from allot.controllers.context import ControllerContext
from allot.controllers.workloads import ClusterContexts
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.rbac.identity import UserInfo
from allot.registry.rbac.rules import Attributes
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.store import WatchEvent
from allot.types import Obj

TENANT = "legal-ai"
ROLES = by_kind("ClusterRole")
WIDGETS = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}
VIEWER: Obj = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {
        "name": "widget-viewer",
        "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
    },
    "rules": [WIDGETS],
}


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    registry = Registry(tmp_path)
    registry.add_cluster(TENANT)
    yield registry
    registry.close()


def run(registry: Registry, events: list[WatchEvent]) -> None:
    """Reconcile the keys of ``events``, then of the events those writes make, until quiet
    (as the controller manager feeds the controller its own writes)."""
    clock = lambda: dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # noqa: E731
    host = ControllerContext(HOST_CLUSTER, registry.store, registry.handlers, clock)
    controller = ClusterRoleAggregation(
        ClusterContexts(host, "clusterrole-aggregation-controller", {TENANT}.__contains__)
    )
    for _ in range(5):
        keys = {key for event in events for key in controller.keys_for(event)}
        events = []
        registry.store.add_listener(events.append)
        for key in sorted(keys, key=str):
            controller.reconcile(key)
        registry.store.remove_listener(events.append)
        if not events:
            return
    raise AssertionError("aggregation did not settle")


def rules(registry: Registry, cluster: str, name: str) -> list[object]:
    found: list[object] = registry.store.get(cluster, ROLES.store, "", name)["rules"]
    return found


def write(registry: Registry, cluster: str, role: Obj) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    registry.store.add_listener(events.append)
    options = WriteOptions("test", "Strict", False)
    registry.handlers.create(cluster, Target(ROLES, None, None, ""), role, options)
    registry.store.remove_listener(events.append)
    return events


def test_a_labelled_role_extends_view_edit_and_admin_of_its_cluster(registry: Registry) -> None:
    events = write(registry, TENANT, VIEWER)
    run(registry, events)
    for name in ("view", "edit", "admin"):
        assert WIDGETS in rules(registry, TENANT, name), name
        assert WIDGETS not in rules(registry, HOST_CLUSTER, name), name
    reader = UserInfo("reader", groups=("readers",))
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "readers-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "readers"}],
    }
    options = WriteOptions("test", "Strict", False)
    target = Target(by_kind("ClusterRoleBinding"), None, None, "")
    registry.handlers.create(TENANT, target, binding, options)
    asked = Attributes(reader, "get", api_group="example.com", resource="widgets", name="w")
    assert registry.authorizer.authorize(TENANT, asked).allowed


def test_a_role_that_loses_its_label_leaves_the_aggregate(registry: Registry) -> None:
    run(registry, write(registry, TENANT, VIEWER))
    events: list[WatchEvent] = []
    registry.store.add_listener(events.append)
    target = Target(ROLES, None, "widget-viewer", "")
    registry.handlers.delete(TENANT, target, {}, False)
    registry.store.remove_listener(events.append)
    run(registry, events)
    assert WIDGETS not in rules(registry, TENANT, "view")
    assert WIDGETS not in rules(registry, TENANT, "admin")
