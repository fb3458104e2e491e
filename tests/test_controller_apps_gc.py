"""Garbage collection by ownerReferences per DeleteOptions propagation (tests/scenarios/gc.yaml),
through the registry's delete path as kubectl reaches it, in the host and a second cluster."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.controllers.context import ControllerContext
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.registry.handlers import propagation_policy
from allot.registry.resources import by_kind
from allot.types import Obj
from tests.conftest import load_scenarios

SCENARIOS = load_scenarios("gc.yaml")
NAMESPACE = "team"


def _clock() -> dt.datetime:
    return dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _create_objects(context: ControllerContext, objects: list[dict[str, Any]]) -> None:
    uids: dict[str, str] = {}
    for spec in objects:
        owners = spec.get("owner") or []
        owners = [owners] if isinstance(owners, str) else owners
        metadata: Obj = {"name": spec["name"], "namespace": NAMESPACE}
        if owners:
            metadata["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": spec.get("owner_kind", "ConfigMap"),
                    "name": owner,
                    "uid": uids[owner],
                    "blockOwnerDeletion": spec.get("block", False),
                }
                for owner in owners
            ]
        if spec.get("finalizers"):
            metadata["finalizers"] = spec["finalizers"]
        kind = spec.get("kind", "ConfigMap")
        body: Obj = {"metadata": metadata}
        if kind == "Pod":
            body["spec"] = {"containers": [{"name": "c", "image": "busybox"}]}
        created = context.create(kind, body, "test")
        uids[spec["name"]] = created["metadata"]["uid"]


def _run_step(context: ControllerContext, step: dict[str, Any]) -> None:
    if "delete" in step:
        context.delete("ConfigMap", NAMESPACE, step["delete"], step.get("options") or {})
        return
    name = step.get("unfinalize") or step["release"]
    current = context.get("ConfigMap", NAMESPACE, name)
    assert current is not None
    if "unfinalize" in step:
        current["metadata"].pop("finalizers")
    else:
        current["metadata"].pop("ownerReferences")
    context.update("ConfigMap", current, "test")


def _present(context: ControllerContext) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for obj in context.list("ConfigMap", NAMESPACE) + context.list("Pod", NAMESPACE):
        metadata = obj["metadata"]
        entry: dict[str, Any] = {}
        if metadata.get("finalizers"):
            entry["finalizers"] = metadata["finalizers"]
        if metadata.get("deletionTimestamp"):
            entry["deleting"] = True
        found[metadata["name"]] = entry
    return found


@pytest.mark.parametrize("cluster", [HOST_CLUSTER, "legal-ai"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_propagation(tmp_path: Path, scenario: dict[str, Any], cluster: str) -> None:
    registry = Registry(tmp_path, clock=_clock)
    context = ControllerContext(cluster, registry.store, registry.handlers, _clock)
    context.create("Namespace", {"metadata": {"name": NAMESPACE}}, "test")
    _create_objects(context, scenario["objects"])
    for step in scenario["steps"]:
        _run_step(context, step)
        assert _present(context) == step["present"]
        for name, owners in (step.get("owners") or {}).items():
            current = context.get("ConfigMap", NAMESPACE, name)
            assert current is not None
            refs = current["metadata"].get("ownerReferences") or []
            assert [ref["name"] for ref in refs] == owners
    registry.close()


@pytest.mark.parametrize(
    ("kind", "options", "finalizers", "expected"),
    [
        ("ConfigMap", {}, [], "Background"),
        ("Pod", {}, [], "Background"),
        ("ConfigMap", {"propagationPolicy": "Foreground"}, [], "Foreground"),
        ("ConfigMap", {"orphanDependents": True}, [], "Orphan"),
        ("ConfigMap", {"orphanDependents": False}, ["orphan"], "Background"),
        ("ConfigMap", {}, ["orphan"], "Orphan"),
        ("ConfigMap", {}, ["foregroundDeletion"], "Foreground"),
    ],
)
def test_policy_defaults(kind: str, options: Obj, finalizers: list[str], expected: str) -> None:
    current: Obj = {"metadata": {"name": "x", "finalizers": finalizers}}
    assert propagation_policy(by_kind(kind), current, options) == expected


FORESTS = st.integers(2, 8).flatmap(
    lambda size: st.tuples(
        st.tuples(*[st.integers(-1, i - 1) for i in range(size)]),  # parent (-1: a root)
        st.lists(st.booleans(), min_size=size, max_size=size),  # blockOwnerDeletion
        st.lists(st.booleans(), min_size=size, max_size=size),  # holds a finalizer
    )
)


def _descendants(parents: tuple[int, ...], root: int) -> set[int]:
    found = {root}
    for node in range(len(parents)):  # parents come before their children
        if parents[node] in found:
            found.add(node)
    return found


@settings(max_examples=40, deadline=None)
@given(forest=FORESTS, policy=st.sampled_from(["Background", "Foreground", "Orphan"]))
def test_every_policy_ends_as_its_definition_says(
    forest: tuple[tuple[int, ...], list[bool], list[bool]], policy: str
) -> None:
    """Whatever the owner forest, blocking flags and finalizers: once every finalizer is
    removed, Background and Foreground leave none of the deleted object's descendants,
    Orphan leaves all of them with no reference to it, and nothing else is touched."""
    parents, blocks, holds = forest
    objects = [
        {
            "name": f"o{i}",
            **({"owner": f"o{parents[i]}", "block": blocks[i]} if parents[i] >= 0 else {}),
            **({"finalizers": ["example.com/hold"]} if holds[i] else {}),
        }
        for i in range(len(parents))
    ]
    with tempfile.TemporaryDirectory() as scratch:
        registry = Registry(Path(scratch), clock=_clock)
        context = ControllerContext("legal-ai", registry.store, registry.handlers, _clock)
        context.create("Namespace", {"metadata": {"name": NAMESPACE}}, "test")
        _create_objects(context, objects)
        context.delete("ConfigMap", NAMESPACE, "o0", {"propagationPolicy": policy})
        for _ in range(len(parents)):
            for held in [n for n, entry in _present(context).items() if "deleting" in entry]:
                current = context.get("ConfigMap", NAMESPACE, held)
                assert current is not None
                kept = [f for f in current["metadata"]["finalizers"] if f != "example.com/hold"]
                current["metadata"]["finalizers"] = kept or None
                if not kept:
                    del current["metadata"]["finalizers"]
                context.update("ConfigMap", current, "test")
        present = set(_present(context))
        gone = {0} if policy == "Orphan" else _descendants(parents, 0)
        assert present == {f"o{i}" for i in range(len(parents)) if i not in gone}
        for name in present:
            current = context.get("ConfigMap", NAMESPACE, name)
            assert current is not None
            owners = [ref["name"] for ref in current["metadata"].get("ownerReferences") or []]
            assert "o0" not in owners
            assert all(owner in present for owner in owners)
        registry.close()
