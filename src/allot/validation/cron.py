"""Parsing of a CronJob's ``spec.schedule`` as the CronJob controller's parser reads it
(robfig/cron's standard parser): five fields (minute, hour, day of month, month, day of
week) with ranges, lists, steps, ``*``/``?`` and month/day names, or a descriptor
(``@hourly``, ``@daily``, ``@every 1h30m``, ...). :func:`parse` returns the allowed values
per field or raises :class:`ScheduleError` with the parser's message, which validation
(:mod:`allot.validation.batch`) shows; the CronJob controller reads the fields to find the
next run."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MONTHS = {
    n: i + 1
    for i, n in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_DAYS = {n: i for i, n in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)
DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(h|m|s|ms|us|µs|ns))+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


class ScheduleError(ValueError):
    """A schedule the parser refuses; the message is the parser's."""


@dataclass(frozen=True)
class Schedule:
    """Allowed minutes, hours, days of month, months and weekdays; or ``every`` seconds.
    ``dom_star``/``dow_star``: the field was ``*`` (cron's day-matching rule)."""

    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()
    dom_star: bool = False
    dow_star: bool = False
    every: float | None = None


def parse(spec: str) -> Schedule:
    text = spec.strip()
    if not text:
        raise ScheduleError("empty spec string")
    if text.startswith(("TZ=", "CRON_TZ=")):  # validation refuses it; a stored one is read
        text = text.partition(" ")[2].strip()
    if text.startswith("@"):
        return _descriptor(text)
    fields = text.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    values = [_field(f, *bounds) for f, bounds in zip(fields, _BOUNDS, strict=True)]
    weekdays = frozenset(d % 7 for d in values[4])
    return Schedule(
        frozenset(values[0]),
        frozenset(values[1]),
        frozenset(values[2]),
        frozenset(values[3]),
        weekdays,
        dom_star=fields[2] in ("*", "?"),
        dow_star=fields[4] in ("*", "?"),
    )


def _descriptor(text: str) -> Schedule:
    if text.startswith("@every "):
        duration = text[len("@every ") :].strip()
        if not _DURATION.match(duration):
            raise ScheduleError(
                f'failed to parse duration {text}: time: invalid duration "{duration}"'
            )
        seconds = sum(
            float(amount) * _UNIT_SECONDS[unit] for amount, unit in _DURATION_PART.findall(duration)
        )
        return Schedule(every=max(seconds, 1.0))
    expansion = DESCRIPTORS.get(text)
    if expansion is None:
        raise ScheduleError(f"unrecognized descriptor: {text}")
    return parse(expansion)


def _field(text: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    found: set[int] = set()
    for part in text.split(","):
        found |= _range(part, low, high, names)
    return found


def _range(expression: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    range_text, slash, step_text = expression.partition("/")
    if slash and "/" in step_text:
        raise ScheduleError(f"too many slashes: {expression}")
    if range_text in ("*", "?"):
        start, end = low, high
    else:
        first, dash, last = range_text.partition("-")
        if dash and "-" in last:
            raise ScheduleError(f"too many hyphens: {expression}")
        start = _value(first, names)
        end = _value(last, names) if dash else start
    step = 1
    if slash:
        step = _number(step_text)
        if not range_text.count("-") and range_text not in ("*", "?"):
            end = high
        if step == 0:
            raise ScheduleError(f"step of range should be a positive number: {expression}")
    if start < low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({low}): {expression}")
    if end > high:
        raise ScheduleError(f"end of range ({end}) above maximum ({high}): {expression}")
    if start > end:
        raise ScheduleError(
            f"beginning of range ({start}) beyond end of range ({end}): {expression}"
        )
    return set(range(start, end + 1, step))


def _value(text: str, names: dict[str, int]) -> int:
    named = names.get(text.lower())
    return named if named is not None else _number(text)


def _number(text: str) -> int:
    if not text.isdigit():
        raise ScheduleError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    return int(text)
