"""Shared informers: a kind's cache kept current by list and watch, its changes dispatched.

One :class:`Informer` per (cluster, kind), as client-go's shared informer: it lists the kind
(the cache then holds the listing, and each object is handed on as ADDED), then watches from
the listing's resourceVersion with bookmarks (which move the resourceVersion on without an
object). Each watched change updates the cache first and then goes to the client's
:class:`~allot.client.dispatch.Dispatcher`, with the object it replaced. A watch that ends
(its timeout) is started again from the last resourceVersion seen; a server that cannot be
reached, or refuses, is retried with back-off (a refusal's log line names the RBAC rule
missing). A watch answered ``410 Gone`` (the server no longer keeps that history) or ended
by a gap is followed by a relist: the cache is made equal to the new listing and the
differences are dispatched as synthetic ADDED, MODIFIED and DELETED changes, so a
controller misses nothing that happened during the gap.

The list and the watch themselves are a :class:`ListWatch` (the remote client's, over
:mod:`allot.kube`; a test's fake): blocking calls, run in the informer's own thread, whose
events are handed to the event loop in order. Used by :class:`allot.kube.remote.RemoteClient`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from allot.client.cache import ObjectCache, key_of
from allot.client.dispatch import Dispatcher
from allot.client.errors import ClientError, Forbidden, Gone
from allot.client.protocol import WatchEvent
from allot.types import Obj

LOG = logging.getLogger("allot.informers")
WATCH_SECONDS = 300
"""How long one watch request lasts before it is made again (client-go: 5 to 10 minutes)."""
BACKOFF_SECONDS = (0.8, 1.6, 3.2, 6.4, 12.8, 30.0)


class ListWatch(Protocol):
    """A kind's list and watch requests (blocking; called from a worker thread)."""

    def list(self) -> tuple[list[Obj], str]:
        """Every object (with ``apiVersion`` and ``kind``) and the list's resourceVersion."""

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[tuple[str, Obj]]:
        """The changes after ``resource_version`` as (type, object), bookmarks included;
        raises :class:`~allot.client.errors.Gone` when that history is gone."""

    def close(self) -> None:
        """End the watch in progress (called from the loop's thread)."""


class Informer:
    def __init__(
        self,
        cluster: str,
        resource: str,
        listwatch: ListWatch,
        dispatcher: Dispatcher,
        *,
        watch_seconds: int = WATCH_SECONDS,
        backoff: tuple[float, ...] = BACKOFF_SECONDS,
    ) -> None:
        self.cluster = cluster
        self.resource = resource
        self.listwatch = listwatch
        self.dispatcher = dispatcher
        self.watch_seconds = watch_seconds
        self.backoff = backoff
        self.cache = ObjectCache()
        self.indexers: list[Callable[[WatchEvent], None]] = []
        """Derived state changed with the cache, before the change is dispatched."""
        self.resource_version = ""
        self.lists = 0
        """How many lists it made: 1 after the first, one more per relist."""
        self.error: ClientError | None = None
        """The last failure, until a list or watch succeeds again."""
        self._listed = asyncio.Event()
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"informer-{resource}")
        """Its own thread: a watch blocks one for as long as it lasts, and the loop's
        shared executor has fewer threads than a controller has informers."""
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def synced(self) -> bool:
        return self._listed.is_set()

    async def wait_synced(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._listed.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self.run(), name=f"informer-{self.resource}")

    async def stop(self) -> None:
        self._stopping = True
        self.listwatch.close()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._thread.shutdown(wait=False)

    async def run(self) -> None:
        need_list, failures = True, 0
        while not self._stopping:
            try:
                if need_list:
                    loop = asyncio.get_running_loop()
                    items, version = await loop.run_in_executor(self._thread, self.listwatch.list)
                    self._relist(items, version)
                    need_list = False
                await self._watch()
                failures, self.error = 0, None
            except Gone:
                LOG.info("%s: the watch's history is gone; relisting", self.resource)
                need_list = True
            except ClientError as err:
                self.error = err
                delay = self.backoff[min(failures, len(self.backoff) - 1)]
                failures += 1
                LOG.warning("%s: %s (retry in %.1fs)", self.resource, _described(err), delay)
                await asyncio.sleep(delay)

    async def _watch(self) -> None:
        """One watch request from the current resourceVersion; its events are applied on
        the loop in order, before this returns."""
        loop = asyncio.get_running_loop()
        since = self.resource_version

        def follow() -> None:
            for kind, obj in self.listwatch.watch(since, self.watch_seconds):
                if self._stopping:
                    return
                loop.call_soon_threadsafe(self._apply, kind, obj)

        await loop.run_in_executor(self._thread, follow)

    def _apply(self, kind: str, obj: Obj) -> None:
        version = str(obj.get("metadata", {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            self.resource_version = version or self.resource_version
            return
        deleted = kind == "DELETED"
        previous = self.cache.remove(*key_of(obj)) if deleted else self.cache.put(obj)
        self.resource_version = version or self.resource_version
        self._changed(
            WatchEvent(kind, _number(version), self.cluster, self.resource, obj, previous)
        )

    def _changed(self, event: WatchEvent) -> None:
        for indexer in self.indexers:
            try:
                indexer(event)
            except Exception:
                LOG.exception("indexing %s %s failed", event.type, event.resource)
        self.dispatcher.deliver(event)

    def _relist(self, items: list[Obj], version: str) -> None:
        """The cache made equal to a listing; the differences dispatched (synthetic after
        the first list)."""
        relist = self.lists > 0
        self.lists += 1
        for kind, obj, previous in self.cache.replace(items):
            number = _number(str(obj["metadata"].get("resourceVersion") or ""))
            self._changed(
                WatchEvent(kind, number, self.cluster, self.resource, obj, previous, relist)
            )
        self.resource_version = version
        self._listed.set()


def _number(version: str) -> int:
    return int(version) if version.isdigit() else 0


def _described(err: ClientError) -> str:
    if isinstance(err, Forbidden) and err.missing_rule():
        return f"{err.message} ({err.missing_rule()})"
    return err.message
