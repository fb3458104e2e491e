"""The SQLite object store: versions, concurrency, finalizers, garbage collection, watches."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.statuses import to_status
from allot.store import Resource, Store
from allot.store.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Expired,
    NamespaceTerminating,
    NotFound,
    TooLarge,
)
from allot.store.objects import MAX_OBJECT_BYTES, WatchEvent

NAMESPACES = Resource("", "namespaces", "Namespace", False)
CLAIMS = Resource("resource.k8s.io", "resourceclaims", "ResourceClaim", True)
CLOCK = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


def _store(path: Path) -> Store:
    store = Store(path / "state.db", clock=lambda: CLOCK, seed=1)
    store.create("host", NAMESPACES, {"metadata": {"name": "default"}})
    return store


def _claim(name: str, **metadata: object) -> dict[str, object]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", **metadata},
        "spec": {},
    }


def test_create_sets_identity_and_versions(tmp_path: Path) -> None:
    store = _store(tmp_path)
    first = store.create("host", CLAIMS, _claim("a"))
    second = store.create("host", CLAIMS, _claim("b"))
    assert first["metadata"]["creationTimestamp"] == "2026-11-21T12:00:00Z"
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    assert first["metadata"]["uid"] != second["metadata"]["uid"]
    with pytest.raises(AlreadyExists, match=r'resourceclaims\.resource\.k8s\.io "a" already'):
        store.create("host", CLAIMS, _claim("a"))


def test_generate_name_and_missing_namespace(tmp_path: Path) -> None:
    store = _store(tmp_path)
    made = store.create(
        "host", CLAIMS, {"metadata": {"generateName": "pod-gpu-", "namespace": "default"}}
    )
    name = made["metadata"]["name"]
    assert name.startswith("pod-gpu-")
    assert len(name) == len("pod-gpu-") + 5
    with pytest.raises(NotFound, match='namespaces "nope" not found'):
        store.create("host", CLAIMS, {"metadata": {"name": "x", "namespace": "nope"}})
    with pytest.raises(BadRequest):
        store.create("host", CLAIMS, {"metadata": {"name": "x"}})


def test_stale_updates_conflict_and_nothing_is_lost(tmp_path: Path) -> None:
    store = _store(tmp_path)
    created = store.create("host", CLAIMS, _claim("a"))
    updated = dict(created, spec={"devices": {}})
    store.update("host", CLAIMS, updated)
    with pytest.raises(Conflict, match="the object has been modified"):
        store.update("host", CLAIMS, dict(created, spec={"devices": {"requests": []}}))
    assert store.get("host", CLAIMS, "default", "a")["spec"] == {"devices": {}}


def test_clusters_are_separate(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.create("tenant", NAMESPACES, {"metadata": {"name": "default"}})
    store.create("host", CLAIMS, _claim("a"))
    with pytest.raises(NotFound):
        store.get("tenant", CLAIMS, "default", "a")
    assert store.list_objects("tenant", CLAIMS)[0] == []


def test_finalizers_delay_deletion(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.create("host", CLAIMS, _claim("a", finalizers=["example.com/keep"]))
    marked, removed = store.delete("host", CLAIMS, "default", "a")
    assert not removed
    assert marked["metadata"]["deletionTimestamp"] == "2026-11-21T12:00:00Z"
    marked["metadata"]["finalizers"] = []
    store.update("host", CLAIMS, marked)
    with pytest.raises(NotFound):
        store.get("host", CLAIMS, "default", "a")


def test_owner_references_are_garbage_collected(tmp_path: Path) -> None:
    store = _store(tmp_path)
    owner = store.create("host", CLAIMS, _claim("owner"))
    store.create(
        "host",
        CLAIMS,
        _claim(
            "child",
            ownerReferences=[
                {
                    "apiVersion": "v1",
                    "kind": "ResourceClaim",
                    "name": "owner",
                    "uid": owner["metadata"]["uid"],
                }
            ],
        ),
    )
    store.delete("host", CLAIMS, "default", "owner")
    assert store.list_objects("host", CLAIMS)[0] == []


def test_deleting_a_namespace_deletes_its_objects(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.create("host", NAMESPACES, {"metadata": {"name": "team"}})
    store.create("host", CLAIMS, {"metadata": {"name": "a", "namespace": "team"}})
    store.delete("host", NAMESPACES, "", "team")
    assert store.list_objects("host", CLAIMS, "team")[0] == []


def _conditions(store: Store, namespace: str) -> dict[str, tuple[str, str, str]]:
    obj = store.get("host", NAMESPACES, "", namespace)
    return {
        c["type"]: (c["status"], c["reason"], c["message"])
        for c in obj["status"].get("conditions") or []
    }


def test_a_namespace_terminates_until_its_last_object_goes(tmp_path: Path) -> None:
    """Upstream's namespace controller: the namespace stays ``Terminating`` (new content
    refused, its conditions naming what remains) while a finalizer holds an object in it,
    and goes with that object's last finalizer; created again, it starts empty."""
    store = _store(tmp_path)
    store.create("host", NAMESPACES, {"metadata": {"name": "team"}, "status": {"phase": "Active"}})
    held = {"name": "held", "namespace": "team", "finalizers": ["example.com/hold"]}
    store.create("host", CLAIMS, {"metadata": held})
    store.create("host", CLAIMS, {"metadata": {"name": "free", "namespace": "team"}})
    answer, removed = store.delete("host", NAMESPACES, "", "team")
    assert not removed
    assert answer["status"]["phase"] == "Terminating"
    assert [c["metadata"]["name"] for c in store.list_objects("host", CLAIMS, "team")[0]] == [
        "held"
    ]
    conditions = _conditions(store, "team")
    assert conditions["NamespaceContentRemaining"] == (
        "True",
        "SomeResourcesRemain",
        "Some resources are remaining: resourceclaims.resource.k8s.io has 1 resource instances",
    )
    assert conditions["NamespaceFinalizersRemaining"] == (
        "True",
        "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 "
        "resource instances",
    )
    assert conditions["NamespaceDeletionContentFailure"][:2] == ("False", "ContentDeleted")
    with pytest.raises(
        NamespaceTerminating, match="unable to create new content in namespace team"
    ):
        store.create("host", CLAIMS, {"metadata": {"name": "late", "namespace": "team"}})
    relabelled = store.get("host", NAMESPACES, "", "team")
    relabelled["metadata"]["labels"] = {"x": "y"}  # an update does not remove it early
    store.update("host", NAMESPACES, relabelled)
    claim = store.get("host", CLAIMS, "team", "held")
    claim["metadata"]["finalizers"] = []
    store.update("host", CLAIMS, claim)
    assert store.peek("host", NAMESPACES, "", "team") is None
    store.create("host", NAMESPACES, {"metadata": {"name": "team"}})
    assert store.list_objects("host", CLAIMS, "team")[0] == []


def test_an_empty_namespace_goes_at_once_and_its_own_finalizers_hold_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.create("host", NAMESPACES, {"metadata": {"name": "empty"}})
    assert store.delete("host", NAMESPACES, "", "empty")[1] is True
    store.create("host", NAMESPACES, {"metadata": {"name": "kept", "finalizers": ["x/y"]}})
    assert store.delete("host", NAMESPACES, "", "kept")[1] is False
    assert _conditions(store, "kept")["NamespaceContentRemaining"][:2] == (
        "False",
        "ContentRemoved",
    )
    kept = store.get("host", NAMESPACES, "", "kept")
    kept["metadata"]["finalizers"] = []
    store.update("host", NAMESPACES, kept)
    assert store.peek("host", NAMESPACES, "", "kept") is None


PODS = Resource("", "pods", "Pod", True)
NODES = Resource("", "nodes", "Node", False)


def test_a_terminating_namespaces_running_pods_get_their_grace_period(tmp_path: Path) -> None:
    """As the namespace controller deletes pods: a running pod on an existing node is
    marked for its node agent with its grace period; one on a node that is gone, unbound
    or finished goes at once; the namespace goes with the last of them."""
    store = _store(tmp_path)
    store.create("host", NODES, {"metadata": {"name": "n1"}})
    store.create("host", NAMESPACES, {"metadata": {"name": "team"}})

    def pod(name: str, node: str | None, phase: str, **spec: object) -> None:
        body = {"nodeName": node, **spec} if node else dict(spec)
        obj = {"metadata": {"name": name, "namespace": "team"}, "spec": body}
        store.create("host", PODS, {**obj, "status": {"phase": phase}})

    pod("running", "n1", "Running", terminationGracePeriodSeconds=20)
    pod("defaulted", "n1", "Running")
    pod("lost", "gone-node", "Running")
    pod("pending", None, "Pending")
    pod("done", "n1", "Succeeded")
    store.delete("host", NAMESPACES, "", "team")
    left = {p["metadata"]["name"]: p["metadata"] for p in store.list_objects("host", PODS)[0]}
    assert sorted(left) == ["defaulted", "running"]
    assert left["running"]["deletionGracePeriodSeconds"] == 20
    assert left["defaulted"]["deletionGracePeriodSeconds"] == 30
    for name in ("running", "defaulted"):  # the node agent ends them and deletes them
        assert store.peek("host", NAMESPACES, "", "team") is not None
        store.delete("host", PODS, "team", name, grace_seconds=0)
    assert store.peek("host", NAMESPACES, "", "team") is None


def test_a_namespace_emptied_while_stopped_goes_at_the_next_start(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.create("host", NAMESPACES, {"metadata": {"name": "team"}})
    held = {"name": "a", "namespace": "team", "finalizers": ["f/g"]}
    store.create("host", CLAIMS, {"metadata": held})
    store.delete("host", NAMESPACES, "", "team")
    store.close()
    with sqlite3.connect(tmp_path / "state.db") as db:  # the finalizer went, the removal did not
        db.execute("DELETE FROM objects WHERE resource = 'resourceclaims.resource.k8s.io'")
    reopened = Store(tmp_path / "state.db", clock=lambda: CLOCK, seed=2)
    assert reopened.peek("host", NAMESPACES, "", "team") is None


def test_acknowledged_writes_survive_a_crash(tmp_path: Path) -> None:
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from allot.store import Resource, Store\n"
        "store = Store(Path(sys.argv[1]))\n"
        "store.create('host', Resource('', 'namespaces', 'Namespace', False),"
        " {'metadata': {'name': 'durable'}})\n"
        "os._exit(0)  # a crash: no close, no checkpoint\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "state.db")], check=True, timeout=60
    )
    reopened = Store(tmp_path / "state.db")
    assert reopened.get("host", NAMESPACES, "", "durable")["metadata"]["name"] == "durable"


def test_events_resume_and_expire(tmp_path: Path) -> None:
    store = _store(tmp_path)
    seen: list[WatchEvent] = []
    store.add_listener(seen.append)
    created = store.create("host", CLAIMS, _claim("a"))
    start = int(created["metadata"]["resourceVersion"])
    store.update("host", CLAIMS, dict(created, spec={"devices": {}}))
    store.delete("host", CLAIMS, "default", "a")
    assert [e.type for e in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert [e.type for e in store.events_since("host", CLAIMS, start)] == ["MODIFIED", "DELETED"]
    store.bound_history("host", 1)  # compacts every event, and so does the next write
    store.create("host", CLAIMS, _claim("b"))
    with pytest.raises(Expired, match=f"too old resource version: {start} "):
        store.events_since("host", CLAIMS, start)
    assert store.events_since("host", CLAIMS, store.current_rv()) == []  # resumes from now


def test_dry_run_persists_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path)
    before = store.current_rv()
    store.create("host", CLAIMS, _claim("a"), dry_run=True)
    assert store.current_rv() == before
    with pytest.raises(NotFound):
        store.get("host", CLAIMS, "default", "a")


def _stored_names(path: Path) -> set[str]:
    """What another connection reads from the database file: committed rows only."""
    with sqlite3.connect(str(path / "state.db")) as db:
        return {row[0] for row in db.execute("SELECT name FROM objects WHERE namespace != ''")}


def test_writes_of_one_loop_turn_commit_together(tmp_path: Path) -> None:
    store = _store(tmp_path)
    immediate: list[int] = []
    committed: list[int] = []
    store.add_listener(lambda event: immediate.append(event.rv))
    store.add_listener(lambda event: committed.append(event.rv), committed=True)

    async def turn() -> None:
        store.create("host", CLAIMS, _claim("a"))
        store.create("host", CLAIMS, _claim("b"))
        assert _stored_names(tmp_path) == set()  # nothing committed within the turn
        assert len(immediate) == 2  # the controllers see the writes at once
        assert committed == []  # watch streams only once committed
        await store.committed()
        assert _stored_names(tmp_path) == {"a", "b"}
        assert committed == immediate

    asyncio.run(turn())
    store.create("host", CLAIMS, _claim("c"))  # no loop: committed before it returns
    assert _stored_names(tmp_path) == {"a", "b", "c"}
    assert committed == immediate
    store.close()
    assert Store(tmp_path / "state.db").current_rv() == immediate[-1]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]), st.sampled_from(["x", "y", "z"]), st.booleans()
        ),
        max_size=30,
    )
)
def test_a_namespaces_index_always_equals_a_filtered_scan(
    steps: list[tuple[str, str, bool]],
) -> None:
    """Creates and deletes in random order: a namespace's index (``scan_namespace``, and
    ``list_objects`` of one namespace) holds exactly what filtering every object gives."""
    with tempfile.TemporaryDirectory() as directory:
        store = _store(Path(directory))
        for namespace in ("a", "b", "c"):
            store.create("host", NAMESPACES, {"metadata": {"name": namespace}})
        for namespace, name, create in steps:
            if create:
                with contextlib.suppress(AlreadyExists):
                    store.create(
                        "host",
                        CLAIMS,
                        {**_claim(name), "metadata": {"name": name, "namespace": namespace}},
                    )
            else:
                with contextlib.suppress(NotFound):
                    store.delete("host", CLAIMS, namespace, name)
        everything = store.scan("host", CLAIMS)
        for namespace in ("a", "b", "c", "default"):
            wanted = sorted(
                o["metadata"]["name"] for o in everything if o["metadata"]["namespace"] == namespace
            )
            indexed = store.scan_namespace("host", CLAIMS, namespace)
            assert sorted(o["metadata"]["name"] for o in indexed) == wanted
            listed, _ = store.list_objects("host", CLAIMS, namespace)
            assert [o["metadata"]["name"] for o in listed] == wanted
        store.close()


def test_an_object_over_the_request_limit_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    before = store.current_rv()
    huge = _claim("huge", annotations={"note": "x" * MAX_OBJECT_BYTES})
    with pytest.raises(TooLarge) as refused:
        store.create("host", CLAIMS, huge)
    status = to_status(refused.value)
    assert (status.code, status.reason, status.message) == (
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
    )
    assert store.current_rv() == before
    assert store.scan("host", CLAIMS) == []
    small = store.create("host", CLAIMS, _claim("small"))
    small["metadata"]["annotations"] = {"note": "x" * MAX_OBJECT_BYTES}
    with pytest.raises(TooLarge):
        store.update("host", CLAIMS, small)
    assert "annotations" not in store.get("host", CLAIMS, "default", "small")["metadata"]
    store.close()
