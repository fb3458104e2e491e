"""The eviction subresource refuses to evict a pod when a PodDisruptionBudget forbids it
(``tests/scenarios/disruption-budgets.yaml``), and through the registry answers upstream's
429 ``Status`` with its ``DisruptionBudget`` cause."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.registry import HOST_CLUSTER, disruption
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.statuses import RequestError, to_status
from allot.store.errors import NotFound
from allot.types import Obj

SCENARIOS = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "disruption-budgets.yaml").read_text()
)
DELETED_AT = "2026-11-25T12:00:00Z"


def _uid(name: str) -> str:
    return f"uid-{name}"


def _pod(case: dict[str, Any]) -> Obj:
    ready = "True" if case.get("ready", True) else "False"
    metadata: Obj = {"name": case["name"], "labels": case.get("labels", {"app": "web"})}
    owner = case.get("owner")
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": _kind_of(owner), "name": owner, "uid": _uid(owner),
             "controller": True}
        ]  # fmt: skip
    if case.get("deleting"):
        metadata["deletionTimestamp"] = DELETED_AT
    status = {
        "phase": case.get("phase", "Running"),
        "conditions": [{"type": "Ready", "status": ready}],
    }
    return {"metadata": metadata, "status": status}


def _budget(case: dict[str, Any]) -> Obj:
    spec: Obj = {"selector": case.get("selector", {"matchLabels": {"app": "web"}})}
    for field in ("minAvailable", "maxUnavailable"):
        if field in case:
            spec[field] = case[field]
    if "policy" in case:
        spec["unhealthyPodEvictionPolicy"] = case["policy"]
    return {"metadata": {"name": case["name"]}, "spec": spec}


def _kind_of(name: str) -> str:
    return "ReplicaSet" if name.startswith("rs-") else "StatefulSet" if name.startswith(
        "sts-"
    ) else "Deployment"  # fmt: skip


def _finder(controllers: dict[str, Any]) -> disruption.Find:
    """Controllers by name: replicas, or ``{deployment: d}`` for a Deployment's set."""

    def find(kind: str, name: str) -> Obj | None:
        value = controllers.get(name)
        if value is None or _kind_of(name) != kind:
            return None
        metadata: Obj = {"name": name, "uid": _uid(name)}
        if isinstance(value, dict):
            deployment = value["deployment"]
            metadata["ownerReferences"] = [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment,
                 "uid": _uid(deployment), "controller": True}
            ]  # fmt: skip
            value = 1
        return {"metadata": metadata, "spec": {"replicas": value}}

    return find


@pytest.mark.parametrize("case", SCENARIOS, ids=[c["name"] for c in SCENARIOS])
def test_scenario(case: dict[str, Any]) -> None:
    pods = [_pod(p) for p in case["pods"]]
    budgets = [_budget(b) for b in case["budgets"]]
    find = _finder(case.get("controllers", {}))
    names = case["evict"] if isinstance(case["evict"], list) else [case["evict"]]
    for name in names:
        pod = next(p for p in pods if p["metadata"]["name"] == name)
        if case["expect"] == "allowed":
            disruption.check_eviction(pod, budgets, pods, find)
            continue
        with pytest.raises(RequestError) as caught:
            disruption.check_eviction(pod, budgets, pods, find)
        status = to_status(caught.value)
        assert status.code == case["expect"]["code"]
        if status.code == 429:
            assert status.reason == "TooManyRequests"
            assert status.message == disruption.VIOLATION
            assert status.details is not None
            assert [(c.reason, c.message) for c in status.details.causes or []] == [
                ("DisruptionBudget", case["expect"]["cause"])
            ]
        else:
            assert status.message == (
                "Internal error occurred: This pod has more than one PodDisruptionBudget, "
                "which the eviction subresource does not support."
            )


OPTIONS = WriteOptions("test", "Strict", False)
EVICTION = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-0"}}


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    registry = Registry(tmp_path)
    yield registry
    registry.close()


def _create(registry: Registry, kind: str, document: Obj) -> Obj:
    target = Target(by_kind(kind), "default", None, "")
    return registry.handlers.create(HOST_CLUSTER, target, document, OPTIONS).object


def _running_pod(registry: Registry, name: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    created = _create(registry, "Pod", pod)
    created["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    target = Target(by_kind("Pod"), "default", name, "status")
    registry.handlers.update(HOST_CLUSTER, target, created, OPTIONS)


def test_an_eviction_through_the_registry_respects_the_budget(registry: Registry) -> None:
    for name in ("web-0", "web-1"):
        _running_pod(registry, name)
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }
    _create(registry, "PodDisruptionBudget", budget)
    pods = by_kind("Pod")
    registry.handlers.evict(HOST_CLUSTER, Target(pods, "default", "web-0", "eviction"),
                            copy.deepcopy(EVICTION), False)  # fmt: skip
    with pytest.raises(NotFound):
        registry.handlers.get(HOST_CLUSTER, Target(pods, "default", "web-0", ""))
    second = {**EVICTION, "metadata": {"name": "web-1"}}
    with pytest.raises(RequestError) as caught:
        registry.handlers.evict(
            HOST_CLUSTER, Target(pods, "default", "web-1", "eviction"), second, False
        )
    status = to_status(caught.value).to_wire()
    assert status == {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.",
        "reason": "TooManyRequests",
        "details": {
            "causes": [
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget web needs 1 healthy pods and has 1 currently",
                }
            ]
        },
        "code": 429,
    }
    assert registry.handlers.get(HOST_CLUSTER, Target(pods, "default", "web-1", ""))
