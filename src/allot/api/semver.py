"""Strict semantic versions (semver.org 2.0.0), as ``version`` device attributes use them.

The API server accepts a ``version`` attribute only if it matches the semver 2.0.0 grammar,
and the CEL ``semver()`` library and the allocator's ``matchAttribute`` compare such values
by precedence. Kubernetes uses blang/semver for both; this module follows the same grammar
and ordering (build metadata is ignored for precedence). Called by the validation and CEL
layers.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from allot.api.errors import SemverError

_NUMERIC = r"0|[1-9]\d*"
_IDENT = r"(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
SEMVER_PATTERN = re.compile(
    rf"^(?P<major>{_NUMERIC})\.(?P<minor>{_NUMERIC})\.(?P<patch>{_NUMERIC})"
    rf"(?:-(?P<pre>{_IDENT}(?:\.{_IDENT})*))?"
    r"(?:\+(?P<build>[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


@functools.total_ordering
@dataclass(frozen=True, slots=True)
class Semver:
    """A parsed version; equality and order follow semver precedence."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Semver:
        return _parse_cached(text)

    @classmethod
    def parse_normalized(cls, text: str) -> Semver:
        """Parse leniently like the CEL library's ``semver(s, true)``.

        Strips a leading ``v``, pads ``1`` and ``1.2`` to three parts and drops leading
        zeros of the numeric parts, then parses strictly.
        """
        return cls.parse(normalize(text))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def compare(self, other: Semver) -> int:
        left = (self.major, self.minor, self.patch)
        right = (other.major, other.minor, other.patch)
        if left != right:
            return -1 if left < right else 1
        return _compare_prerelease(self.prerelease, other.prerelease)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.compare(other) == 0

    def __lt__(self, other: Semver) -> bool:
        return self.compare(other) < 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.prerelease))


def is_semver(text: str) -> bool:
    return SEMVER_PATTERN.match(text) is not None


def normalize(text: str) -> str:
    """Apply the CEL semver library's normalisation to ``text``."""
    text = text.removeprefix("v")
    core, sep, rest = _split_core(text)
    parts = core.split(".")
    if len(parts) > 3:
        return text
    parts = [part.lstrip("0") or "0" if part.isdigit() else part for part in parts]
    parts += ["0"] * (3 - len(parts))
    return ".".join(parts) + sep + rest


def _split_core(text: str) -> tuple[str, str, str]:
    for index, char in enumerate(text):
        if char in "-+":
            return text[:index], char, text[index + 1 :]
    return text, "", ""


@functools.lru_cache(maxsize=16384)
def _parse_cached(text: str) -> Semver:
    match = SEMVER_PATTERN.match(text)
    if match is None:
        raise SemverError(_parse_problem(text))
    pre = match.group("pre")
    build = match.group("build")
    return Semver(
        int(match.group("major")),
        int(match.group("minor")),
        int(match.group("patch")),
        tuple(pre.split(".")) if pre else (),
        tuple(build.split(".")) if build else (),
    )


def _parse_problem(text: str) -> str:
    """blang/semver's message for text that does not parse."""
    if not text:
        return "Version string empty"
    parts = text.split(".", 2)
    if len(parts) != 3:
        return "No Major.Minor.Patch elements found"
    core_patch = re.split(r"[-+]", parts[2], maxsplit=1)[0]
    for label, part in (("major", parts[0]), ("minor", parts[1]), ("patch", core_patch)):
        if not part.isdigit():
            return f"Invalid character(s) found in {label} number {part!r}"
        if len(part) > 1 and part.startswith("0"):
            return f"{label.capitalize()} number must not contain leading zeroes {part!r}"
    return f"Invalid prerelease or build metadata in {text!r}"


def _compare_prerelease(left: tuple[str, ...], right: tuple[str, ...]) -> int:
    if left == right:
        return 0
    if not left:
        return 1
    if not right:
        return -1
    for a, b in zip(left, right, strict=False):
        if a == b:
            continue
        a_num, b_num = a.isdigit(), b.isdigit()
        if a_num and b_num:
            return -1 if int(a) < int(b) else 1
        if a_num != b_num:
            return -1 if a_num else 1
        return -1 if a < b else 1
    return -1 if len(left) < len(right) else 1
