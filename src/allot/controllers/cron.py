"""When a CronJob's schedule next fires, in its time zone's wall clock.

The grammar is :mod:`allot.validation.cron`'s (robfig/cron's standard parser, which the
API server's validation and kube-controller-manager share): five fields or an @-macro,
``@every <duration>`` included. This module finds the next time after an instant: for
fields, the first minute whose month, day (cron's rule: when both day fields are
restricted a day matching either runs; when one is ``*`` both must match), hour and minute
match, in the zone's wall clock, a wall time that does not exist at a DST change skipped
(as robfig); for ``@every``, the instant plus the delay, whole seconds. Pure; used by the
CronJob controller.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo

from allot.validation.cron import Schedule, ScheduleError, parse

SEARCH_YEARS = 5  # robfig gives up looking after five years

__all__ = ["Schedule", "ScheduleError", "next_after", "parse", "zone"]


def day_matches(schedule: Schedule, day: dt.date) -> bool:
    in_month = day.day in schedule.days
    in_week = (day.isoweekday() % 7) in schedule.weekdays
    if schedule.dom_star or schedule.dow_star:
        return in_month and in_week
    return in_month or in_week


def next_after(
    schedule: Schedule, moment: dt.datetime, zone: dt.tzinfo = dt.UTC
) -> dt.datetime | None:
    """The first scheduled time strictly after ``moment`` (in UTC), or None when none
    comes within five years."""
    if schedule.every is not None:
        whole = moment.astimezone(dt.UTC).replace(microsecond=0)
        return whole + dt.timedelta(seconds=int(schedule.every))
    wall = moment.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0)
    wall += dt.timedelta(minutes=1)
    limit = wall.year + SEARCH_YEARS
    while wall.year <= limit:
        if wall.month not in schedule.months:
            wall = _first_of_next_month(wall)
        elif not day_matches(schedule, wall.date()):
            wall = dt.datetime(wall.year, wall.month, wall.day) + dt.timedelta(days=1)
        elif wall.hour not in schedule.hours:
            wall = wall.replace(minute=0) + dt.timedelta(hours=1)
        elif wall.minute not in schedule.minutes:
            wall += dt.timedelta(minutes=1)
        else:
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
    instant = wall.replace(tzinfo=zone).astimezone(dt.UTC)
    if instant.astimezone(zone).replace(tzinfo=None) != wall:
        return None
    return instant


def zone(name: str | None) -> dt.tzinfo:
    """A CronJob's ``spec.timeZone`` (UTC when unset); ``ScheduleError`` if unknown."""
    if not name:
        return dt.UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as err:
        raise ScheduleError(f"unknown time zone {name}") from err
