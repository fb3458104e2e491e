"""Index sets as Indexed Jobs write them (``1,3-5,7``): ``spec.successPolicy``'s
``succeededIndexes`` and ``status.completedIndexes``/``failedIndexes``. :func:`parse`
reads one against the Job's completions with upstream's error texts
(``validateIndexesFormat``); :func:`render` writes a set back in that form. Used by Job
validation (:mod:`allot.validation.batch`) and by whoever tracks a Job's indexes."""

from __future__ import annotations


class IndexesError(ValueError):
    """A malformed index set; the message is upstream's."""


def parse(text: str, completions: int) -> list[int]:
    """The indexes of ``text``, in order; each below ``completions``, strictly increasing."""
    found: list[int] = []
    if not text:
        return found
    for interval in text.split(","):
        limits = interval.split("-")
        if len(limits) > 2:
            raise IndexesError(
                f'the fragment "{interval}" violates the requirement that an index interval '
                "can have at most two parts separated by '-'"
            )
        first = _index(limits[0], completions, found)
        last = _index(limits[1], completions, [first]) if len(limits) == 2 else first
        found.extend(range(first, last + 1))
    return found


def _index(text: str, completions: int, before: list[int]) -> int:
    if not text.isdigit():
        raise IndexesError(f'cannot convert string to integer for index: "{text}"')
    value = int(text)
    if value >= completions:
        raise IndexesError(f'too large index: "{text}"')
    if before and before[-1] >= value:
        raise IndexesError(f"non-increasing order, previous: {before[-1]}, current: {value}")
    return value


def render(values: set[int] | list[int]) -> str:
    """``0-2,5``: consecutive runs as intervals (of two or more), in order."""
    ordered = sorted(set(values))
    parts: list[str] = []
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        first, last = ordered[start], ordered[end]
        parts.append(str(first) if first == last else f"{first}-{last}")
        start = end + 1
    return ",".join(parts)
