"""Watch streams: one JSON event per line, flushed, as kubectl and the Python client read them.

Events queued together are flushed together (one chunk of several lines), so a burst of
writes costs one socket send per watcher, not one per event; an event's line is made once
for every watch of its resource (:class:`EventLines`). A stream waits on its queue alone:
its timeout and the server's stop arrive there as signals.

Semantics (kubectl-protocol §3.5): without a resourceVersion (or ``0``) the stream starts with
synthetic ADDED events for the current state; with ``N`` it replays retained events after
``N`` (410 Expired when they were compacted); ``sendInitialEvents=true`` ends the initial
state with a BOOKMARK annotated ``k8s.io/initial-events-end``. Label and field selectors
filter events as upstream's watch cache does (:func:`transition`): a write that takes an
object out of a watch's selector is sent as DELETED (its previous content at the write's
resourceVersion), one that brings it in as ADDED; a resumed watch knows an object's
previous content while the store retains the event that wrote it. With a Table Accept header
each event carries a one-row Table. The stream ends after ``timeoutSeconds`` (default 30
minutes) or when the server stops.

Each cluster (the host, each tenant) may hold ``MAX_WATCHES_PER_CLUSTER`` open watches;
:class:`WatchSlots` counts them, so one tenant opening hundreds cannot starve the others:
past the limit the router answers 429 ``TooManyRequests``. A slot is taken before the
response starts and given back when its stream ends, times out or its client goes away.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from allot.api.documents import encode_document
from allot.apiserver import tables
from allot.apiserver.errors import TooManyRequests
from allot.registry.resources import ServedResource
from allot.store import Store, WatchEvent
from allot.store.errors import Expired
from allot.types import Obj

DEFAULT_TIMEOUT_SECONDS = 1800
QUEUE_LIMIT = 10_000
MAX_WATCHES_PER_CLUSTER = 100
RECENT_LINES = 1024


@dataclass
class WatchRequest:
    cluster: str
    resource: ServedResource
    namespace: str | None
    matches: Callable[[Obj], bool]
    """The label and field selectors; with ``selects`` False it accepts every object."""
    resource_version: str | None
    send_initial_events: bool
    allow_bookmarks: bool
    timeout_seconds: float
    as_table: bool
    include_object: str
    selects: bool = True


def transition(event_type: str, matched: bool | None, matches: bool) -> str | None:
    """The event a watch sends for a write, from whether the object as it was before
    (``matched``; None when unknown) and as it is now (``matches``; never for a deletion)
    pass its filter; None: nothing. Upstream's cacher rule: both -> MODIFIED, only now ->
    ADDED, only before -> DELETED, neither -> nothing. With the previous object unknown
    (an event read back from the database) the write's own type is sent if it matches."""
    if event_type == "DELETED":
        return "DELETED" if matched else None
    if matched is None:
        return event_type if matches else None
    if matches:
        return "MODIFIED" if matched else "ADDED"
    return "DELETED" if matched else None


def _at_version(obj: Obj, rv: int) -> Obj:
    """``obj`` with resourceVersion ``rv``: the top level and metadata copied, the rest
    shared (what a watch sends for an object that left its selector)."""
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(rv)}}


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
    return encode_document({"type": event_type, "object": obj}) + b"\n"


class _Signal(enum.Enum):
    """What a stream's queue holds besides events."""

    OVERFLOWED = "overflowed"  # the client reads too slowly: end, it re-lists
    ENDED = "ended"  # the stream's timeout passed or the server stops


class EventLines:
    """The JSON line of each recent event, made once for every watch of its resource
    (a hundred watchers of one resource share one serialization of each event). One per
    API server; it keeps the lines of the last :data:`RECENT_LINES` events."""

    def __init__(self) -> None:
        self._lines: OrderedDict[tuple[int, str, str, str], tuple[WatchEvent, bytes]] = (
            OrderedDict()
        )

    def line(
        self, event: WatchEvent, resource: ServedResource, sent_as: str | None = None
    ) -> bytes:
        """The event as a plain (not Table) watch line of type ``sent_as`` (see
        :func:`transition`; the event's own by default), the object typed as ``resource``."""
        sent_as = sent_as or event.type
        key = (event.rv, resource.api_version, resource.kind, sent_as)
        cached = self._lines.get(key)
        if cached is not None and cached[0] is event:
            return cached[1]
        line = _line(sent_as, _typed(_sent_object(event, sent_as), resource))
        self._lines[key] = (event, line)
        if len(self._lines) > RECENT_LINES:
            self._lines.popitem(last=False)
        return line


def _sent_object(event: WatchEvent, sent_as: str) -> Obj:
    """What a watch sends for ``event`` sent as ``sent_as``: the object, or for a write
    that took it out of the watch's selector its previous content at the write's version."""
    if sent_as == "DELETED" and event.type != "DELETED" and event.previous is not None:
        return _at_version(event.previous, event.rv)
    return event.object


def _typed(obj: Obj, resource: ServedResource) -> Obj:
    """``obj`` with its apiVersion and kind (a new dict if it lacks them: the store's
    object is never modified)."""
    if "apiVersion" in obj and "kind" in obj:
        return obj
    return {"apiVersion": resource.api_version, "kind": resource.kind, **obj}


class WatchStream:
    """Subscribes to the store before reading history, so no event is lost in between."""

    def __init__(
        self,
        store: Store,
        request: WatchRequest,
        clock: Callable[[], dt.datetime],
        stopping: asyncio.Event,
        lines: EventLines | None = None,
    ) -> None:
        self.store = store
        self.request = request
        self.clock = clock
        self.stopping = stopping
        self.lines = lines or EventLines()
        self.queue: asyncio.Queue[WatchEvent | _Signal] = asyncio.Queue()
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
            self.queue.put_nowait(_Signal.OVERFLOWED)
            return
        self.queue.put_nowait(event)

    def _end(self) -> None:
        """The stream's timeout passed or the server stops: the stream ends after what
        is queued before this."""
        self.queue.put_nowait(_Signal.ENDED)

    def _event_line(self, event: WatchEvent, sent_as: str) -> bytes:
        if self.request.as_table:
            return _line(sent_as, self._render(_sent_object(event, sent_as)))
        return self.lines.line(event, self.request.resource, sent_as)

    def _sent_as(self, event: WatchEvent) -> str | None:
        """What this watch sends for ``event`` (:func:`transition`), judging the object as
        it was before (``event.previous``; None: unknown, or it did not exist) and now."""
        if not self.request.selects:  # the namespace alone, which a write never changes
            return event.type if self._wanted(event.object) else None
        matches = event.type != "DELETED" and self._wanted(event.object)
        matched: bool | None
        if event.type == "ADDED":
            matched = False
        elif event.previous is not None:  # same namespace: the selectors alone
            matched = self.request.matches(event.previous)
        elif event.type == "DELETED":
            matched = self._wanted(event.object)  # its last content, at the deletion
        else:
            matched = None
        return transition(event.type, matched, matches)

    def _render(self, obj: Obj) -> Obj:
        request = self.request
        obj = _typed(obj, request.resource)
        if not request.as_table:
            return obj
        return tables.table(
            request.resource,
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
        return self._replayed(events), events[-1].rv if events else start

    def _replayed(self, events: list[WatchEvent]) -> list[bytes]:
        """The lines of events read back from the database; an event whose previous
        object was compacted away is judged on its own (see :func:`transition`)."""
        lines: list[bytes] = []
        for event in events:
            sent_as = self._sent_as(event)
            if sent_as is not None:
                lines.append(self._event_line(event, sent_as))
        return lines

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
        """Queued events until the timeout, the server's stop or an overflow. Both ends
        are queued as signals (a timer and one waiter per stream), so waiting for an
        event costs no timeout of its own."""
        loop = asyncio.get_running_loop()
        timer = loop.call_later(self.request.timeout_seconds, self._end)
        stopped = asyncio.ensure_future(self.stopping.wait())
        stopped.add_done_callback(lambda _: self._end())
        try:
            while not self.stopping.is_set():
                lines, last_rv, ended = self._drain(await self.queue.get(), last_rv)
                if lines:
                    yield b"".join(lines)
                if ended:
                    return  # timed out, stopped, or overflowed: then the client re-lists
        finally:
            timer.cancel()
            stopped.cancel()

    def _drain(self, first: WatchEvent | _Signal, last_rv: int) -> tuple[list[bytes], int, bool]:
        """The lines of ``first`` and of every event already queued behind it (a burst of
        events goes out in one write: the same bytes, far fewer socket sends), the newest
        resourceVersion sent, and whether the stream ends (a signal came)."""
        lines: list[bytes] = []
        item = first
        while isinstance(item, WatchEvent):
            if item.rv > last_rv:
                sent_as = self._sent_as(item)
                if sent_as is not None:
                    last_rv = item.rv
                    lines.append(self._event_line(item, sent_as))
            if self.queue.empty():
                return lines, last_rv, False
            item = self.queue.get_nowait()
        return lines, last_rv, True
