"""The serviceaccounts controller: ``default`` in every namespace of every cluster, back
when deleted, never in a namespace being deleted, and only in the clusters it serves."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.controllers.context import ControllerContext
from allot.controllers.serviceaccounts import ServiceAccounts
from allot.controllers.workloads import ClusterContexts, WorkloadKey
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.registry.resources import by_kind
from allot.store import WatchEvent

TENANT = "legal-ai"
ACCOUNTS = by_kind("ServiceAccount").store


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    registry = Registry(tmp_path)
    registry.add_cluster(HOST_CLUSTER)
    registry.add_cluster(TENANT)
    registry.add_cluster("not-a-tenant")
    yield registry
    registry.close()


def controller(registry: Registry) -> ServiceAccounts:
    clock = lambda: dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # noqa: E731
    host = ControllerContext(HOST_CLUSTER, registry.store, registry.handlers, clock)
    return ServiceAccounts(
        ClusterContexts(host, "serviceaccount-controller", {TENANT}.__contains__)
    )


def accounts(registry: Registry, cluster: str) -> list[str]:
    context = ControllerContext(cluster, registry.store, registry.handlers, dt.datetime.now)
    return sorted(
        f"{a['metadata']['namespace']}/{a['metadata']['name']}"
        for a in context.list("ServiceAccount")
    )


def reconcile_all(controller: ServiceAccounts) -> None:
    for key in controller.initial_keys():
        controller.reconcile(key)


def test_every_namespace_of_the_served_clusters_gets_default(registry: Registry) -> None:
    reconcile_all(controller(registry))
    expected = [
        f"{ns}/default" for ns in ("default", "kube-node-lease", "kube-public", "kube-system")
    ]
    assert accounts(registry, HOST_CLUSTER) == expected
    assert accounts(registry, TENANT) == expected
    assert accounts(registry, "not-a-tenant") == []
    tenant_account = registry.store.get(TENANT, ACCOUNTS, "default", "default")
    # only a name and a namespace: nothing a manager owns (upstream strips both), so no entry
    assert "managedFields" not in tenant_account["metadata"]


def test_a_deleted_default_account_comes_back(registry: Registry) -> None:
    accounts_controller = controller(registry)
    reconcile_all(accounts_controller)
    store = registry.store
    deleted = store.get(TENANT, ACCOUNTS, "default", "default")
    store.delete(TENANT, ACCOUNTS, "default", "default")
    keys = accounts_controller.keys_for(
        WatchEvent("DELETED", store.current_rv(), TENANT, "serviceaccounts", deleted)
    )
    assert keys == [WorkloadKey(TENANT, "default", "default")]
    accounts_controller.reconcile(keys[0])
    assert "default/default" in accounts(registry, TENANT)
    other = {**deleted, "metadata": {**deleted["metadata"], "name": "bot"}}
    assert (
        accounts_controller.keys_for(
            WatchEvent("DELETED", store.current_rv(), TENANT, "serviceaccounts", other)
        )
        == []
    )


def test_no_account_in_a_terminating_namespace(registry: Registry) -> None:
    accounts_controller = controller(registry)
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "leaving"},
        "status": {"phase": "Terminating"},
    }
    created = registry.store.create(HOST_CLUSTER, by_kind("Namespace").store, namespace)
    keys = accounts_controller.keys_for(
        WatchEvent("ADDED", registry.store.current_rv(), HOST_CLUSTER, "namespaces", created)
    )
    for key in keys:
        accounts_controller.reconcile(key)
    assert "leaving/default" not in accounts(registry, HOST_CLUSTER)
