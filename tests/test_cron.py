"""Cron schedules (``allot.controllers.cron``): next times in UTC and in time zones, the
grammar's refusals as the controller sees them, and a brute-force property check."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allot.controllers import cron

UTC = dt.UTC
START = dt.datetime(2026, 11, 26, 17, 50, 30, tzinfo=UTC)  # a Thursday


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


NEXT_TIMES = [
    ("* * * * *", "2026-11-26T17:51"),
    ("*/15 * * * *", "2026-11-26T18:00"),
    ("5 * * * *", "2026-11-26T18:05"),
    ("0 9-17 * * MON-FRI", "2026-11-27T09:00"),
    ("0 0 * * sat,sun", "2026-11-28T00:00"),
    ("0 0 1 JAN *", "2027-01-01T00:00"),
    ("@hourly", "2026-11-26T18:00"),
    ("@daily", "2026-11-27T00:00"),
    ("@midnight", "2026-11-27T00:00"),
    ("@weekly", "2026-11-29T00:00"),
    ("@monthly", "2026-12-01T00:00"),
    ("@yearly", "2027-01-01T00:00"),
    ("@annually", "2027-01-01T00:00"),
    ("30/10 17 * * *", "2026-11-27T17:30"),  # 17:30, 17:40, 17:50: all passed today
    ("0 12 13 * 5", "2026-11-27T12:00"),  # day 13 OR a Friday: Friday the 27th first
    ("0 12 13 * *", "2026-12-13T12:00"),
    ("0 0 29 2 *", "2028-02-29T00:00"),
    ("? ? ? ? ?", "2026-11-26T17:51"),
]


@pytest.mark.parametrize(("schedule", "expected"), NEXT_TIMES)
def test_next_time_in_utc(schedule: str, expected: str) -> None:
    assert cron.next_after(cron.parse(schedule), START) == at(expected)


def test_time_zones_use_the_zone_wall_clock() -> None:
    schedule = cron.parse("0 9 * * *")
    berlin = cron.zone("Europe/Berlin")  # UTC+1 in November
    assert cron.next_after(schedule, START, berlin) == at("2026-11-27T08:00")
    new_york = cron.zone("America/New_York")  # UTC-5 in November
    assert cron.next_after(schedule, START, new_york) == at("2026-11-27T14:00")


def test_a_wall_time_skipped_by_daylight_saving_does_not_run() -> None:
    # Europe/Berlin jumps from 02:00 to 03:00 on 2026-03-29: 02:30 does not exist that day
    schedule = cron.parse("30 2 * * *")
    berlin = cron.zone("Europe/Berlin")
    before = dt.datetime(2026, 3, 28, 12, 0, tzinfo=UTC)
    assert cron.next_after(schedule, before, berlin) == at("2026-03-30T00:30")


def test_an_impossible_date_has_no_next_time() -> None:
    assert cron.next_after(cron.parse("59 23 31 2 *"), START) is None


def test_every_adds_its_delay_in_whole_seconds() -> None:
    later = cron.next_after(cron.parse("@every 1h30m"), START.replace(microsecond=250))
    assert later == at("2026-11-26T19:20:30")


BAD = [
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
    ("60 * * * *", "end of range (60) above maximum (59): 60"),
    ("* 24 * * *", "end of range (24) above maximum (23): 24"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("* * * 13 *", "end of range (13) above maximum (12): 13"),
    ("* * * * 7", "end of range (7) above maximum (6): 7"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
]


@pytest.mark.parametrize(("schedule", "message"), BAD)
def test_bad_schedules_are_refused_with_a_reason(schedule: str, message: str) -> None:
    with pytest.raises(cron.ScheduleError) as caught:
        cron.parse(schedule)
    assert str(caught.value) == message


def test_unknown_time_zone() -> None:
    with pytest.raises(cron.ScheduleError, match="unknown time zone Mars/Olympus"):
        cron.zone("Mars/Olympus")
    assert cron.zone(None) is UTC


def _matches(schedule: cron.Schedule, moment: dt.datetime) -> bool:
    return (
        moment.minute in schedule.minutes
        and moment.hour in schedule.hours
        and moment.month in schedule.months
        and cron.day_matches(schedule, moment.date())
    )


FIELD_TEXT = st.sampled_from(["*", "*/2", "*/7", "1-5", "3", "0,30", "10-50/20"])
HOURS = st.sampled_from(["*", "*/3", "0", "12-14", "23"])
DAYS = st.sampled_from(["*", "1", "15-20", "*/10"])
WEEKDAYS = st.sampled_from(["*", "1-5", "0", "SAT"])
MOMENTS = st.datetimes(min_value=dt.datetime(2026, 1, 1), max_value=dt.datetime(2027, 12, 31)).map(
    lambda d: d.replace(tzinfo=UTC)
)


@given(FIELD_TEXT, HOURS, DAYS, WEEKDAYS, MOMENTS)
def test_next_time_is_the_first_matching_minute(
    minutes: str, hours: str, days: str, weekdays: str, moment: dt.datetime
) -> None:
    schedule = cron.parse(f"{minutes} {hours} {days} * {weekdays}")
    following = cron.next_after(schedule, moment)
    assert following is not None
    assert following > moment
    assert following.second == 0
    assert _matches(schedule, following)
    probe = moment.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
    horizon = min(following, probe + dt.timedelta(days=3))
    while probe < horizon:
        assert not _matches(schedule, probe), probe
        probe += dt.timedelta(minutes=1)
