"""The few types and formats every layer shares: wire objects, clocks, RFC 3339 times.

A wire object (``Obj``) is a JSON document as the API server stores and serves it; code
that reads one field by field should decode it into its pydantic model instead
(:mod:`allot.api`). ``Clock`` is how the platform reads the time, so tests can fix it.
Imported by every package; imports nothing of allot.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Clock = Callable[[], dt.datetime]


def utc_now() -> dt.datetime:
    """The platform's default clock."""
    return dt.datetime.now(dt.UTC)


def rfc3339(moment: dt.datetime) -> str:
    """A time as Kubernetes writes ``metav1.Time``: UTC, whole seconds, ``Z``.

    Every write stamps the current second several times (timestamps, managed fields,
    conditions), so the last second's text is kept and reused (one tuple, replaced whole:
    safe from any thread)."""
    global _LAST_SECOND
    try:
        second = moment.timestamp() // 1  # the instant's whole second (naive: local time)
    except (OverflowError, ValueError, OSError):  # a naive time the platform cannot map
        return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    last = _LAST_SECOND
    if last[0] == second:
        return last[1]
    text = moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _LAST_SECOND = (second, text)
    return text


_LAST_SECOND: tuple[float, str] = (float("nan"), "")
