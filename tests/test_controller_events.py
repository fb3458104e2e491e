"""Events recorded by the platform's controllers: named as client-go names them, so that
listing order is the order they happened in, and repeats counted on one Event."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from allot.controllers.context import ControllerContext
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry

NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)
REASONS = ["Scheduled", "Pulling", "Pulled", "Created", "Started", "QuotaReserved", "Pending"]


def test_events_of_one_second_list_in_the_order_they_happened(tmp_path: Path) -> None:
    registry = Registry(tmp_path, clock=lambda: NOW)
    try:
        context = ControllerContext(HOST_CLUSTER, registry.store, registry.handlers, lambda: NOW)
        context.create("Namespace", {"metadata": {"name": "team"}}, "test")
        pod = {"kind": "Pod", "apiVersion": "v1",
               "metadata": {"name": "trainer", "namespace": "team", "uid": "u-1"}}  # fmt: skip
        for reason in REASONS:
            context.event(pod, "Normal", reason, f"{reason} happened", "test")
        context.event(pod, "Normal", "Pulled", "Pulled happened", "test")  # a repeat
        events = sorted(context.list("Event", "team"), key=lambda e: e["metadata"]["name"])
        assert [e["reason"] for e in events] == REASONS
        assert all(e["metadata"]["name"].startswith("trainer.") for e in events)
        assert [e["count"] for e in events] == [1, 1, 2, 1, 1, 1, 1]
    finally:
        registry.close()
