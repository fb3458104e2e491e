"""Copying decoded JSON documents (dicts, lists and scalars) fast, and comparing them as
``equality.Semantic`` does.

The store hands each caller its own copy of an object so that nobody can change what is
stored by accident, and controllers copy what they read before they edit it. Those copies
sit on every request's path; ``copy.deepcopy`` spends most of its time on memo
bookkeeping that JSON trees never need (they have no cycles or shared nodes to preserve),
so this walk is about three times faster. Used by ``allot.store`` and
``allot.controllers``. :func:`semantic` drops empty maps and lists, which upstream's
semantic equality treats as unset (the workload controllers' template comparisons, pod
updates, a DaemonSet's template generation).
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

T = TypeVar("T")


def clone_document(value: T) -> T:
    """A deep copy of a JSON document; values other than dicts and lists are shared,
    which is safe because JSON scalars are immutable."""
    return cast(T, _clone(value))


def _clone(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _clone(item) for key, item in value.items()}
    if kind is list:
        return [_clone(item) for item in value]
    return value


def semantic(value: Any) -> Any:
    """``value`` without empty maps and lists (``equality.Semantic`` treats them as unset)."""
    if isinstance(value, dict):
        kept = {k: semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in ({}, [], None)}
    if isinstance(value, list):
        return [semantic(item) for item in value]
    return value
