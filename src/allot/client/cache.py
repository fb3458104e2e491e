"""An informer's cache of one kind: the objects by namespace and name, with indexes.

The indexes are client-go's usual ones: by namespace, by owner uid (every ownerReference)
and by label (key and value), kept on every change so a controller's reads of "the pods of
this namespace", "what this object owns" and "what carries this label" cost a lookup.
:meth:`ObjectCache.replace` is a relist: it makes the cache equal a fresh listing and
returns the differences as changes (added, modified by resourceVersion, deleted with the
last object known), which the informer hands on so a gap loses no work. Pure; used by
:mod:`allot.client.informers`.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import TypeVar

from allot.types import Obj

Key = tuple[str, str]  # namespace ("" for a cluster-scoped kind), name
Entry = TypeVar("Entry")


def key_of(obj: Obj) -> Key:
    metadata = obj["metadata"]
    return str(metadata.get("namespace") or ""), str(metadata["name"])


class ObjectCache:
    def __init__(self) -> None:
        self._objects: dict[Key, Obj] = {}
        self._by_namespace: dict[str, dict[Key, Obj]] = {}
        self._by_owner: dict[str, dict[Key, None]] = {}
        self._by_label: dict[tuple[str, str], dict[Key, None]] = {}

    def __len__(self) -> int:
        return len(self._objects)

    def get(self, namespace: str, name: str) -> Obj | None:
        return self._objects.get((namespace, name))

    def list(self, namespace: str | None = None) -> builtins.list[Obj]:
        if namespace is None:
            return list(self._objects.values())
        return list(self._by_namespace.get(namespace, {}).values())

    def owned_by(self, uid: str) -> builtins.list[Obj]:
        return [self._objects[key] for key in self._by_owner.get(uid, {})]

    def labelled(self, key: str, value: str) -> builtins.list[Obj]:
        return [self._objects[k] for k in self._by_label.get((key, value), {})]

    def put(self, obj: Obj) -> Obj | None:
        """Store ``obj``; the object it replaces, if any."""
        key = key_of(obj)
        previous = self._objects.get(key)
        if previous is not None:
            self._unlink(key, previous)
        self._objects[key] = obj
        self._by_namespace.setdefault(key[0], {})[key] = obj
        for uid in _owner_uids(obj):
            self._by_owner.setdefault(uid, {})[key] = None
        for label in (obj["metadata"].get("labels") or {}).items():
            self._by_label.setdefault(label, {})[key] = None
        return previous

    def remove(self, namespace: str, name: str) -> Obj | None:
        key = (namespace, name)
        previous = self._objects.pop(key, None)
        if previous is not None:
            self._unlink(key, previous)
        return previous

    def _unlink(self, key: Key, obj: Obj) -> None:
        in_namespace = self._by_namespace.get(key[0])
        if in_namespace is not None:
            in_namespace.pop(key, None)
            if not in_namespace:
                del self._by_namespace[key[0]]
        for uid in _owner_uids(obj):
            _drop(self._by_owner, uid, key)
        for label in (obj["metadata"].get("labels") or {}).items():
            _drop(self._by_label, label, key)

    def replace(self, items: Iterable[Obj]) -> builtins.list[tuple[str, Obj, Obj | None]]:
        """Make the cache hold exactly ``items``; the differences, in order, as
        (type, object, previous): ADDED, MODIFIED (another resourceVersion), DELETED."""
        changes: builtins.list[tuple[str, Obj, Obj | None]] = []
        seen: set[Key] = set()
        for item in items:
            key = key_of(item)
            seen.add(key)
            known = self._objects.get(key)
            if known is None:
                self.put(item)
                changes.append(("ADDED", item, None))
            elif _version(known) != _version(item):
                self.put(item)
                changes.append(("MODIFIED", item, known))
        for key in [k for k in self._objects if k not in seen]:
            gone = self.remove(*key)
            assert gone is not None
            changes.append(("DELETED", gone, gone))
        return changes


def _version(obj: Obj) -> str:
    return str(obj["metadata"].get("resourceVersion") or "")


def _owner_uids(obj: Obj) -> list[str]:
    refs = obj["metadata"].get("ownerReferences") or []
    return [str(r["uid"]) for r in refs if isinstance(r, dict) and r.get("uid")]


def _drop(index: dict[Entry, dict[Key, None]], entry: Entry, key: Key) -> None:
    keys = index.get(entry)
    if keys is not None:
        keys.pop(key, None)
        if not keys:
            del index[entry]
