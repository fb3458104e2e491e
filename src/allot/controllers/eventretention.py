"""Event retention: Events expire an hour after their last write, and each cluster keeps at
most :data:`EVENTS_KEPT` of them.

Every object the store holds lives in the platform's memory (about 7 KB an Event), and the
platform's controllers write several Events per pod; kept for ever, a 2-minute load ramp
left 30,000 of them behind its deleted pods and grew the process by 230 MiB. Upstream's API
server lets Events expire (``--event-ttl``, default one hour, through etcd leases renewed
by every write of the Event): so does this controller, every :data:`SWEEP_SECONDS`, judging
an Event's last write by its newest time (``lastTimestamp``, ``series.lastObservedTime``,
``eventTime``, ``metadata.creationTimestamp``). Within the hour, a cluster past
:data:`EVENTS_KEPT` Events loses its oldest, down to 90 % of it (upstream keeps every Event
for the hour: a deviation, in docs/conformance.md), so memory stays bounded whatever the
rate. Runs in every cluster as the platform (its deletions are not a tenant's writes).
Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable

from allot.controllers.context import ControllerContext
from allot.controllers.jobrules import parse_time
from allot.controllers.runtime import RetryLater
from allot.registry.resources import by_kind
from allot.store import WatchEvent
from allot.types import Obj

EVENTS = "events"
EVENT_TTL = dt.timedelta(hours=1)  # kube-apiserver's --event-ttl default
EVENTS_KEPT = 500
SWEEP_SECONDS = 60.0
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def last_written(event: Obj) -> dt.datetime:
    """The newest time an Event carries: when it was last written, as far as it says."""
    series = event.get("series") or {}
    stamps = (
        event.get("lastTimestamp"),
        series.get("lastObservedTime"),
        event.get("eventTime"),
        (event.get("metadata") or {}).get("creationTimestamp"),
    )
    times = [parsed for stamp in stamps if isinstance(stamp, str) and (parsed := parse_time(stamp))]
    return max(times, default=EPOCH)


class EventRetention:
    name = "event-retention"
    watches = frozenset({EVENTS})  # the resources keys_for answers for

    def __init__(self, host: ControllerContext) -> None:
        self.host = host
        self._contexts: dict[str, ControllerContext] = {host.cluster: host}
        self._swept: set[str] = set()  # clusters whose expiry sweep is scheduled

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.resource != EVENTS or event.type != "ADDED":
            return []
        keys: list[Hashable] = []
        if event.cluster not in self._swept:
            keys.append(("expire", event.cluster))
        if self.host.store.count(event.cluster, by_kind("Event").store) > EVENTS_KEPT:
            keys.append(("trim", event.cluster))
        return keys

    def initial_keys(self) -> list[Hashable]:
        clusters = self.host.store.clusters()
        return [*(("expire", c) for c in clusters), *(("trim", c) for c in clusters)]

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        action, cluster = key
        context = self._context(cluster)
        events = sorted(context.scan("Event"), key=last_written)
        if action == "trim":
            excess = len(events) - int(EVENTS_KEPT * 0.9) if len(events) > EVENTS_KEPT else 0
            self._delete(context, events[:excess])
            return
        self._swept.add(cluster)
        if not events and cluster not in self.host.store.clusters():
            self._swept.discard(cluster)  # a removed cluster: nothing to sweep any more
            self._contexts.pop(cluster, None)
            return
        oldest_kept = context.clock() - EVENT_TTL
        self._delete(context, [e for e in events if last_written(e) < oldest_kept])
        raise RetryLater(SWEEP_SECONDS)

    def _context(self, cluster: str) -> ControllerContext:
        context = self._contexts.get(cluster)
        if context is None:
            host = self.host
            context = self._contexts[cluster] = ControllerContext(
                cluster, host.store, host.handlers, host.clock
            )
        return context

    @staticmethod
    def _delete(context: ControllerContext, events: list[Obj]) -> None:
        for event in events:
            metadata = event["metadata"]
            context.delete("Event", metadata.get("namespace", ""), metadata["name"])
