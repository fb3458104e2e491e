"""Alert (allot.dev/v1alpha1): a firing alert, written by the alert manager."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import NAME, column, human_duration
from allot.types import Obj


def _alert_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    since = status.get("activeSince")
    moment = dt.datetime.fromisoformat(since.replace("Z", "+00:00")) if since else None
    return [
        obj["metadata"]["name"],
        spec.get("rule", ""),
        spec.get("severity", ""),
        spec.get("tenant") or "<none>",
        human_duration((now - moment).total_seconds()) if moment else "<unknown>",
        spec.get("message", ""),
    ]


STRATEGIES = (
    KindStrategy(
        "Alert",
        "alert",
        categories=("allot",),
        subresources=("status",),
        table=Table(
            [
                NAME,
                column("Rule", "The alert rule."),
                column("Severity", "warning or critical."),
                column("Tenant", "The tenant concerned, if any."),
                column("Since", "How long the condition has held."),
                column("Message", "What is wrong."),
            ],
            _alert_cells,
        ),
    ),
)
