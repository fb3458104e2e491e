"""Devices grouped by what a set of selectors can see of them, to check classes cheaply.

A fleet of thousands of GPUs publishes few *kinds* of device: they differ in their UUID,
PCI address and name, which a class's selector seldom reads. A selector's result depends
only on the device's driver, ``allowMultipleAllocations``, the attribute and capacity
names present, and the values it reads; so devices equal in those are equal for it. This
module groups raw ResourceSlice devices by that projection and returns one
:class:`DeviceView` per group with the number of devices it stands for, so the linter
evaluates a class once per kind of device instead of once per device (and builds only
those views). The projection keeps, conservatively, every value whose name appears as an
identifier or string in the expressions, every version value (a malformed one fails
evaluation) and every attribute's type; an expression that reads a whole attribute or
capacity map (macros, ``size``, map literals, a domain map used as a value) keeps every
value. Pure; used by the API server's DeviceClass warnings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from allot.api import resource_v1 as resourceapi
from allot.cel import DeviceView
from allot.cel.device import split_qualified_name
from allot.cel.source import (
    COMPREHENSION_MACROS,
    INDEXED_MAPS,
    Token,
    scanned_whole,
    string_literal_value,
    tokenize,
)
from allot.types import Obj

_WHOLE_MAP_WORDS = COMPREHENSION_MACROS | {"size"}
_MEMBER_ACCESS = (".", "[", ".?", "[?")


@dataclass
class Shapes:
    """One view per kind of device, and how many devices each stands for (by view id)."""

    views: list[DeviceView] = field(default_factory=list)
    weights: dict[int, int] = field(default_factory=dict)

    @property
    def devices(self) -> int:
        return sum(self.weights.values())


def read_names(expressions: Iterable[str]) -> frozenset[str] | None:
    """The names the expressions may read, or None when they read whole maps."""
    names: set[str] = set()
    for expression in expressions:
        tokens = tokenize(expression)
        if _reads_whole_maps(tokens) or not scanned_whole(expression, tokens):
            return None
        for token in tokens:
            if token.kind == "ident":
                names.add(token.text)
            elif token.kind == "string":
                names.add(string_literal_value(token.text))
    return frozenset(names)


def _reads_whole_maps(tokens: list[Token]) -> bool:
    texts = [t.text for t in tokens]
    if any(t in _WHOLE_MAP_WORDS or t == "{" for t in texts):
        return True
    for index, text in enumerate(texts):
        if text not in INDEXED_MAPS:
            continue
        after = _after_domain(texts, index + 1)
        if after is None:
            if not (index >= 3 and texts[index - 3] == "in"):  # 'domain' in device.attributes
                return True
        elif after >= len(texts) or texts[after] not in _MEMBER_ACCESS:
            return True
    return False


def _after_domain(texts: list[str], index: int) -> int | None:
    """The position after ``[domain]`` or ``.domain`` following a device map, else None."""
    if index < len(texts) and texts[index] in ("[", "[?") and index + 2 < len(texts):
        return index + 3 if texts[index + 2] == "]" else None
    if index < len(texts) and texts[index] in (".", ".?"):
        return index + 2
    return None


def group(slices: Iterable[Obj], names: frozenset[str] | None) -> Shapes:
    """The devices of wire ResourceSlices grouped by what ``names`` can read (``None``:
    every value)."""
    shapes = Shapes()
    by_key: dict[tuple[Any, ...], DeviceView] = {}
    split: dict[tuple[str, str], tuple[str, str]] = {}
    for item in slices:
        spec = item.get("spec") or {}
        driver = spec.get("driver") or ""
        for device in spec.get("devices") or []:
            key = (
                driver,
                bool(device.get("allowMultipleAllocations")),
                _projected(driver, device.get("attributes"), names, split, versions=True),
                _projected(driver, device.get("capacity"), names, split, versions=False),
            )
            view = by_key.get(key)
            if view is None:
                view = DeviceView(driver, resourceapi.Device.model_validate(device))
                by_key[key] = view
                shapes.views.append(view)
            shapes.weights[id(view)] = shapes.weights.get(id(view), 0) + 1
    return shapes


def _projected(
    driver: str,
    values: Obj | None,
    names: frozenset[str] | None,
    split: dict[tuple[str, str], tuple[str, str]],
    *,
    versions: bool,
) -> tuple[Any, ...]:
    """Each entry as (qualified name, its value) when ``names`` may read it, else (qualified
    name, the kind of its value). Published order is kept: a producer publishes its
    devices alike, and a finer key only makes more groups, never a wrong one."""
    found: list[Any] = []
    for qualified, value in (values or {}).items():
        parts = split.get((driver, qualified))
        if parts is None:
            parts = split[(driver, qualified)] = split_qualified_name(driver, qualified)
        if not isinstance(value, dict):
            found.append((qualified, repr(value)))
        elif names is None or parts[1] in names or (versions and "version" in value):
            found.append((qualified, _frozen(value)))
        else:
            found.append((qualified, tuple(value)))
    return tuple(found)


def _frozen(value: Obj) -> tuple[Any, ...]:
    """A typed value (``{"string": "x"}``) as a hashable tuple."""
    return tuple(
        (key, inner if isinstance(inner, str | int | bool | float) else repr(inner))
        for key, inner in value.items()
    )
