"""The dispatcher: every watched change handed to each subscriber after its write committed.

Sources (the in-process store's committed writes, a remote informer's watch) call
:meth:`Dispatcher.deliver`; the dispatcher keeps the events in its inbox and hands them
over on the event loop, in its own callback, never inside the writer's call. Subscribers
say which resources they follow (storage keys: ``pods``, ``resourceclaims.resource.k8s.io``)
and their stage: every ``OBSERVERS`` subscriber (a controller's memory of what it saw)
sees an event before any ``CONTROLLERS`` subscriber (a controller mapping the event to
work keys). Indexes over the cache itself (the DRA index) are no subscribers: they change
with the cache, before any event is dispatched (``Client.add_indexer``).

A subscriber that raises is isolated: the error is logged with its traceback, the event and
the ones after it wait in that subscriber's own backlog and are handed over again after a
back-off (50 ms doubling to 30 s), while every other subscriber goes on. An event that fails
``MAX_ATTEMPTS`` times is given up and the subscriber's ``resync`` (its controllers'
initial keys: a level-based catch-up) runs instead, so one bad object cannot stop a
controller for good and no work is lost.

Where no event loop runs (a command-line tool or a test writing without one), the events
wait in the inbox until the loop starts (:meth:`start`). Used by
:mod:`allot.controllers.runtime` (the controller manager subscribes its controllers), the
platform and ``allot controller``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from allot.client.protocol import WatchEvent

LOG = logging.getLogger("allot.dispatch")
OBSERVERS, CONTROLLERS = 1, 2
MAX_ATTEMPTS = 6
FIRST_BACKOFF_SECONDS = 0.05
MAX_BACKOFF_SECONDS = 30.0
Handler = Callable[[WatchEvent], None]


@dataclass(eq=False)
class Subscription:
    """One subscriber: its handler, what it follows and its own backlog."""

    name: str
    handler: Handler
    resources: frozenset[str] | None
    stage: int
    resync: Callable[[], None] | None = None
    backlog: deque[WatchEvent] = field(default_factory=deque)
    failures: int = 0
    retry: asyncio.Handle | None = None
    delivered: int = 0

    def follows(self, resource: str) -> bool:
        return self.resources is None or resource in self.resources


class Dispatcher:
    def __init__(self, max_attempts: int = MAX_ATTEMPTS) -> None:
        self.max_attempts = max_attempts
        self._subscriptions: list[Subscription] = []
        self._routes: dict[str, list[Subscription]] = {}
        self._inbox: deque[WatchEvent] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._scheduled = False
        self._draining = False
        self.settlers: list[Callable[[], Awaitable[None]]] = []
        """What the sources do to hand over what they hold (the store commits its open
        transaction): awaited by :meth:`settle` before it drains."""

    # ------------------------------------------------------------ subscribers
    def subscribe(
        self,
        name: str,
        handler: Handler,
        *,
        resources: Iterable[str] | None = None,
        stage: int = CONTROLLERS,
        resync: Callable[[], None] | None = None,
    ) -> Subscription:
        """Follow ``resources`` (None: every one) at ``stage``; in stage order, then in
        the order of subscription."""
        chosen = frozenset(resources) if resources is not None else None
        subscription = Subscription(name, handler, chosen, stage, resync)
        self._subscriptions.append(subscription)
        self._subscriptions.sort(key=lambda s: s.stage)  # stable: subscription order kept
        self._routes.clear()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)
            self._routes.clear()
        if subscription.retry is not None:
            subscription.retry.cancel()

    def _route(self, resource: str) -> list[Subscription]:
        route = self._routes.get(resource)
        if route is None:
            route = self._routes[resource] = [s for s in self._subscriptions if s.follows(resource)]
        return route

    # ----------------------------------------------------------------- events
    def start(self) -> None:
        """Bind to the running loop and hand over what arrived before it ran."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        for subscription in self._subscriptions:  # failed while no loop could retry them
            if subscription.backlog and subscription.retry is None:
                subscription.retry = self._loop.call_soon(self._retry, subscription)
        self.drain()

    def stop(self) -> None:
        for subscription in self._subscriptions:
            if subscription.retry is not None:
                subscription.retry.cancel()
                subscription.retry = None
        self._loop = None

    def deliver(self, event: WatchEvent) -> None:
        """Take one event from a source; it is handed over on the loop, after this call."""
        self._inbox.append(event)
        loop = self._loop
        if loop is None or not loop.is_running() or self._scheduled:
            return
        self._scheduled = True
        if threading.get_ident() == self._thread:
            loop.call_soon(self.drain)
        else:  # a write made in another thread (a test's, a tool's)
            loop.call_soon_threadsafe(self.drain)

    def drain(self) -> None:
        """Hand every event in the inbox to its subscribers (a no-op while draining)."""
        self._scheduled = False
        if self._draining:
            return
        self._draining = True
        try:
            while self._inbox:
                event = self._inbox.popleft()
                for subscription in self._route(event.resource):
                    if subscription.backlog:
                        subscription.backlog.append(event)
                    else:
                        self._hand(subscription, event)
        finally:
            self._draining = False

    def _hand(self, subscription: Subscription, event: WatchEvent) -> bool:
        """Give one event to one subscriber; False (and the event kept) when it raised."""
        try:
            subscription.handler(event)
        except Exception:
            subscription.failures += 1
            LOG.exception(
                "%s: handling %s %s/%s failed (attempt %d)",
                subscription.name,
                event.type,
                event.resource,
                event.object.get("metadata", {}).get("name"),
                subscription.failures,
            )
            if not subscription.backlog or subscription.backlog[0] is not event:
                subscription.backlog.appendleft(event)
            self._retry_later(subscription)
            return False
        subscription.failures = 0
        subscription.delivered += 1
        return True

    def _retry_later(self, subscription: Subscription) -> None:
        if subscription.failures >= self.max_attempts:
            self._give_up(subscription)
            return
        delay = min(MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** (subscription.failures - 1))
        loop = self._loop
        if loop is not None and loop.is_running() and subscription.retry is None:
            subscription.retry = loop.call_later(delay, self._retry, subscription)

    def _give_up(self, subscription: Subscription) -> None:
        """The event at the head of the backlog failed every attempt: drop it, resync."""
        event = subscription.backlog.popleft()
        subscription.failures = 0
        LOG.error(
            "%s: gave up %s %s/%s after %d attempts; resyncing",
            subscription.name,
            event.type,
            event.resource,
            event.object.get("metadata", {}).get("name"),
            self.max_attempts,
        )
        if subscription.resync is not None:
            try:
                subscription.resync()
            except Exception:
                LOG.exception("%s: resync failed", subscription.name)
        if subscription.backlog and subscription.retry is None:
            loop = self._loop
            if loop is not None and loop.is_running():
                subscription.retry = loop.call_soon(self._retry, subscription)

    def _retry(self, subscription: Subscription) -> None:
        """Hand the backlog over again, in order, until it is empty or fails again."""
        subscription.retry = None
        while subscription.backlog:
            if not self._hand(subscription, subscription.backlog[0]):
                return
            subscription.backlog.popleft()

    # ------------------------------------------------------------- quiescence
    def quiet(self) -> bool:
        """Nothing waits in the inbox nor in any subscriber's backlog."""
        return not self._inbox and not any(s.backlog for s in self._subscriptions)

    async def settle(self) -> None:
        """Have the sources hand over what they hold, then drain the inbox."""
        for settle in self.settlers:
            await settle()
        self.drain()

    def subscriptions(self) -> list[Subscription]:
        return list(self._subscriptions)
