"""A full disk: the store invents nothing and every request that could tell of a lost
write is refused with a JSON Status (issue 28, item 10).

A full disk is simulated without root: SQLite's ``max_page_count`` makes the write that
needs one more page fail with SQLITE_FULL (SQLite then rolls the whole transaction back),
and a connection wrapper fails a COMMIT as a full disk does when the WAL cannot grow.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from allot.apiserver.server import ServerThread
from allot.statuses import to_status
from allot.store import Resource, Store
from allot.store.errors import DiskFull, NotFound
from allot.store.objects import WatchEvent
from bench.scheduler import _client
from tests.test_store import _store

MAPS = Resource("", "configmaps", "ConfigMap", True)


def _map(name: str, size: int = 10) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "data": {"k": "x" * size}}


def _fill(store: Store) -> None:
    """No page more than the file has now: a write that needs one fails (SQLITE_FULL)."""
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count={pages + 2}")


def _names(store: Store) -> list[str]:
    return sorted(o["metadata"]["name"] for o in store.scan("host", MAPS))


class _FailingCommits:
    """The store's connection, whose next COMMIT fails as on a full disk."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db, self.failures = db, 1

    def execute(self, statement: str, *args: Any) -> sqlite3.Cursor:
        if statement == "COMMIT" and self.failures:
            self.failures -= 1
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(statement, *args)

    @property
    def in_transaction(self) -> bool:
        return self.db.in_transaction


def test_a_write_refused_by_a_full_disk_takes_its_turn_back(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.create("host", MAPS, _map("kept"))
    heard: list[tuple[str, str]] = []
    committed: list[WatchEvent] = []
    store.add_listener(lambda e: heard.append((e.type, e.object["metadata"]["name"])))
    store.add_listener(committed.append, committed=True)
    before = store.current_rv()
    _fill(store)

    async def turn() -> None:
        store.create("host", MAPS, _map("small"))  # fits: held in the turn's transaction
        with pytest.raises(DiskFull):
            store.create("host", MAPS, _map("big", 200_000))
        with pytest.raises(DiskFull):  # the writer of "small" is told, too
            await store.committed()

    asyncio.run(turn())
    assert _names(store) == ["kept"]  # neither "small" nor "big" is readable
    with pytest.raises(NotFound):
        store.get("host", MAPS, "default", "small")
    assert store.current_rv() == before
    assert heard == [("ADDED", "small"), ("DELETED", "small")]  # the controllers follow
    assert committed == []  # no watch stream heard of it
    store.close()
    assert _names(Store(tmp_path / "state.db")) == ["kept"]


def test_a_failed_commit_takes_back_every_write_and_refuses_every_writer(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    store.create("host", MAPS, _map("kept"))
    store._commits._db = _FailingCommits(store._db)  # type: ignore[assignment]
    answers: dict[str, str] = {}

    async def request(name: str, write: bool) -> None:
        try:
            if write:
                store.create("host", MAPS, _map(name))
                await asyncio.sleep(0)  # the other request writes in the same turn
            await store.committed()
            answers[name] = "ok"
        except DiskFull as refused:
            answers[name] = to_status(refused).message or ""

    async def turn() -> None:
        await asyncio.gather(request("a", True), request("b", True), request("idle", False))

    asyncio.run(turn())
    refusal = "Internal error occurred: the platform's disk is full"
    assert answers == {"a": refusal, "b": refusal, "idle": "ok"}
    assert _names(store) == ["kept"]
    store.create("host", MAPS, _map("later"))  # the next transaction commits
    store.close()
    assert _names(Store(tmp_path / "state.db")) == ["kept", "later"]


def test_a_full_disk_is_a_json_status_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with ServerThread(tmp_path / "data") as server:
        url, ca = server.endpoint.url, str(server.endpoint.tls.ca_cert)
        client = _client(url, ca, server.api.registry.tokens.ensure("host"))
        _fill(server.api.registry.store)
        path = "/api/v1/namespaces/default/configmaps"
        big = {"apiVersion": "v1", "kind": "ConfigMap", **_map("big", 200_000)}
        with client, caplog.at_level(logging.ERROR):
            answers = [client.post(path, json=big) for _ in range(3)]
            listed = client.get(path)
    for answer in answers:
        assert answer.status_code == 500
        status = answer.json()
        assert (status["kind"], status["reason"], status["message"]) == (
            "Status",
            "InternalError",
            "Internal error occurred: the platform's disk is full",
        )
        assert status["details"]["causes"][0] == {"message": "the platform's disk is full"}
    assert listed.status_code == 200  # reads still work
    assert not [r for r in caplog.records if r.exc_info]  # no traceback per request
    lost = [r for r in caplog.records if "rolled back" in r.getMessage()]
    assert len(lost) == 1  # one line, not one per request
