"""What a write costs the registry (issue 30, item 4), counted by :mod:`allot.api.costs`:
each write decodes its body only (the stored object's model is the one its own write
admitted, :mod:`allot.registry.storedmodels`, and never one of another version); a
controller's one write of an object and its status (``update_with_status``) is decoded
and admitted once, yet owned, validated and judged by admission policies as its two
writes would be."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from allot.api.costs import COSTS, itemised
from allot.registry.admission import AdmissionDenied
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.statuses import InvalidObjectError

OPTIONS = WriteOptions(field_manager="ctrl", field_validation="Strict", dry_run=False)
Obj = dict[str, Any]


def _deployment() -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            },
        },
    }


def _create(api: Registry, obj: Obj) -> Obj:
    resource = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    target = Target(resource, namespace, None, "")
    return api.handlers.create("host", target, obj, OPTIONS).object


def _with_status(api: Registry, obj: Obj) -> Obj:
    target = Target(by_kind("Deployment"), "default", "web", "")
    return api.handlers.update_with_status("host", target, obj, OPTIONS).object


def _costs(write: Any) -> tuple[int, int, int]:
    before = COSTS.snapshot()
    write()
    return tuple(a - b for a, b in zip(COSTS.snapshot(), before, strict=True))  # type: ignore[return-value]


def test_each_write_decodes_its_body_only(api: Registry) -> None:
    stored = _create(api, _deployment())
    target = Target(by_kind("Deployment"), "default", "web", "")
    status = Target(by_kind("Deployment"), "default", "web", "status")
    changed = _changed(stored)
    assert _costs(lambda: api.handlers.update("host", target, changed, OPTIONS)) == (1, 1, 1)
    current = api.handlers.get("host", target)
    assert _costs(lambda: api.handlers.update("host", status, current, OPTIONS)) == (1, 1, 1)
    assert _costs(lambda: api.handlers.delete("host", target, {}, False)) == (1, 1, 0)


def test_a_version_written_elsewhere_is_decoded_from_the_store(api: Registry) -> None:
    """The store's own writes (and any not through the handlers) are read as stored: a
    status write keeps the stored spec, so a remembered older model would take it back."""
    stored = _create(api, _deployment())
    moved = copy.deepcopy(stored)
    moved["spec"]["replicas"] = 5
    api.store.update("host", by_kind("Deployment").store, moved)
    current = api.handlers.get("host", Target(by_kind("Deployment"), "default", "web", ""))
    status = Target(by_kind("Deployment"), "default", "web", "status")
    current["status"] = {"observedGeneration": 1}
    written = api.handlers.update("host", status, current, OPTIONS).object
    assert written["spec"]["replicas"] == 5


def _changed(stored: Obj, replicas: int = 2, observed: int = 2) -> Obj:
    changed = copy.deepcopy(stored)
    changed["spec"]["replicas"] = replicas
    changed["status"] = {"observedGeneration": observed, "replicas": 1}
    return changed


@pytest.fixture
def api(tmp_path: Path) -> Any:
    registry = Registry(tmp_path)
    yield registry
    registry.store.close()


def test_one_write_of_object_and_status_is_admitted_once(api: Registry) -> None:
    stored = _create(api, _deployment())
    with itemised() as items:
        before = COSTS.snapshot()
        written = _with_status(api, _changed(stored))
        after = COSTS.snapshot()
    writes, admissions, _ = (a - b for a, b in zip(after, before, strict=True))
    assert (writes, admissions) == (1, 1)
    assert items["admission", "host deployments.apps"] == 1
    assert items["decode", "Deployment"] == 1  # the body: the stored one is remembered
    assert written["spec"]["replicas"] == 2
    assert written["status"] == {"observedGeneration": 2, "replicas": 1}
    assert written["metadata"]["generation"] == 2


def test_its_fields_are_owned_as_by_two_writes(api: Registry) -> None:
    stored = _create(api, _deployment())
    written = _with_status(api, _changed(stored))
    entries = {
        entry.get("subresource", ""): entry
        for entry in written["metadata"]["managedFields"]
        if entry["manager"] == "ctrl" and entry["time"]
    }
    assert set(entries) == {"", "status"}
    assert "f:replicas" in entries[""]["fieldsV1"]["f:spec"]
    assert "f:status" not in entries[""]["fieldsV1"]
    assert set(entries["status"]["fieldsV1"]) == {"f:status"}
    assert set(entries["status"]["fieldsV1"]["f:status"]) == {"f:observedGeneration", "f:replicas"}


def test_its_status_is_validated_as_a_status_update(api: Registry) -> None:
    stored = _create(api, _deployment())
    bad = _changed(stored)
    bad["status"]["replicas"] = -1
    with pytest.raises(InvalidObjectError) as caught:
        _with_status(api, bad)
    assert "status.replicas: Invalid value: -1: must be greater than or equal to 0" in str(
        caught.value
    )


def _policy(resource: str) -> list[Obj]:
    name = resource.replace("/", "-")
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["apps"],
                            "apiVersions": ["v1"],
                            "operations": ["UPDATE"],
                            "resources": [resource],
                        }
                    ]
                },
                "validations": [
                    {"expression": "object.spec.replicas < 2", "message": f"{resource} says no"}
                ],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        },
    ]


@pytest.mark.parametrize("resource", ["deployments", "deployments/status"])
def test_policies_of_the_object_and_of_its_status_both_judge_it(
    api: Registry, resource: str
) -> None:
    stored = _create(api, _deployment())
    for obj in _policy(resource):
        _create(api, obj)
    with pytest.raises(AdmissionDenied) as caught:
        _with_status(api, _changed(stored))
    assert f"denied request: {resource} says no" in str(caught.value)
