"""Event (core/v1): what controllers report; ``kubectl get events`` columns."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import age, column
from allot.types import Obj
from allot.validation import core
from allot.validation.objects import KindRules


def _event_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    involved = obj.get("involvedObject") or {}
    last = (
        obj.get("lastTimestamp") or obj.get("eventTime") or obj["metadata"].get("creationTimestamp")
    )
    seen = age({"metadata": {"creationTimestamp": last}}, now) if last else "<unknown>"
    return [
        seen,
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        obj.get("message", ""),
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
                column("Message", "A human-readable description of the status of this operation."),
            ],
            _event_cells,
        ),
    ),
)
