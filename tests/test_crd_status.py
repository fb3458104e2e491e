"""A CRD's status as kube-apiserver's apiextensions controllers keep it: defaults and the
empty status on create, then names accepted (or refused for a conflict within the group),
then established; the transition times move only with a status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from allot.controllers.crdstatus import CRDS, CrdStatusController, next_status
from allot.store import WatchEvent
from allot.types import Obj
from tests.batch_harness import Bench, key_of

T0, T1 = "2026-11-27T10:00:00Z", "2026-11-27T10:00:05Z"


def _crd(plural: str, kind: str, **names: Any) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind, **names},
            "versions": [
                {"name": "v1", "served": True, "storage": True,
                 "schema": {"openAPIV3Schema": {"type": "object"}}}
            ],
        },
    }  # fmt: skip


def _accepted(crd: Obj, now: str = T0) -> Obj:
    """The CRD after both steps, with nothing in its way."""
    for _ in range(2):
        crd = {**crd, "status": next_status(crd, [], now)}
    return crd


def test_create_defaults_the_names_and_resets_the_status(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    sent = {**_crd("widgets", "Widget"), "status": {"storedVersions": ["v0"]}}
    created = bench.context.create("CustomResourceDefinition", sent, "test")
    names = created["spec"]["names"]
    assert (names["singular"], names["listKind"]) == ("widget", "WidgetList")
    assert created["spec"]["conversion"] == {"strategy": "None"}
    assert created["status"] == {
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": ["v1"],
    }
    bench.close()


def test_names_are_accepted_then_the_crd_is_established(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    controller = CrdStatusController(bench.contexts("apiextensions-controllers"))
    crd = bench.context.create(
        "CustomResourceDefinition", _crd("widgets", "Widget", shortNames=["wd"]), "test"
    )
    controller.reconcile(key_of(crd))
    named = bench.context.get("CustomResourceDefinition", "", crd["metadata"]["name"])
    assert named is not None
    assert named["status"]["acceptedNames"] == {
        "plural": "widgets", "singular": "widget", "shortNames": ["wd"], "kind": "Widget",
        "listKind": "WidgetList",
    }  # fmt: skip
    conditions = named["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions] == [
        ("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        ("Established", "False", "Installing", "the initial names have been accepted"),
    ]  # fmt: skip
    event = WatchEvent(
        "MODIFIED", 2, "host", "customresourcedefinitions.apiextensions.k8s.io", named
    )
    assert controller.keys_for(event) == [key_of(named)]
    bench.clock.advance(3)
    controller.reconcile(key_of(named))
    established = bench.context.get("CustomResourceDefinition", "", crd["metadata"]["name"])
    assert established is not None
    conditions = {c["type"]: c for c in established["status"]["conditions"]}
    assert (conditions["Established"]["status"], conditions["Established"]["reason"]) == (
        "True", "InitialNamesAccepted"
    )  # fmt: skip
    assert (
        conditions["Established"]["lastTransitionTime"]
        != (conditions["NamesAccepted"]["lastTransitionTime"])
    )
    version = established["metadata"]["resourceVersion"]
    controller.reconcile(key_of(established))  # settled: nothing more is written
    again = bench.context.get("CustomResourceDefinition", "", crd["metadata"]["name"])
    assert again is not None
    assert again["metadata"]["resourceVersion"] == version
    bench.close()


def test_a_name_another_crd_of_the_group_holds_is_refused() -> None:
    gadgets = _accepted(_crd("gadgets", "Gadget", singular="gadget", shortNames=["gd"]))
    clash = _crd("gizmos", "Gadget", singular="gizmo", shortNames=["gd", "gz"])
    status = next_status(clash, [gadgets], T0)
    # free names are taken, the others stay as accepted before (none yet)
    assert status["acceptedNames"] == {"plural": "gizmos", "singular": "gizmo", "kind": ""}
    naming = status["conditions"][0]
    # the short name and the kind conflict: the last one found (the kind) names the
    # condition, as upstream's order of checks leaves it
    assert (naming["status"], naming["reason"], naming["message"]) == (
        "False", "KindConflict", '"Gadget" is already in use'
    )  # fmt: skip
    assert status["conditions"][1] == {
        "type": "Established", "status": "False", "reason": "NotAccepted",
        "message": "not all names are accepted", "lastTransitionTime": T0,
    }  # fmt: skip
    shorts = next_status(_crd("gizmos", "Gizmo", shortNames=["gd", "gadget"]), [gadgets], T0)
    assert shorts["conditions"][0]["reason"] == "ShortNamesConflict"
    assert shorts["conditions"][0]["message"] == (
        '["gd" is already in use, "gadget" is already in use]'
    )
    assert "shortNames" not in shorts["acceptedNames"]


def test_names_freed_by_a_deleted_crd_requeue_its_group(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    controller = CrdStatusController(bench.contexts("apiextensions-controllers"))
    kept = bench.context.create("CustomResourceDefinition", _crd("gizmos", "Gizmo"), "test")
    gone = _crd("gadgets", "Gadget")
    event = WatchEvent("DELETED", 3, "host", CRDS, gone)
    assert controller.keys_for(event) == [key_of(kept)]
    bench.close()


def test_a_new_storage_version_joins_the_stored_ones() -> None:
    crd = _accepted(_crd("widgets", "Widget"))
    crd["spec"]["versions"] = [
        {"name": "v1", "served": True, "storage": False},
        {"name": "v2", "served": True, "storage": True},
    ]
    assert next_status(crd, [], T1)["storedVersions"] == ["v1", "v2"]
