"""Field ownership and server-side apply (``allot.managedfields``), table-driven.

The cases are ``tests/scenarios/server-side-apply.yaml`` (what upstream's field manager
does, step by step, with exact objects, entries and error texts); hypothesis checks the
invariants of apply on flat maps against a small model of the rules; a few direct tests
pin the ``fieldsV1`` encoding and path printing.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.api.apiextensions_v1 import custom_model
from allot.api.apps_v1 import Deployment
from allot.api.core_v1 import ConfigMap, Pod
from allot.managedfields import fieldpaths, managers, schema
from allot.managedfields.schema import Atom
from allot.managedfields.typed import MISSING, ShapeError

SCENARIOS = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "server-side-apply.yaml").read_text()
)
KINDS = {"ConfigMap": (ConfigMap, "v1"), "Pod": (Pod, "v1"), "Deployment": (Deployment, "apps/v1")}


def _kind(case: dict[str, Any]) -> tuple[Atom, str]:
    if case["kind"] == "Widget":
        return schema.of_model(custom_model("Widget", "v1", case["schema"])), "example.com/v1"
    model, version = KINDS[case["kind"]]
    return schema.of_model(model), version


def _typed(case: dict[str, Any], version: str, obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj.setdefault("metadata", {}).setdefault("name", "obj")
    return {"apiVersion": version, "kind": case["kind"], **obj}


def _shown(entries: list[dict[str, Any]], expected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries with the keys the expectation names (``time`` only where given)."""
    keys = ("manager", "operation", "subresource", "fieldsV1")
    shown = []
    for entry, wanted in zip(entries, expected + [{}] * len(entries), strict=False):
        names = keys + (("time",) if "time" in wanted else ())
        shown.append({k: entry[k] for k in names if k in entry})
    return shown


def _last_applied(live: Any) -> Any:
    if live is MISSING:
        return None
    annotations = live["metadata"].get("annotations") or {}
    text = annotations.get("kubectl.kubernetes.io/last-applied-configuration")
    return json.loads(text) if text else None


class Harness:
    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        self.atom, self.version = _kind(case)
        self.live: Any = MISSING
        self.entries: list[managers.Entry] = []

    def write(self, step: dict[str, Any], action: dict[str, Any], number: int) -> managers.Write:
        subresource = action.get("subresource", "")
        status = self.case.get("statusSubresource", False)
        return managers.Write(
            action.get("manager", ""),
            self.version,
            self.atom,
            f"2026-01-01T00:00:{number:02d}Z",
            subresource,
            (("f:status",),) if status and not subresource else (),
            ("f:status",) if subresource == "status" else None,
        )

    def run(self, step: dict[str, Any], number: int) -> str | None:
        if "set" in step:
            self.live, self.entries = _typed(self.case, self.version, step["set"]["object"]), []
            return None
        action = step.get("apply") or step["update"]
        write = self.write(step, action, number)
        obj = _typed(self.case, self.version, action["object"])
        try:
            if "apply" in step:
                new, self.entries, _ = managers.apply(
                    self.entries,
                    self.live,
                    obj,
                    write,
                    force=action.get("force", False),
                    last_applied=_last_applied(self.live),
                )
            else:
                creating = self.live is MISSING
                self.entries = managers.update(
                    self.entries, self.live, obj, write, creating=creating
                )
                new = obj
        except (managers.ApplyConflicts, ShapeError) as err:
            return str(err)
        if self.case.get("statusSubresource") and not action.get("subresource"):
            new = {k: v for k, v in new.items() if k != "status"}  # the strategy keeps status
            if self.live is not MISSING and "status" in self.live:
                new["status"] = self.live["status"]
        self.live = new
        return None


@pytest.mark.parametrize("case", SCENARIOS, ids=[c["name"] for c in SCENARIOS])
def test_server_side_apply_scenario(case: dict[str, Any]) -> None:
    harness = Harness(case)
    for number, step in enumerate(case["steps"], start=1):
        error = harness.run(step, number)
        assert error == step.get("error"), f"step {number}"
        if "object" in step:
            expected = _typed(case, harness.version, step["object"])
            assert harness.live == expected, f"step {number}"
        if "managed" in step:
            entries = managers.write(harness.entries)
            assert _shown(entries, step["managed"]) == step["managed"], f"step {number}"


# ------------------------------------------------------------------ encoding
def test_fields_v1_round_trips_and_marks_members_with_children() -> None:
    members = frozenset(
        {
            ("f:data",),
            ("f:data", "f:x"),
            ("f:spec", 'k:{"name":"a"}'),
            ("f:spec", 'k:{"name":"a"}', "f:image"),
        }
    )
    encoded = fieldpaths.encode(members)
    assert encoded == {
        "f:data": {".": {}, "f:x": {}},
        "f:spec": {'k:{"name":"a"}': {".": {}, "f:image": {}}},
    }
    assert fieldpaths.decode(encoded) == members
    assert fieldpaths.contains(encoded, ("f:data",))
    assert not fieldpaths.contains(encoded, ("f:spec",))


def test_paths_print_as_upstream_prints_them() -> None:
    key = fieldpaths.key_element([("protocol", "TCP"), ("containerPort", 80)])
    assert key == 'k:{"containerPort":80,"protocol":"TCP"}'
    path = ("f:spec", "f:ports", key, "f:name")
    assert fieldpaths.render(path) == '.spec.ports[containerPort=80,protocol="TCP"].name'
    assert fieldpaths.render(("f:finalizers", fieldpaths.value_element("a<b"))) == (
        '.finalizers[="a<b"]'
    )
    assert fieldpaths.value_element("a<b") == 'v:"a\\u003cb"'


def test_conflicts_list_members_before_children_and_keys_by_value() -> None:
    ports = [fieldpaths.key_element([("port", n)]) for n in (8080, 80)]
    members = [("f:spec", "f:template", "f:x"), ("f:spec", "f:replicas")]
    members += [("f:spec", "f:ports", p) for p in ports]
    assert fieldpaths.in_order(members) == [
        ("f:spec", "f:replicas"),
        ("f:spec", "f:ports", ports[1]),
        ("f:spec", "f:ports", ports[0]),
        ("f:spec", "f:template", "f:x"),
    ]


# ---------------------------------------------------------------- invariants
CONFIG_MAP = schema.of_model(ConfigMap)
DATA = st.dictionaries(
    st.sampled_from("abcdef"), st.sampled_from(["1", "2"]), min_size=1, max_size=4
)
"""Never empty: an applied empty ``data`` owns ``.data`` itself, and a later apply that
brings ``data: {}`` back over the omitted map conflicts with it, as upstream's does."""
APPLIES = st.lists(st.tuples(st.sampled_from(["m1", "m2", "m3"]), DATA), min_size=1, max_size=8)


def _config(data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}


def _owned(entries: list[managers.Entry]) -> dict[str, set[str]]:
    """The data keys each manager owns (an applied empty ``data`` owns none of them)."""
    owned = {e.manager: {p[1][2:] for p in e.members if len(p) == 2} for e in entries}
    return {manager: keys for manager, keys in owned.items() if keys}


@settings(max_examples=150, deadline=None)
@given(APPLIES)
def test_forced_applies_follow_the_ownership_rules(
    applies: list[tuple[str, dict[str, str]]],
) -> None:
    """A model of the rules on one flat map: the applier gets exactly what it applies;
    others lose the keys whose value changed; a key the applier dropped goes unless
    someone else still owns it."""
    live: Any = MISSING
    entries: list[managers.Entry] = []
    values: dict[str, str] = {}
    owners: dict[str, set[str]] = {}
    for number, (manager, data) in enumerate(applies):
        write = managers.Write(manager, "v1", CONFIG_MAP, f"t{number}")
        live, entries, _ = managers.apply(entries, live, _config(data), write, force=True)
        dropped = owners.get(manager, set()) - set(data)
        changed = {k for k, v in data.items() if values.get(k) != v}
        owners = {m: keys - changed for m, keys in owners.items() if m != manager}
        owners[manager] = set(data)
        others = set().union(*(keys for m, keys in owners.items() if m != manager))
        values = {k: v for k, v in values.items() if k not in dropped - others}
        values.update(data)
        owners = {m: keys & set(values) for m, keys in owners.items() if keys & set(values)}
        assert (live.get("data") or {}) == values
        assert _owned(entries) == owners
        for keys in owners.values():  # nobody owns a field the object does not have
            assert keys <= set(values)


@settings(max_examples=100, deadline=None)
@given(APPLIES, st.sampled_from(["m1", "m2", "m3"]), DATA)
def test_applying_the_same_configuration_twice_changes_nothing(
    applies: list[tuple[str, dict[str, str]]], manager: str, data: dict[str, str]
) -> None:
    live: Any = MISSING
    entries: list[managers.Entry] = []
    for number, (who, config) in enumerate([*applies, (manager, data)]):
        write = managers.Write(who, "v1", CONFIG_MAP, f"t{number}")
        live, entries, _ = managers.apply(entries, live, _config(config), write, force=True)
    again = managers.Write(manager, "v1", CONFIG_MAP, "later")
    same, after, changed = managers.apply(entries, live, _config(data), again, force=False)
    assert not changed
    assert same == live
    assert managers.write(after) == managers.write(entries)


def _example_documents() -> list[tuple[Any, dict[str, Any]]]:
    """Every example manifest of a served built-in kind, with its model."""
    from allot.registry.resources import built_in_resources

    models = {(r.api_version, r.kind): r.info.model for r in built_in_resources()}
    found = []
    for path in sorted((Path(__file__).parent.parent / "examples").rglob("*.yaml")):
        try:
            documents = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError:
            continue
        for document in documents:
            if isinstance(document, dict):
                model = models.get((str(document.get("apiVersion")), str(document.get("kind"))))
                if model is not None:
                    found.append((model, document))
    return found


EXAMPLES = _example_documents()


@pytest.mark.parametrize(("model", "document"), EXAMPLES, ids=[d["kind"] for _, d in EXAMPLES])
def test_a_create_encoded_in_one_walk_equals_the_compared_field_set(
    model: Any, document: dict[str, Any]
) -> None:
    atom = schema.of_model(model)
    nested = (("f:status",), ("f:metadata", "f:labels"), ("f:spec", "f:template", "f:metadata"))
    for ignored in ((), (("f:status",),), nested, (("f:spec", "f:selector"), ("f:data",))):
        write = managers.Write("creator", document["apiVersion"], atom, "t", "", ignored)
        fast = managers.write(managers.update([], MISSING, document, write, creating=True))
        slow = managers.write(managers._created_by_paths(document, write))
        assert fast == slow


# --------------------------------------------------------- through the handlers
def _write(manager: str, force: bool = False) -> Any:
    from allot.registry.handlers import WriteOptions

    return WriteOptions(manager, "Strict", False, force)


def _apply_patch(context: Any, target: Any, document: dict[str, Any], manager: str) -> Any:
    body = json.dumps(document).encode()
    return context.handlers.patch(
        "host", target, "application/apply-patch+yaml", body, _write(manager)
    ).object


def test_handlers_keep_status_applies_apart_and_a_reset_stops_tracking(
    team_context: Any,
) -> None:
    from allot.registry.errors import ApplyConflict
    from allot.registry.requests import Target
    from allot.registry.resources import by_kind

    deployments = by_kind("Deployment")
    main = Target(deployments, "team", "web", "")
    status = Target(deployments, "team", "web", "status")
    labels = {"app": "web"}
    spec = {
        "replicas": 1,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "a", "image": "i"}]},
        },
    }
    document = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    _apply_patch(team_context, main, {**document, "spec": spec}, "alice")
    _apply_patch(team_context, status, {**document, "status": {"replicas": 1}}, "ctrl")
    stored = team_context.get("Deployment", "team", "web")
    entries = [(e["manager"], e.get("subresource")) for e in stored["metadata"]["managedFields"]]
    assert entries == [("alice", None), ("ctrl", "status")]
    assert stored["metadata"]["managedFields"][1]["fieldsV1"] == {"f:status": {"f:replicas": {}}}

    with pytest.raises(ApplyConflict) as refused:
        _apply_patch(team_context, main, {**document, "spec": {**spec, "replicas": 2}}, "bob")
    assert (
        str(refused.value) == 'Apply failed with 1 conflict: conflict with "alice": .spec.replicas'
    )
    assert refused.value.code == 409
    assert refused.value.details is not None
    causes = [c.model_dump(exclude_none=True) for c in refused.value.details.causes or []]
    assert causes == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "alice"',
            "field": ".spec.replicas",
        }
    ]

    reset = json.dumps({"metadata": {"managedFields": [{}]}}).encode()
    team_context.handlers.patch("host", main, "application/merge-patch+json", reset, _write("x"))
    patch = json.dumps({"metadata": {"labels": {"tier": "web"}}}).encode()
    team_context.handlers.patch("host", main, "application/merge-patch+json", patch, _write("y"))
    assert "managedFields" not in team_context.get("Deployment", "team", "web")["metadata"]


UPDATES = st.lists(st.tuples(st.sampled_from(["u1", "u2", "u3"]), DATA), min_size=1, max_size=10)


@settings(max_examples=150, deadline=None)
@given(UPDATES)
def test_updates_partition_the_fields_among_their_last_writers(
    updates: list[tuple[str, dict[str, str]]],
) -> None:
    """With updates only, every key of the object has exactly one owner: the last manager
    whose write added it or changed its value; a removed key has none."""
    live: Any = MISSING
    entries: list[managers.Entry] = []
    owner: dict[str, str] = {}
    values: dict[str, str] = {}
    for number, (manager, data) in enumerate(updates):
        write = managers.Write(manager, "v1", CONFIG_MAP, f"t{number:02d}")
        new = _config(data)
        entries = managers.update(entries, live, new, write, creating=live is MISSING)
        owner = {k: m for k, m in owner.items() if k in data}
        owner.update({k: manager for k, v in data.items() if values.get(k) != v})
        live, values = new, dict(data)
        owned = [(m, k) for m, keys in _owned(entries).items() for k in keys]
        assert sorted(owned) == sorted((m, k) for k, m in owner.items())


def test_garbage_in_managed_fields_is_dropped_rather_than_failing_the_write(
    team_context: Any,
) -> None:
    """A client may write managedFields; entries that do not decode are ignored for the
    stored ones (none for a create), as upstream's field manager does, never a 500."""
    garbage = [{"manager": "x", "operation": "Update", "fieldsV1": {"f:data": "bad"}}]
    team_context.create(
        "ConfigMap",
        {
            "metadata": {"name": "c", "namespace": "team", "managedFields": garbage},
            "data": {"a": "1"},
        },
        "creator",
    )
    stored = team_context.get("ConfigMap", "team", "c")
    assert [e["manager"] for e in stored["metadata"]["managedFields"]] == ["creator"]
    assert stored["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}


def test_a_write_without_field_manager_is_managed_by_its_user_agent_product() -> None:
    from allot.apiserver.app import _manager_from_user_agent

    agent = "kubectl/v1.37.1 (linux/amd64) kubernetes/f78e722"
    assert _manager_from_user_agent(agent) == "kubectl"
    assert _manager_from_user_agent("OpenAPI-Generator/37.0.2/python") == "OpenAPI-Generator"
    assert _manager_from_user_agent("a\x00b" + "c" * 200) == "ab" + "c" * 126


def _created_fields(context: Any, kind: str, document: dict[str, Any]) -> dict[str, Any]:
    name = document["metadata"]["name"]
    document["metadata"].setdefault("namespace", "team")
    context.create(kind, document, "kubectl-client-side-apply")
    stored = context.get(kind, document["metadata"]["namespace"], name)
    [entry] = stored["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl-client-side-apply"
    fields: dict[str, Any] = entry["fieldsV1"]
    return fields


def test_what_the_server_completes_on_a_create_is_owned_by_no_one(team_context: Any) -> None:
    """Issue 28: upstream records a create's fields before its strategy and mutating
    admission complete the object, so the pod's service account, a Job's selector, a
    Service's cluster IP, a claim's default storage class and its protection finalizer
    are no one's: kubectl's move from client-side to server-side apply then leaves them
    be (it warned, failing to drop ``serviceAccountName`` from a pod)."""
    default = {"storageclass.kubernetes.io/is-default-class": "true"}
    storage = {"metadata": {"name": "fast", "annotations": default}, "provisioner": "p"}
    team_context.create("StorageClass", storage, "admin")
    container = {"name": "a", "image": "i"}
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [container]}}
    spec = _created_fields(team_context, "Pod", pod)["f:spec"]
    assert sorted(spec) == ["f:containers", "f:restartPolicy", "f:securityContext"]
    assert team_context.get("Pod", "team", "p")["spec"]["serviceAccountName"] == "default"

    template = {"spec": {"containers": [container], "restartPolicy": "Never"}}
    job = _created_fields(
        team_context, "Job", {"metadata": {"name": "j"}, "spec": {"template": template}}
    )
    assert "f:selector" not in job["f:spec"]
    assert sorted(job["f:spec"]["f:template"]) == ["f:spec"]  # not the labels it was given

    service = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    assert not {"f:clusterIP", "f:clusterIPs"} & set(
        _created_fields(team_context, "Service", service)["f:spec"]
    )

    resources = {"requests": {"storage": "1Gi"}}
    claim = {
        "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": resources},
    }
    fields = _created_fields(team_context, "PersistentVolumeClaim", claim)
    assert "f:storageClassName" not in fields["f:spec"]
    assert "f:finalizers" not in fields.get("f:metadata", {})
    stored = team_context.get("PersistentVolumeClaim", "team", "c")
    assert (stored["spec"]["storageClassName"], stored["metadata"]["finalizers"]) == (
        "fast",
        ["kubernetes.io/pvc-protection"],
    )
