"""Reading ``--since`` values: a duration back from now (``90s``, ``30m``, ``2h``,
``7d``) or an RFC 3339 time (``2026-11-22T10:00:00Z``). Used by ``allot audit``,
``allot usage`` and the audit endpoints. Pure.
"""

from __future__ import annotations

import datetime as dt
import re

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: dt.datetime) -> dt.datetime:
    match = _DURATION.match(text.strip())
    if match:
        return now - dt.timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r}: expected a duration like 30m, 2h, 7d or an RFC 3339 time "
            "like 2026-11-22T10:00:00Z"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
