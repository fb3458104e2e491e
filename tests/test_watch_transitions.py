"""Watches with selectors: an object entering a selector is ADDED, leaving it DELETED.

Upstream's cacher judges each write on the object before and after it
(``cache_watcher.go``, ``convertToWatchEvent``); :func:`allot.apiserver.watches.transition`
is that rule, checked here as a table, then through real streams for label and field
selectors, live and resumed from a resourceVersion (where the previous object is known
only from the replay's own earlier events).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from allot.apiserver.watches import EventLines, WatchRequest, WatchStream, transition
from allot.registry import selectors
from allot.registry.resources import ServedResource, by_kind
from allot.store import Store, history
from allot.types import Obj

CLOCK = dt.datetime(2026, 11, 27, 8, 0, tzinfo=dt.UTC)
TENANT = "legal-ai"  # a tenant's virtual cluster: another cluster of the same store

# (the write, matched before (None: unknown), matches now) -> what the watch sends
TRANSITIONS: list[tuple[str, bool | None, bool, str | None]] = [
    ("ADDED", False, True, "ADDED"),
    ("ADDED", False, False, None),
    ("MODIFIED", True, True, "MODIFIED"),
    ("MODIFIED", False, True, "ADDED"),
    ("MODIFIED", True, False, "DELETED"),
    ("MODIFIED", False, False, None),
    ("MODIFIED", None, True, "MODIFIED"),
    ("MODIFIED", None, False, None),
    ("DELETED", True, False, "DELETED"),
    ("DELETED", False, False, None),
]


@pytest.mark.parametrize(("write", "matched", "matches", "sent"), TRANSITIONS)
def test_the_transition_rule_is_upstreams(
    write: str, matched: bool | None, matches: bool, sent: str | None
) -> None:
    assert transition(write, matched, matches) == sent


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "state.db", clock=lambda: CLOCK, seed=1)
    for cluster in ("host", TENANT):
        store.create(cluster, by_kind("Namespace").store, {"metadata": {"name": "default"}})
    return store


def _request(
    resource: ServedResource,
    matches: Callable[[Obj], bool],
    resource_version: str | None,
    cluster: str = "host",
) -> WatchRequest:
    return WatchRequest(
        cluster=cluster,
        resource=resource,
        namespace="default",
        matches=matches,
        resource_version=resource_version,
        send_initial_events=False,
        allow_bookmarks=False,
        timeout_seconds=0.4,
        as_table=False,
        include_object="Metadata",
    )


async def _events(lines: AsyncIterator[bytes]) -> list[Obj]:
    return [json.loads(line) async for chunk in lines for line in chunk.splitlines()]


def _watch_while(store: Store, request: WatchRequest, writes: Callable[[], None]) -> list[Obj]:
    """The events a watch opened before ``writes`` receives until its timeout."""

    async def run() -> list[Obj]:
        stream = WatchStream(store, request, lambda: CLOCK, asyncio.Event(), EventLines())
        reading = asyncio.ensure_future(_events(stream.stream()))
        await asyncio.sleep(0.05)
        writes()
        await store.committed()
        return await asyncio.wait_for(reading, 5)

    return asyncio.run(run())


def _relabel(store: Store, name: str, value: str, cluster: str = "host") -> Obj:
    resource = by_kind("ConfigMap").store
    current = store.get(cluster, resource, "default", name)
    current["metadata"]["labels"] = {"sel": value}
    return store.update(cluster, resource, current)


def _label_writes(store: Store, cluster: str = "host") -> Callable[[], None]:
    resource = by_kind("ConfigMap").store

    def change(value: str) -> None:
        current = store.get(cluster, resource, "default", "hw")
        current["data"] = {"a": value}
        store.update(cluster, resource, current)

    def writes() -> None:
        _relabel(store, "hw", "no", cluster)  # leaves: DELETED
        change("2")  # outside, changed: nothing
        _relabel(store, "hw", "yes", cluster)  # enters: ADDED
        change("3")  # inside, changed: MODIFIED
        _relabel(store, "hw", "no", cluster)  # leaves again: DELETED
        store.delete(cluster, resource, "default", "hw")  # deleted outside: nothing

    return writes


def _labelled_config_map(store: Store, cluster: str = "host") -> Obj:
    body = {"metadata": {"name": "hw", "namespace": "default", "labels": {"sel": "yes"}}}
    return store.create(cluster, by_kind("ConfigMap").store, body)


@pytest.mark.parametrize("cluster", ["host", TENANT])
def test_a_live_label_watch_sees_the_object_leave_and_enter(tmp_path: Path, cluster: str) -> None:
    store = _store(tmp_path)
    other = TENANT if cluster == "host" else "host"
    _labelled_config_map(store, cluster)
    _labelled_config_map(store, other)
    matches = selectors.label_selector("sel=yes")
    request = _request(by_kind("ConfigMap"), matches, None, cluster)

    def writes() -> None:
        _label_writes(store, cluster)()
        _relabel(store, "hw", "no", other)  # another cluster's object: never this watch's

    events = _watch_while(store, request, writes)
    assert [e["type"] for e in events] == ["ADDED", "DELETED", "ADDED", "MODIFIED", "DELETED"]
    assert [e["object"]["metadata"]["labels"]["sel"] for e in events] == ["yes"] * 5
    data = [e["object"].get("data") for e in events]
    assert data == [None, None, {"a": "2"}, {"a": "3"}, {"a": "3"}]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
    assert len(set(versions)) == 5


def test_the_deleted_event_of_a_leaving_object_carries_its_last_matching_content(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    created = _labelled_config_map(store)
    request = _request(
        by_kind("ConfigMap"),
        selectors.label_selector("sel=yes"),
        created["metadata"]["resourceVersion"],
    )
    written: list[Obj] = []
    events = _watch_while(store, request, lambda: written.append(_relabel(store, "hw", "no")))
    assert [e["type"] for e in events] == ["DELETED"]
    sent = events[0]["object"]
    assert sent["metadata"]["labels"] == {"sel": "yes"}
    assert sent["metadata"]["resourceVersion"] == written[0]["metadata"]["resourceVersion"]
    assert sent["metadata"]["uid"] == created["metadata"]["uid"]


def _pod(store: Store, name: str, phase: str) -> Obj:
    body = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": phase},
    }
    return store.create("host", by_kind("Pod").store, body)


def _phase(store: Store, name: str, phase: str) -> None:
    resource = by_kind("Pod").store
    current = store.get("host", resource, "default", name)
    current["status"]["phase"] = phase
    store.update("host", resource, current)


def test_a_live_field_watch_sees_the_object_leave_and_enter(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _pod(store, "worker", "Pending")
    matches = selectors.field_selector("status.phase=Running", "pods")
    request = _request(by_kind("Pod"), matches, None)

    def writes() -> None:
        _phase(store, "worker", "Running")  # enters: ADDED
        _phase(store, "worker", "Succeeded")  # leaves: DELETED, as it was (Running)
        store.delete("host", by_kind("Pod").store, "default", "worker")  # outside: nothing

    events = _watch_while(store, request, writes)
    assert [(e["type"], e["object"]["status"]["phase"]) for e in events] == [
        ("ADDED", "Running"),
        ("DELETED", "Running"),
    ]


@pytest.mark.parametrize("resume_before_create", [True, False])
def test_a_resumed_label_watch_sees_the_same_transitions(
    tmp_path: Path, resume_before_create: bool
) -> None:
    store = _store(tmp_path)
    before_create = store.current_rv()
    created = _labelled_config_map(store)
    _label_writes(store)()
    start = before_create if resume_before_create else created["metadata"]["resourceVersion"]
    request = _request(by_kind("ConfigMap"), selectors.label_selector("sel=yes"), str(start))
    events = _watch_while(store, request, lambda: None)
    sent = ["DELETED", "ADDED", "MODIFIED", "DELETED"]
    assert [e["type"] for e in events] == (["ADDED", *sent] if resume_before_create else sent)
    assert [e["object"]["metadata"]["labels"] for e in events] == [{"sel": "yes"}] * len(events)
    assert events[-1]["object"]["data"] == {"a": "3"}


def test_a_resumed_watch_judges_a_write_alone_when_the_previous_one_was_compacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history, "EVENT_RETENTION", 10)
    store = _store(tmp_path)
    created = _labelled_config_map(store)
    resource = by_kind("ConfigMap").store
    for index in range(10):  # past 10 events the store compacts the cluster's oldest
        body = {"metadata": {"name": f"filler-{index}", "namespace": "default"}}
        store.create("host", resource, body)
    assert store.compacted_rv("host") >= int(created["metadata"]["resourceVersion"])
    start = store.current_rv()
    _relabel(store, "hw", "no")  # its previous object's event is gone: judged alone
    _relabel(store, "hw", "yes")  # its previous one is the write above: ADDED
    matches = selectors.label_selector("sel=yes")
    request = _request(by_kind("ConfigMap"), matches, str(start))
    events = _watch_while(store, request, lambda: None)
    assert [e["type"] for e in events] == ["ADDED"]


def test_events_of_a_database_from_before_previous_versions_replay_unknown(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    store = _store(tmp_path)
    created = _labelled_config_map(store)
    _relabel(store, "hw", "no")
    store.close()
    with sqlite3.connect(path) as legacy:  # as the schema was before ``prev_rv``
        legacy.execute("ALTER TABLE events DROP COLUMN prev_rv")
    reopened = Store(path, clock=lambda: CLOCK, seed=1)
    _relabel(reopened, "hw", "yes")  # written after: its previous object is known
    start = int(created["metadata"]["resourceVersion"])
    events = reopened.events_since("host", by_kind("ConfigMap").store, start)
    assert [e.type for e in events] == ["MODIFIED", "MODIFIED"]
    assert events[0].previous is None
    assert events[1].previous == events[0].object


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        ("sel=yes", {"sel": "yes"}, True),
        ("sel=yes", {"sel": "no"}, False),
        ("sel=yes", None, False),
        ("!sel", None, True),
        ("sel=yes,tier in (a,b)", {"sel": "yes", "tier": "b"}, True),
        ("sel=yes,tier in (a,b)", {"sel": "yes", "tier": "c"}, False),
        ("sel=yes,tier in (a,b)", {"tier": "a"}, False),
    ],
)
def test_label_selectors_of_one_and_several_requirements(
    selector: str, labels: dict[str, str] | None, selected: bool
) -> None:
    metadata: Obj = {"name": "hw"} if labels is None else {"name": "hw", "labels": labels}
    assert selectors.label_selector(selector)({"metadata": metadata}) is selected
