"""Event (core/v1): what controllers report; ``kubectl get events`` columns."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import age, column
from allot.types import Obj
from allot.validation import core
from allot.validation.objects import KindRules


def _since(stamp: Any, now: dt.datetime) -> str:
    return age({"metadata": {"creationTimestamp": stamp}}, now) if stamp else "<unknown>"


def _event_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    """Upstream's event row: last seen (the series' last observation, else the last
    timestamp, else the first), the object, its part and the source (wide), first seen,
    count and name (wide)."""
    involved = obj.get("involvedObject") or {}
    series = obj.get("series") or {}
    first = _since(obj.get("firstTimestamp") or obj.get("eventTime"), now)
    last = _since(obj["lastTimestamp"], now) if obj.get("lastTimestamp") else first
    if series:
        last = _since(series.get("lastObservedTime"), now)
    count = int(series.get("count") or 0) if series else int(obj.get("count") or 1)
    kind = str(involved.get("kind", "")).lower()
    name = involved.get("name")
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    instance = source.get("host") or obj.get("reportingInstance") or ""
    return [
        last,
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{kind}/{name}" if name else kind,
        involved.get("fieldPath", ""),
        f"{component}, {instance}" if instance else component,
        str(obj.get("message", "")).strip(),
        first,
        count,
        obj["metadata"].get("name", ""),
    ]


STRATEGIES = (
    KindStrategy(
        "Event",
        "event",
        short_names=("ev",),
        rules=KindRules(validate=lambda obj, context: core.validate_event(obj)),
        table=Table(
            [
                column("Last Seen", "Time since the last occurrence."),
                column("Type", "Type of this event (Normal, Warning)."),
                column("Reason", "Why the action was taken."),
                column("Object", "The object this Event is about."),
                column("Subobject", "The part of the object this Event is about.", 1),
                column("Source", "The component reporting this event.", 1),
                column("Message", "A human-readable description of the status of this operation."),
                column("First Seen", "Time since the first occurrence.", 1),
                column("Count", "The number of times this event has occurred.", 1),
                column("Name", "The Event's name.", 1),
            ],
            _event_cells,
        ),
    ),
)
