"""The versioned object store: SQLite-backed objects of every cluster, with watch events.

Public surface: :class:`Store`, :class:`Resource`, :class:`WatchEvent` and the errors in
:mod:`allot.store.errors`. The three classes are loaded on first use (PEP 562), so a
command that only maps store errors to a ``Status`` (``allot validate``) does not import
SQLite, asyncio and the group committer (start-up, issue 15).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from allot.store.objects import Resource, Store, WatchEvent

__all__ = ["Resource", "Store", "WatchEvent"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from allot.store import objects

        return getattr(objects, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
