"""Watch streams: one JSON event per line, flushed, as kubectl and the Python client read them.

Events queued together are flushed together (one chunk of several lines), so a burst of
writes costs one socket send per watcher, not one per event.

Semantics (kubectl-protocol §3.5): without a resourceVersion (or ``0``) the stream starts with
synthetic ADDED events for the current state; with ``N`` it replays retained events after
``N`` (410 Expired when they were compacted); ``sendInitialEvents=true`` ends the initial
state with a BOOKMARK annotated ``k8s.io/initial-events-end``. Label and field selectors
filter events. With a Table Accept header each event carries a one-row Table. The stream
ends after ``timeoutSeconds`` (default 30 minutes) or when the server stops.

Each cluster (the host, each tenant) may hold ``MAX_WATCHES_PER_CLUSTER`` open watches;
:class:`WatchSlots` counts them, so one tenant opening hundreds cannot starve the others:
past the limit the router answers 429 ``TooManyRequests``. A slot is taken before the
response starts and given back when its stream ends, times out or its client goes away.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from allot.apiserver import tables
from allot.apiserver.errors import TooManyRequests
from allot.registry.resources import ServedResource
from allot.store import Store, WatchEvent
from allot.store.errors import Expired
from allot.types import Obj

DEFAULT_TIMEOUT_SECONDS = 1800
QUEUE_LIMIT = 10_000
MAX_WATCHES_PER_CLUSTER = 100


@dataclass
class WatchRequest:
    cluster: str
    resource: ServedResource
    namespace: str | None
    matches: Callable[[Obj], bool]
    resource_version: str | None
    send_initial_events: bool
    allow_bookmarks: bool
    timeout_seconds: float
    as_table: bool
    include_object: str


class WatchSlots:
    """Open watches per cluster, bounded (all on the server's event loop: no lock)."""

    def __init__(self, limit: int = MAX_WATCHES_PER_CLUSTER) -> None:
        self.limit = limit
        self.open: Counter[str] = Counter()

    def take(self, cluster: str) -> None:
        """Reserve a watch for ``cluster``, or raise ``TooManyRequests``."""
        if self.open[cluster] >= self.limit:
            raise TooManyRequests(
                f'too many watches: cluster "{cluster}" already has {self.open[cluster]} open, '
                f"the most one cluster may hold ({self.limit}); close one before opening "
                "another",
                retry_after_seconds=1,
            )
        self.open[cluster] += 1

    def give_back(self, cluster: str) -> None:
        self.open[cluster] -= 1
        if self.open[cluster] <= 0:
            del self.open[cluster]

    def held(self, cluster: str, lines: AsyncIterator[bytes]) -> HeldLines:
        """``lines``, giving ``cluster``'s slot back however the stream ends."""
        return HeldLines(self, cluster, lines)


class HeldLines:
    """A watch's lines holding its cluster's slot: given back when the stream ends, fails,
    is cancelled (its client went away) or is dropped without ever being read."""

    def __init__(self, slots: WatchSlots, cluster: str, lines: AsyncIterator[bytes]) -> None:
        self.slots = slots
        self.cluster = cluster
        self.lines = lines
        self.released = False

    def __aiter__(self) -> HeldLines:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await anext(self.lines)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.slots.give_back(self.cluster)

    def __del__(self) -> None:
        self.release()


def _line(event_type: str, obj: Obj) -> bytes:
    return (json.dumps({"type": event_type, "object": obj}, separators=(",", ":")) + "\n").encode()


class WatchStream:
    """Subscribes to the store before reading history, so no event is lost in between."""

    def __init__(
        self,
        store: Store,
        request: WatchRequest,
        clock: Callable[[], dt.datetime],
        stopping: asyncio.Event,
    ) -> None:
        self.store = store
        self.request = request
        self.clock = clock
        self.stopping = stopping
        self.queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        self.overflowed = False
        self.loop: asyncio.AbstractEventLoop | None = None

    def _listen(self, event: WatchEvent) -> None:
        """Called by the store in the writer's thread (the loop's, or a controller's), for
        the writes of this watch's cluster and resource only (see ``stream``)."""
        loop = self.loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._enqueue(event)
        else:
            loop.call_soon_threadsafe(self._enqueue, event)

    def _enqueue(self, event: WatchEvent) -> None:
        if self.overflowed:
            return
        if self.queue.qsize() >= QUEUE_LIMIT:
            self.overflowed = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(event)

    def _render(self, obj: Obj) -> Obj:
        request = self.request
        if "apiVersion" not in obj or "kind" not in obj:  # never modify the store's object
            obj = {"apiVersion": request.resource.api_version, "kind": request.resource.kind, **obj}
        if not request.as_table:
            return obj
        return tables.table(
            request.resource.plural,
            [obj],
            self.clock(),
            include_object=request.include_object,
            resource_version=obj["metadata"].get("resourceVersion", ""),
        )

    def _wanted(self, obj: Obj) -> bool:
        namespace = self.request.namespace
        if namespace is not None and obj["metadata"].get("namespace") != namespace:
            return False
        return self.request.matches(obj)

    def _bookmark(self, rv: int, initial_end: bool) -> bytes:
        metadata: Obj = {"resourceVersion": str(rv)}
        if initial_end:
            metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
        return _line(
            "BOOKMARK",
            {
                "kind": self.request.resource.kind,
                "apiVersion": self.request.resource.api_version,
                "metadata": metadata,
            },
        )

    def initial(self) -> tuple[list[bytes], int]:
        """The lines to send first and the resourceVersion live events must exceed."""
        request = self.request
        version = request.resource_version
        if version in (None, "", "0") or request.send_initial_events:
            items, rv = self.store.list_objects(
                request.cluster, request.resource.store, request.namespace
            )
            lines = [_line("ADDED", self._render(o)) for o in items if self._wanted(o)]
            if request.send_initial_events and request.allow_bookmarks:
                lines.append(self._bookmark(rv, initial_end=True))
            return lines, rv
        start = int(version)
        events = self.store.events_since(request.cluster, request.resource.store, start)
        lines = [_line(e.type, self._render(e.object)) for e in events if self._wanted(e.object)]
        return lines, events[-1].rv if events else start

    async def stream(self) -> AsyncIterator[bytes]:
        self.loop = asyncio.get_running_loop()
        await self.store.committed()  # the history and listing below are committed state
        scope = (self.request.cluster, self.request.resource.store.key)
        self.store.add_listener(self._listen, committed=True, only=scope)
        try:
            try:
                lines, last_rv = self.initial()
            except Expired as err:
                yield _line(
                    "ERROR",
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Failure",
                        "message": str(err),
                        "reason": "Expired",
                        "code": 410,
                    },
                )
                return
            for line in lines:
                yield line
            async for line in self._live(last_rv):
                yield line
        finally:
            self.store.remove_listener(self._listen)

    async def _live(self, last_rv: int) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request.timeout_seconds
        while not self.stopping.is_set():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            try:
                event = await asyncio.wait_for(self.queue.get(), min(remaining, 1.0))
            except TimeoutError:
                continue
            lines, last_rv, overflowed = self._drain(event, last_rv)
            if lines:
                yield b"".join(lines)
            if overflowed:
                return  # the client re-lists

    def _drain(self, first: WatchEvent | None, last_rv: int) -> tuple[list[bytes], int, bool]:
        """The lines of ``first`` and of every event already queued behind it (a burst of
        events goes out in one write: the same bytes, far fewer socket sends), the newest
        resourceVersion sent, and whether the queue overflowed."""
        lines: list[bytes] = []
        event = first
        while event is not None:
            if event.rv > last_rv and self._wanted(event.object):
                last_rv = event.rv
                lines.append(_line(event.type, self._render(event.object)))
            if self.queue.empty():
                return lines, last_rv, False
            event = self.queue.get_nowait()
        return lines, last_rv, True
