"""Regular expressions in CEL as Kubernetes runs them: Go's ``regexp``, RE2 in linear time.

Kubernetes evaluates ``matches``, ``find`` and ``findAll`` with Go's ``regexp`` package:
RE2 syntax (no backreferences, no lookaround), time linear in the text, leftmost-first
matches, ``$`` only at the end of the text, and ``findAll`` skipping an empty match that
abuts the previous one. Python's ``re`` backtracks (a 26-character pattern can run for
seconds) and differs in all of these, so every pattern goes through RE2 (the
``google-re2`` binding) with Go's rules on top: ``\\C`` (any byte) is refused as Go does,
and parse errors read as Go's (``error parsing regexp: invalid escape sequence: `\\1```).

Each call is charged against the evaluation's budget (:mod:`allot.cel.cost`) what
Kubernetes' cost estimator charges at run time, before the pattern runs:
``ceil((1 + len(text)) * 0.1) * ceil(len(pattern) * 0.25)``.

Called by :mod:`allot.cel.libraries` (the functions) and :mod:`allot.cel.compiler` (the
compile-time checks of literal patterns).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from allot.cel import cost

STRING_TRAVERSAL_COST_FACTOR = 0.1
REGEX_STRING_LENGTH_COST_FACTOR = 0.25
COMPILED_CACHE_SIZE = 1024
ILLEGAL_REGEX = "Illegal regex: "
"""How Kubernetes' ``find`` and ``findAll`` report a bad pattern computed at run time
(``matches`` gives Go's text alone)."""

# RE2's error texts -> Go's regexp/syntax ErrorCode texts (the parser is the same port).
_GO_ERROR_CODES = {
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class range": "invalid character class range",
    "invalid character class": "invalid character class",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
    "pattern too large - compile failed": "expression too large",
    "pattern too large - reverse compile failed": "expression too large",
}


class RegexError(ValueError):
    """A pattern Go's regexp refuses; ``str()`` is Go's text."""


@lru_cache(maxsize=1)
def _engine() -> tuple[Any, Any]:
    """RE2 and its options, imported on the first pattern (it costs start-up 60 ms)."""
    import re2

    options = re2.Options()
    options.log_errors = False
    return re2, options


@lru_cache(maxsize=COMPILED_CACHE_SIZE)
def compile_pattern(pattern: str) -> Any:
    """The compiled pattern, or :class:`RegexError` with Go's text."""
    refused = _refused_escape(pattern)
    if refused:
        raise RegexError(f"error parsing regexp: invalid escape sequence: `{refused}`")
    re2, options = _engine()
    try:
        return re2.compile(pattern, options)
    except re2.error as err:
        raise RegexError(_go_error_text(err, pattern)) from None


def _refused_escape(pattern: str) -> str:
    """``\\C`` outside ``\\Q...\\E``: RE2 reads it as any byte, Go refuses it."""
    index = 0
    while index < len(pattern) - 1:
        if pattern[index] != "\\":
            index += 1
            continue
        escaped = pattern[index + 1]
        if escaped == "Q":
            end = pattern.find("\\E", index + 2)
            index = len(pattern) if end < 0 else end + 2
            continue
        if escaped == "C":
            return "\\C"
        index += 2
    return ""


def _go_error_text(err: Exception, pattern: str) -> str:
    raw = err.args[0] if err.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    for code in sorted(_GO_ERROR_CODES, key=len, reverse=True):
        if text == code or text.startswith(code + ": "):
            fragment = text[len(code) + 2 :]
            if fragment.startswith("(?<"):
                return _lookbehind_error(pattern, fragment)
            return f"error parsing regexp: {_GO_ERROR_CODES[code]}: `{fragment}`"
    return f"error parsing regexp: {text}"


def _lookbehind_error(pattern: str, fragment: str) -> str:
    """Go reads ``(?<`` as a named group (``(?<name>``), so a lookbehind is a bad name:
    up to its ``>``, or the rest of the pattern when none follows."""
    rest = pattern[max(pattern.find(fragment), 0) :]
    end = rest.find(">")
    return f"error parsing regexp: invalid named capture: `{rest if end < 0 else rest[: end + 1]}`"


def call_cost(text_size: int, pattern_size: int) -> int:
    """What Kubernetes charges for one regex call (at run time, and in its estimate with
    the largest sizes): sizes in characters."""
    text_cost = math.ceil((1 + text_size) * STRING_TRAVERSAL_COST_FACTOR)
    pattern_cost = math.ceil(pattern_size * REGEX_STRING_LENGTH_COST_FACTOR)
    return text_cost * pattern_cost


def _prepared(text: str, pattern: str, error_prefix: str = "") -> Any:
    cost.charge(call_cost(len(text), len(pattern)))
    try:
        return compile_pattern(pattern)
    except RegexError as err:
        raise RegexError(error_prefix + str(err)) from None


def matches(text: str, pattern: str) -> bool:
    """``text.matches(pattern)``: whether the pattern matches anywhere in the text."""
    return _prepared(text, pattern).search(text) is not None


def find(text: str, pattern: str) -> str:
    """``text.find(pattern)``: the leftmost match, or ""."""
    match = _prepared(text, pattern, ILLEGAL_REGEX).search(text)
    return "" if match is None else str(match.group(0))


def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """``text.findAll(pattern[, limit])`` as Go's ``FindAllString``: successive
    non-overlapping matches, an empty match right after the previous match skipped, at
    most ``limit`` of them when ``limit`` >= 0."""
    compiled = _prepared(text, pattern, ILLEGAL_REGEX)
    if limit < 0:
        limit = len(text) + 1
    found: list[str] = []
    position, previous_end = 0, -1
    while len(found) < limit and position <= len(text):
        match = compiled.search(text, position)
        if match is None:
            break
        start, end = match.span()
        accept = True
        if end == position:  # an empty match
            accept = start != previous_end
            position += 1
        else:
            position = end
        previous_end = end
        if accept:
            found.append(text[start:end])
    return found
