""" "Did you mean ...?": the known name nearest to a mistyped one.

A name that is refused or warned about because nothing by it exists (a values key vCluster
does not know, a DeviceClass the catalogue lacks) is answered with the closest known name,
when one is close, as kubectl answers ``kubectl gt`` with ``Did you mean this? get``.
Letter case is ignored when comparing (``fromhost`` suggests ``fromHost``). Pure; used by
``allot.tenancy.values``, ``allot.validation.tenancy``, the catalogue warnings and the
trace reader.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6
"""difflib's similarity ratio a known name needs to be suggested (its own default)."""


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name most like ``name`` (case ignored), or None when none is close."""
    by_lower: dict[str, str] = {}
    for candidate in sorted(known):
        by_lower.setdefault(candidate.lower(), candidate)
    found = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=CUTOFF)
    return by_lower[found[0]] if found else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``did you mean "x"?`` for the closest known name, "" when none is close."""
    found = closest(name, known)
    return f'did you mean "{found}"?' if found is not None else ""
