"""The versioned object store: SQLite-backed objects of every cluster, with watch events.

Public surface: :class:`Store`, :class:`Resource`, :class:`WatchEvent` and the errors in
:mod:`allot.store.errors`.
"""

from allot.store.objects import Resource, Store, WatchEvent

__all__ = ["Resource", "Store", "WatchEvent"]
