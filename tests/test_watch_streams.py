"""Watch streams on their own (no HTTP): how a stream ends, and the lines its events make.

A stream ends when its ``timeoutSeconds`` pass, when the server stops (whichever thread
asks) and when its client reads too slowly; events queued before the end are still sent.
Every watch of a resource sends the same bytes for an event, made once
(:class:`allot.apiserver.watches.EventLines`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from allot.apiserver import watches
from allot.apiserver.watches import EventLines, WatchRequest, WatchStream
from allot.registry.resources import ServedResource, by_kind
from allot.store import Store, WatchEvent

CLOCK = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


def _request(resource: ServedResource, timeout: float = 60.0, table: bool = False) -> WatchRequest:
    return WatchRequest(
        cluster="host",
        resource=resource,
        namespace="default",
        matches=lambda obj: True,
        resource_version=None,
        send_initial_events=False,
        allow_bookmarks=False,
        timeout_seconds=timeout,
        as_table=table,
        include_object="Metadata",
    )


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "state.db", clock=lambda: CLOCK, seed=1)
    store.create("host", by_kind("Namespace").store, {"metadata": {"name": "default"}})
    return store


def _config_map(store: Store, name: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
    }
    store.create("host", by_kind("ConfigMap").store, body)


async def _names(lines: AsyncIterator[bytes]) -> list[str]:
    names = []
    async for chunk in lines:
        names += [json.loads(line)["object"]["metadata"]["name"] for line in chunk.splitlines()]
    return names


def _stream(store: Store, request: WatchRequest, stopping: asyncio.Event) -> WatchStream:
    return WatchStream(store, request, lambda: CLOCK, stopping, EventLines())


def test_a_stream_ends_when_its_timeout_passes_after_sending_what_came_before(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)

    async def run() -> list[str]:
        stream = _stream(store, _request(by_kind("ConfigMap"), timeout=0.3), asyncio.Event())
        reading = asyncio.ensure_future(_names(stream.stream()))
        await asyncio.sleep(0.05)
        _config_map(store, "first")
        await store.committed()
        return await asyncio.wait_for(reading, 5)

    loop = asyncio.new_event_loop()
    try:
        started = loop.time()
        assert loop.run_until_complete(run()) == ["first"]
        assert loop.time() - started >= 0.3  # the timeout ended it, not anything earlier
    finally:
        loop.close()


def test_a_stream_ends_when_another_thread_stops_the_server(tmp_path: Path) -> None:
    """The server's stop, asked from another thread and set in the serving loop (as
    uvicorn's shutdown does): the stream ends then (well before its 60 s timeout), having
    sent nothing."""
    store = _store(tmp_path)

    async def run() -> None:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        stream = _stream(store, _request(by_kind("ConfigMap"), timeout=60), stopping)
        reading = asyncio.ensure_future(_names(stream.stream()))
        await asyncio.sleep(0.05)
        threading.Thread(target=loop.call_soon_threadsafe, args=(stopping.set,)).start()
        assert await asyncio.wait_for(reading, 5) == []

    asyncio.run(run())


def test_a_stream_whose_client_reads_too_slowly_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watches, "QUEUE_LIMIT", 3)
    store = _store(tmp_path)

    async def overflow() -> list[str]:
        stream = _stream(store, _request(by_kind("ConfigMap")), asyncio.Event())
        reading = asyncio.ensure_future(_names(stream.stream()))
        await asyncio.sleep(0.05)  # subscribed; nothing read until the burst is queued
        for index in range(5):
            _config_map(store, f"burst-{index}")
        await store.committed()
        return await asyncio.wait_for(reading, 5)

    sent = asyncio.run(overflow())
    assert sent == ["burst-0", "burst-1", "burst-2"]  # then it ends: the client re-lists


def test_every_watch_of_a_resource_sends_the_same_line_made_once(tmp_path: Path) -> None:
    store = _store(tmp_path)
    lines = EventLines()
    seen: list[WatchEvent] = []
    store.add_listener(seen.append)
    _config_map(store, "shared")
    event = seen[-1]
    resource = by_kind("ConfigMap")
    first = lines.line(event, resource)
    assert lines.line(event, resource) is first
    decoded = json.loads(first)
    assert decoded["type"] == "ADDED"
    assert decoded["object"]["apiVersion"] == "v1"
    assert decoded["object"]["kind"] == "ConfigMap"
    assert decoded["object"]["metadata"]["name"] == "shared"
    stream = _stream(store, _request(resource), asyncio.Event())
    assert json.loads(first) == {"type": "ADDED", "object": stream._render(event.object)}


def test_a_table_watch_renders_its_own_lines(tmp_path: Path) -> None:
    store = _store(tmp_path)

    async def run() -> list[bytes]:
        stream = _stream(
            store, _request(by_kind("ConfigMap"), timeout=0.3, table=True), asyncio.Event()
        )
        reading = asyncio.ensure_future(_collect(stream.stream()))
        await asyncio.sleep(0.05)
        _config_map(store, "tabled")
        await store.committed()
        return await asyncio.wait_for(reading, 5)

    chunks = asyncio.run(run())
    event = json.loads(b"".join(chunks))
    assert event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][0] == "tabled"


async def _collect(lines: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in lines]
