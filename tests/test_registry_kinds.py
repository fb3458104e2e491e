"""Each served kind's strategy module is the one place its behaviour lives."""

from __future__ import annotations

import datetime as dt
import importlib
import inspect
import pkgutil
import re

import pytest
from kubernetes import client

from allot.api.kinds import KINDS
from allot.registry import kinds as kindstrategies
from allot.registry.kinds import find_strategy, strategies, strategy, table_for
from allot.registry.resources import by_kind

NOW = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)


def test_every_served_kind_has_exactly_one_strategy() -> None:
    assert sorted(strategies()) == sorted(info.kind for info in KINDS)
    for info in KINDS:
        details = strategy(info.kind)
        assert details.singular == info.kind.lower()
        assert by_kind(info.kind).subresources == details.subresources


def test_each_strategy_module_declares_the_kinds_the_lazy_table_gives_it() -> None:
    helpers = {"columns", "workloadcolumns"}
    names = {m.name for m in pkgutil.iter_modules(kindstrategies.__path__)} - helpers
    assert set(kindstrategies._MODULES.values()) == names
    for name in names:
        module = importlib.import_module(f"allot.registry.kinds.{name}")
        declared = {each.kind for each in module.STRATEGIES}
        assert declared == {k for k, m in kindstrategies._MODULES.items() if m == name}


def test_a_kind_that_is_not_built_in_has_no_strategy() -> None:
    assert find_strategy("Widget") is None
    with pytest.raises(KeyError):
        strategy("Widget")


def test_tables_have_a_cell_per_column() -> None:
    obj = {
        "metadata": {
            "name": "x",
            "namespace": "default",
            "creationTimestamp": "2026-11-24T00:00:00Z",
        },
        "spec": {},
        "status": {},
    }
    for info in KINDS:
        table = table_for(info.plural)
        if table is None:
            continue
        assert len(table.cells(obj, NOW)) == len(table.columns), info.kind


def test_only_claims_and_pods_charge_beyond_their_count() -> None:
    charging = {k for k, s in strategies().items() if s.quota is not None}
    assert charging == {"ResourceClaim", "Pod"}
    pods, claims = strategy("Pod").quota, strategy("ResourceClaim").quota
    assert pods is not None
    assert claims is not None
    assert pods.charges({"requests.nvidia.com/gpu"})
    assert not claims.charges({"pods"})


def test_initial_status_is_the_strategy_s() -> None:
    pod: dict[str, object] = {"status": {"phase": "Running"}}
    prepare = strategy("Pod").initial_status
    assert prepare is not None
    prepare(pod)
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    claim: dict[str, object] = {"status": {"allocation": {}}}
    drop = strategy("ResourceClaim").initial_status
    assert drop is not None
    drop(claim)
    assert "status" not in claim


PENDING_DELETES = {"Namespace", "CustomResourceDefinition"}
"""Kinds the official client declares as ``object`` but whose upstream delete is always
pending (a finalizer: ``Terminating``, the CRD's cleanup), so it answers with the object."""


def _client_delete_type(info_group: str, kind: str, namespaced: bool) -> str | None:
    """The type the official client declares for a delete of ``kind`` (None: not in it)."""
    apis = {
        "": client.CoreV1Api,
        "apps": client.AppsV1Api,
        "batch": client.BatchV1Api,
        "resource.k8s.io": client.ResourceV1Api,
        "admissionregistration.k8s.io": client.AdmissionregistrationV1Api,
        "apiextensions.k8s.io": client.ApiextensionsV1Api,
        "rbac.authorization.k8s.io": client.RbacAuthorizationV1Api,
        "policy": client.PolicyV1Api,
        "coordination.k8s.io": client.CoordinationV1Api,
    }
    api = apis.get(info_group)
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()
    method = getattr(
        api, f"delete_{'namespaced_' if namespaced else ''}{snake}_with_http_info", None
    )
    if method is None:
        return None
    declared = re.search(r"'200': \"([^\"]+)\"", inspect.getsource(method))
    return declared.group(1) if declared else None


def test_deletes_answer_with_the_object_exactly_where_upstream_does() -> None:
    """The official client is generated from upstream's OpenAPI, which declares the kind's
    own type for a delete only where its storage returns the deleted object."""
    checked = 0
    for info in KINDS:
        declared = _client_delete_type(info.group, info.kind, info.namespaced)
        if declared is None:
            continue  # allot's own kinds (Tenant, Alert)
        returns_object = declared != "object" or info.kind in PENDING_DELETES
        assert strategy(info.kind).returns_deleted_object is returns_object, info.kind
        checked += 1
    assert checked >= 20
