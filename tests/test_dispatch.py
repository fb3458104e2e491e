"""The dispatcher and the informers: a subscriber that raises is isolated and retried, one
that keeps failing is resynced; a watch whose history is gone relists and dispatches the
differences; and on the platform no controller runs inside a store write."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Hashable, Iterator
from pathlib import Path

import pytest

from allot.client import dispatch, errors
from allot.client.dispatch import Dispatcher
from allot.client.informers import Informer
from allot.client.protocol import WatchEvent
from allot.controllers.context import ControllerContext
from allot.platform import build
from allot.types import Obj


def _config(name: str, version: int, **data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "team", "resourceVersion": str(version)},
        "data": data,
    }


def _event(name: str, version: int, kind: str = "ADDED") -> WatchEvent:
    return WatchEvent(kind, version, "host", "configmaps", _config(name, version))


def test_a_raising_subscriber_is_isolated_and_retried_in_order(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(dispatch, "FIRST_BACKOFF_SECONDS", 0.01)
    seen: list[str] = []
    flaky: list[str] = []
    failures = {"b": 2}  # "b" fails twice, then is taken

    def steady(event: WatchEvent) -> None:
        seen.append(event.object["metadata"]["name"])

    def unsteady(event: WatchEvent) -> None:
        name = event.object["metadata"]["name"]
        if failures.get(name):
            failures[name] -= 1
            raise RuntimeError(f"cannot take {name}")
        flaky.append(name)

    async def main() -> None:
        dispatcher = Dispatcher()
        dispatcher.subscribe("flaky", unsteady)
        dispatcher.subscribe("steady", steady)
        dispatcher.start()
        for index, name in enumerate("abc"):
            dispatcher.deliver(_event(name, index + 1))
        await asyncio.sleep(0)  # the drain runs on the loop, after deliver returned
        assert seen == ["a", "b", "c"]  # the other subscriber is not held up
        assert flaky == ["a"]  # "c" waits behind "b" in the flaky one's backlog
        for _ in range(100):
            if dispatcher.quiet():
                break
            await asyncio.sleep(0.01)
        assert flaky == ["a", "b", "c"]

    with caplog.at_level(logging.ERROR, logger="allot.dispatch"):
        asyncio.run(main())
    attempts = [r for r in caplog.records if "cannot take b" in str(r.exc_info)]
    assert len(attempts) == 2  # each logged with its traceback


def test_an_event_failing_every_attempt_is_given_up_and_the_subscriber_resynced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dispatch, "FIRST_BACKOFF_SECONDS", 0.001)
    resyncs: list[int] = []
    taken: list[str] = []

    def handler(event: WatchEvent) -> None:
        if event.object["metadata"]["name"] == "poison":
            raise ValueError("never")
        taken.append(event.object["metadata"]["name"])

    async def main() -> None:
        dispatcher = Dispatcher(max_attempts=3)
        dispatcher.subscribe("c", handler, resync=lambda: resyncs.append(1))
        dispatcher.start()
        dispatcher.deliver(_event("poison", 1))
        dispatcher.deliver(_event("after", 2))
        for _ in range(200):
            if dispatcher.quiet():
                break
            await asyncio.sleep(0.005)

    asyncio.run(main())
    assert resyncs == [1]
    assert taken == ["after"]


def test_writes_from_another_thread_are_dispatched_on_the_loop() -> None:
    threads: list[int] = []

    async def main() -> None:
        dispatcher = Dispatcher()
        dispatcher.subscribe("c", lambda event: threads.append(threading.get_ident()))
        dispatcher.start()
        worker = threading.Thread(target=dispatcher.deliver, args=(_event("a", 1),))
        worker.start()
        worker.join()
        for _ in range(100):
            if threads:
                break
            await asyncio.sleep(0.01)

    loop_thread = threading.get_ident()
    asyncio.run(main())
    assert threads == [loop_thread]


class FakeListWatch:
    """A kind whose server forgets history: the first watch ends with 410 Gone, by which
    time the listing has changed (one object updated, one deleted, one added)."""

    def __init__(self) -> None:
        self.lists = 0
        self.watches: list[str] = []

    def list(self) -> tuple[list[Obj], str]:
        self.lists += 1
        if self.lists == 1:
            return [_config("kept", 1), _config("changed", 2, k="1"), _config("gone", 3)], "3"
        return [_config("kept", 1), _config("changed", 7, k="2"), _config("new", 8)], "8"

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[tuple[str, Obj]]:
        self.watches.append(resource_version)
        if len(self.watches) == 1:
            yield "MODIFIED", _config("kept", 4, k="watched")
            yield "BOOKMARK", {"metadata": {"resourceVersion": "5"}}
            raise errors.Gone(errors.status(410, "Expired", "too old resource version: 5 (6)"))
        threading.Event().wait(0.05)  # a quiet watch after the relist

    def close(self) -> None:
        return None


def test_a_watch_gap_relists_and_dispatches_the_differences() -> None:
    listwatch = FakeListWatch()
    changes: list[tuple[str, str, bool]] = []

    async def main() -> Informer:
        dispatcher = Dispatcher()
        dispatcher.subscribe(
            "c",
            lambda e: changes.append((e.type, e.object["metadata"]["name"], e.synthetic)),
        )
        dispatcher.start()
        informer = Informer("host", "configmaps", listwatch, dispatcher)
        informer.start()
        for _ in range(200):
            if listwatch.lists == 2 and len(changes) >= 7:
                break
            await asyncio.sleep(0.01)
        await informer.stop()
        return informer

    informer = asyncio.run(main())
    assert changes[:3] == [("ADDED", n, False) for n in ("kept", "changed", "gone")]
    assert changes[3] == ("MODIFIED", "kept", False)  # watched
    assert sorted(changes[4:]) == [
        ("ADDED", "new", True),
        ("DELETED", "gone", True),
        ("MODIFIED", "changed", True),
        ("MODIFIED", "kept", True),  # the watched version differs from the listed one
    ]
    assert listwatch.watches[:2] == ["3", "8"]  # from the listing, then the relisting
    assert sorted(o["metadata"]["name"] for o in informer.cache.list()) == [
        "changed", "kept", "new",
    ]  # fmt: skip


def _pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def test_the_store_write_path_calls_no_controller(tmp_path: Path) -> None:
    """On the platform, a write returns before any controller hears of it (its change is
    handed over after the commit, on the loop), and a controller that raises on it fails
    neither the write nor the controllers after it (here the scheduler)."""
    api = build(tmp_path / "data")
    writing = False
    during_write: list[str] = []
    handed: list[str] = []
    scheduler_keys = api.scheduler.keys_for
    claims = next(
        w.controller for w in api.controllers.workers if w.controller.name == "resourceclaim"
    )
    raised: list[str] = []

    def noting(event: WatchEvent) -> list[Hashable]:
        if event.resource == "pods":
            (during_write if writing else handed).append(event.object["metadata"]["name"])
        return scheduler_keys(event)

    def broken(event: WatchEvent) -> list[Hashable]:
        raised.append(event.resource)
        raise RuntimeError("a bug in keys_for")

    api.scheduler.keys_for = noting  # type: ignore[method-assign]
    claims.keys_for = broken  # type: ignore[method-assign]
    context = ControllerContext(
        "host", api.registry.store, api.registry.handlers, api.registry.clock
    )

    async def main() -> None:
        nonlocal writing
        for hook in api.server.startup_hooks:
            await hook()
        try:
            writing = True
            context.create("Pod", _pod("p"), "test")
            writing = False
            assert await api.controllers.idle(timeout=10)
        finally:
            for hook in api.server.shutdown_hooks:
                await hook()

    try:
        asyncio.run(main())
    finally:
        api.registry.close()
    assert during_write == []
    assert "p" in handed
    assert "pods" in raised  # the controller before the scheduler raised on the pod
