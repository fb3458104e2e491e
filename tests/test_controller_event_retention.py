"""Events expire an hour after their last write (upstream's ``--event-ttl``) and a cluster
keeps at most ``EVENTS_KEPT`` of them, its oldest going first: what bounds the platform's
memory under a load ramp (issue 28, item 12)."""

from __future__ import annotations

import datetime as dt

import pytest

from allot.controllers.context import ControllerContext
from allot.controllers.eventretention import EVENTS_KEPT, EventRetention
from allot.controllers.runtime import RetryLater
from allot.store import WatchEvent
from allot.types import rfc3339
from tests.conftest import NOW


def _record(context: ControllerContext, index: int, at: dt.datetime) -> WatchEvent:
    """An Event about pod ``p-<index>`` last written ``at``; the store event that wrote it."""
    heard: list[WatchEvent] = []
    context.store.add_listener(heard.append)
    stamp = rfc3339(at)
    context.create(
        "Event",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"p-{index}.{index:x}", "namespace": "team"},
            "involvedObject": {"kind": "Pod", "namespace": "team", "name": f"p-{index}"},
            "reason": "Started",
            "message": "Container started",
            "type": "Normal",
            "source": {"component": "kubelet"},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        },
        "test",
    )
    context.store.remove_listener(heard.append)
    return heard[-1]


def _names(context: ControllerContext) -> set[str]:
    return {e["metadata"]["name"] for e in context.scan("Event")}


def test_events_expire_an_hour_after_their_last_write(team_context: ControllerContext) -> None:
    later = NOW + dt.timedelta(hours=1, seconds=1)
    store, handlers = team_context.store, team_context.handlers
    retention = EventRetention(ControllerContext("host", store, handlers, lambda: later))
    created = _record(team_context, 0, NOW)  # created (its last write) at NOW
    _record(team_context, 1, NOW + dt.timedelta(minutes=30))  # a repeat seen later
    assert ("expire", "host") in retention.keys_for(created)
    with pytest.raises(RetryLater) as again:  # and looks again in a minute
        retention.reconcile(("expire", "host"))
    assert again.value.seconds == 60
    assert _names(team_context) == {"p-1.1"}
    assert ("expire", "host") not in retention.keys_for(created)  # its sweep is scheduled


def test_a_cluster_keeps_its_newest_events(team_context: ControllerContext) -> None:
    retention = EventRetention(team_context)
    keys = []
    for index in range(EVENTS_KEPT + 1):
        event = _record(team_context, index, NOW + dt.timedelta(seconds=index))
        keys = retention.keys_for(event)
    assert ("trim", "host") in keys
    retention.reconcile(("trim", "host"))
    kept = int(EVENTS_KEPT * 0.9)
    assert _names(team_context) == {
        f"p-{i}.{i:x}" for i in range(EVENTS_KEPT + 1 - kept, EVENTS_KEPT + 1)
    }
