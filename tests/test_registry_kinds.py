"""Each served kind's strategy module is the one place its behaviour lives."""

from __future__ import annotations

import datetime as dt
import importlib
import pkgutil

import pytest

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
