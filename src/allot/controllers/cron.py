"""Cron schedules as CronJob's ``spec.schedule`` reads them: five fields or an @-macro.

The grammar of ``robfig/cron``'s standard parser, which kube-controller-manager uses:
minute, hour, day of month, month, day of week; ``*`` and ``?``, lists ``a,b``, ranges
``a-b``, steps ``*/n``, ``a-b/n`` and ``a/n`` (from ``a`` to the field's end), month and
weekday names (``JAN``, ``sun``), 7 as Sunday is not accepted (0-6, as robfig); the
macros ``@yearly``/``@annually``, ``@monthly``, ``@weekly``, ``@daily``/``@midnight``,
``@hourly``. When both day fields are restricted a day matching either runs (cron's
rule); when one of them is ``*`` both must match. ``next_after`` finds the next time in a
time zone's wall clock (a wall time that does not exist at a DST change is skipped).
Pure; used by the CronJob controller.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTHS = {
    name: number
    for number, name in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
        start=1,
    )
}
WEEKDAYS = {name: n for n, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
SEARCH_YEARS = 5  # robfig gives up looking after five years


class CronError(ValueError):
    """A schedule that does not parse; the message says which part and why."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int]


FIELDS = (
    _Field("minute", 0, 59, {}),
    _Field("hour", 0, 23, {}),
    _Field("day of month", 1, 31, {}),
    _Field("month", 1, 12, MONTHS),
    _Field("day of week", 0, 6, WEEKDAYS),
)


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool  # day of month was * or ?
    any_weekday: bool  # day of week was * or ?

    def day_matches(self, day: dt.date) -> bool:
        in_month = day.day in self.days
        in_week = (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return in_month and in_week
        return in_month or in_week

    def next_after(self, moment: dt.datetime, zone: dt.tzinfo = dt.UTC) -> dt.datetime | None:
        """The first scheduled time strictly after ``moment`` (in UTC), or None when none
        comes within five years."""
        wall = moment.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0)
        wall += dt.timedelta(minutes=1)
        limit = wall.year + SEARCH_YEARS
        while wall.year <= limit:
            if wall.month not in self.months:
                wall = _first_of_next_month(wall)
                continue
            if not self.day_matches(wall.date()):
                wall = dt.datetime(wall.year, wall.month, wall.day) + dt.timedelta(days=1)
                continue
            if wall.hour not in self.hours:
                wall = wall.replace(minute=0) + dt.timedelta(hours=1)
                continue
            if wall.minute not in self.minutes:
                wall += dt.timedelta(minutes=1)
                continue
            found = _existing(wall, zone)
            if found is not None and found > moment:
                return found
            wall += dt.timedelta(minutes=1)
        return None


def _first_of_next_month(wall: dt.datetime) -> dt.datetime:
    if wall.month == 12:
        return dt.datetime(wall.year + 1, 1, 1)
    return dt.datetime(wall.year, wall.month + 1, 1)


def _existing(wall: dt.datetime, zone: dt.tzinfo) -> dt.datetime | None:
    """The UTC instant of a wall time in ``zone``, None if the clocks skip it."""
    aware = wall.replace(tzinfo=zone)
    instant = aware.astimezone(dt.UTC)
    if instant.astimezone(zone).replace(tzinfo=None) != wall:
        return None
    return instant


def parse(text: str) -> Schedule:
    """A schedule from its text, or :class:`CronError`."""
    spec = text.strip()
    if spec.startswith("@"):
        if spec.lower() not in MACROS:
            raise CronError(f"unrecognized descriptor: {spec}")
        spec = MACROS[spec.lower()]
    parts = spec.split()
    if len(parts) != len(FIELDS):
        raise CronError(f"expected exactly 5 fields, found {len(parts)}: [{' '.join(parts)}]")
    values = [_parse_field(part, field) for part, field in zip(parts, FIELDS, strict=True)]
    return Schedule(
        minutes=values[0][0],
        hours=values[1][0],
        days=values[2][0],
        months=values[3][0],
        weekdays=values[4][0],
        any_day=values[2][1],
        any_weekday=values[4][1],
    )


def _parse_field(text: str, field: _Field) -> tuple[frozenset[int], bool]:
    """A field's values, and whether it was an unrestricted ``*``/``?``."""
    values: set[int] = set()
    star = False
    for item in text.split(","):
        found, item_star = _parse_item(item, field)
        values |= found
        star = star or item_star
    return frozenset(values), star


def _parse_item(item: str, field: _Field) -> tuple[set[int], bool]:
    range_part, _, step_part = item.partition("/")
    if "/" in step_part:
        raise CronError(f"too many slashes: {item}")
    star = range_part in ("*", "?")
    if star:
        low, high = field.low, field.high
    else:
        bounds = range_part.split("-")
        if len(bounds) > 2:
            raise CronError(f"too many hyphens: {item}")
        low = _number(bounds[0], field)
        high = _number(bounds[-1], field)
        if len(bounds) == 1 and step_part:
            high = field.high  # "N/step" means N to the end
    step = 1
    if step_part:
        step = _integer(step_part, item)
        if step <= 0:
            raise CronError(f"step of range should be a positive number: {item}")
        if step > 1:
            star = False
    if low < field.low:
        raise CronError(f"beginning of range ({low}) below minimum ({field.low}): {item}")
    if high > field.high:
        raise CronError(f"end of range ({high}) above maximum ({field.high}): {item}")
    if low > high:
        raise CronError(f"beginning of range ({low}) beyond end of range ({high}): {item}")
    return set(range(low, high + 1, step)), star


def _number(text: str, field: _Field) -> int:
    named = field.names.get(text.lower())
    return named if named is not None else _integer(text, text)


def _integer(text: str, item: str) -> int:
    if not text.isdigit():
        raise CronError(f"failed to parse int from {text}: {item}")
    return int(text)


def zone(name: str | None) -> dt.tzinfo:
    """A CronJob's ``spec.timeZone`` (UTC when unset); ``CronError`` if unknown."""
    if not name:
        return dt.UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as err:
        raise CronError(f"unknown time zone {name}") from err
