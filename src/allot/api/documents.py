"""Copying decoded JSON documents (dicts, lists and scalars) fast.

The store hands each caller its own copy of an object so that nobody can change what is
stored by accident, and controllers copy what they read before they edit it. Those copies
sit on every request's path; ``copy.deepcopy`` spends most of its time on memo
bookkeeping that JSON trees never need (they have no cycles or shared nodes to preserve),
so this walk is about three times faster. Used by ``allot.store`` and
``allot.controllers``.
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
