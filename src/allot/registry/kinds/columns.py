"""The pieces every kind's ``kubectl get`` columns are made of: name, age, durations.

Upstream's printers describe each column (name, type, format, priority, description) and
format ages with ``duration.HumanDuration``; the kinds' strategy modules
(:mod:`allot.registry.kinds`) build their tables from these, and
:mod:`allot.apiserver.tables` renders them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from allot.types import Obj

Cells = Callable[[Obj, dt.datetime], list[Any]]

NAME = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "priority": 0,
    "description": "Name must be unique within a namespace.",
}
AGE = {
    "name": "Age",
    "type": "string",
    "format": "",
    "priority": 0,
    "description": "CreationTimestamp is a timestamp representing the server time when "
    "this object was created.",
}


def column(name: str, description: str, priority: int = 0, kind: str = "string") -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "format": "",
        "description": description,
        "priority": priority,
    }


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(obj: Obj, now: dt.datetime) -> str:
    created = obj.get("metadata", {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    moment = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    return human_duration((now - moment).total_seconds())
