"""The object store: every cluster's objects in one SQLite database (WAL mode).

Design (documented in docs/architecture.md):

- One database file holds the host cluster and every virtual cluster; rows are keyed by
  (cluster, resource, namespace, name). Objects are stored as their wire JSON.
- One resourceVersion sequence is shared by all clusters: the ``events`` table's integer
  key. Every write appends an event in the same transaction, so an acknowledged write and
  its watch event are durable together (WAL, ``synchronous=NORMAL``: survives a crash of
  the process). The writes of one event-loop turn share one transaction, and nothing
  outside the process hears of a write before its commit (``allot.store.commits``).
- Each cluster's newest events are kept for watch resumption, within a count and a byte
  budget (``allot.store.history``); older resource versions of that cluster get 410
  Expired, as etcd compaction does.
- An in-memory copy of every object answers gets and lists without touching SQLite. It
  follows the file: when SQLite rolls a transaction back (a full disk), every write of it
  is taken back in memory too (``_take_back``), the in-process listeners hear of each as a
  write that restores the object, and the writers get ``DiskFull`` (``Unwritable``).
- Deletion honours finalizers (``deletionTimestamp`` first, removal when the last
  finalizer goes), garbage-collects dependents by ``ownerReferences`` with the request's
  propagation (Background, Foreground behind the ``foregroundDeletion`` finalizer, Orphan)
  and empties a deleted namespace, which stays ``Terminating`` (refusing new content, its
  conditions naming what remains) until the last object in it is removed.

Called by the API server (one store per data directory) and by tests.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from allot.api.costs import COSTS
from allot.api.documents import clone_document, encode_document
from allot.client.protocol import WatchEvent as WatchEvent
from allot.store import namespaces
from allot.store.commits import GroupCommit
from allot.store.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Expired,
    NamespaceTerminating,
    NotFound,
    TooLarge,
    Unwritable,
)
from allot.store.history import History, Snapshot
from allot.types import Clock, Obj, rfc3339, utc_now

MAX_OBJECT_BYTES = 3 * 1024 * 1024
"""The largest object stored (its JSON), as the API server's request limit: every write is
checked here, where its JSON is made anyway, rather than serialized once more to measure
it before admission (issue 15)."""
NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
ObjectKey = tuple[str, str, str, str]  # cluster, resource, namespace, name
FOREGROUND_FINALIZER = "foregroundDeletion"
DEFAULT_POD_GRACE_SECONDS = 30  # a pod's terminationGracePeriodSeconds when it sets none
PROPAGATIONS = ("Background", "Foreground", "Orphan")


@dataclass(frozen=True)
class Resource:
    """What the store needs to know about a resource type."""

    group: str
    plural: str
    kind: str
    namespaced: bool

    @cached_property
    def key(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


Listener = Callable[[WatchEvent], None]


class Undo(NamedTuple):
    """What takes one write of the open transaction back: the object and body its key
    held before (None: absent), and the write's version."""

    key: ObjectKey
    before: Obj | None
    body: str | None
    rv: int


class Begun(NamedTuple):
    """What a lost transaction restores beside its writes: the store's version and its
    history's accounting when the transaction began."""

    rv: int
    history: Snapshot


class Store:
    def __init__(
        self,
        path: Path,
        *,
        clock: Clock = utc_now,
        seed: int | None = None,
        durable: bool = True,
    ) -> None:
        """``durable=False`` skips syncing to disk: for scratch stores (``allot doctor``)."""
        self.path = path
        self.clock = clock
        self._random = random.Random(seed)
        self._lock = threading.RLock()
        try:
            self._db = _open_database(path, durable)
            self._history = History.load(self._db)
        except sqlite3.Error as err:  # a read-only or full disk: said in one line
            raise Unwritable(f"{path}: {err}") from None
        self._objects: dict[ObjectKey, Obj] = {}
        self._by_resource: dict[tuple[str, str], dict[ObjectKey, Obj]] = {}
        self._by_namespace: dict[tuple[str, str, str], dict[ObjectKey, Obj]] = {}
        # (cluster, owner uid) -> the keys of the objects that reference it, in write order
        self._by_owner: dict[tuple[str, str], dict[ObjectKey, None]] = {}
        # (cluster, resource, namespace) -> the objects no controller reference names
        self._orphans: dict[tuple[str, str, str], dict[ObjectKey, None]] = {}
        self._bodies: dict[ObjectKey, str] = {}
        self._usage: dict[str, list[int]] = {}  # cluster -> [objects, bytes of their bodies]
        # (cluster, resource) -> how many writes have changed its objects since the store opened
        self._changes: dict[tuple[str, str], int] = {}
        for cluster, resource, namespace, name, body in self._db.execute(
            "SELECT cluster, resource, namespace, name, body FROM objects"
        ):
            self._index((cluster, resource, namespace, name), json.loads(body))
            self._set_body((cluster, resource, namespace, name), body)
        self._foreground: dict[str, ObjectKey] = {  # owners waiting for their dependents
            obj["metadata"]["uid"]: key
            for key, obj in self._objects.items()
            if FOREGROUND_FINALIZER in (obj["metadata"].get("finalizers") or [])
        }
        self._listeners: list[Listener] = []
        # committed listeners by the (cluster, resource) they follow (None: every one)
        self._committed_listeners: dict[tuple[str, str] | None, list[Listener]] = {}
        self._uncommitted: list[WatchEvent] = []  # for the committed listeners
        self._rv = self._stored_rv()
        self._commits = GroupCommit(
            self._db, self._lock, self._hand_over, self._state_at_begin, self._take_back
        )
        self._terminating: set[tuple[str, str]] = set()  # (cluster, namespace) being emptied
        self._emptying = False  # a namespace's content is being deleted: settle once after
        for (cluster, resource), objects in list(self._by_resource.items()):
            if resource != "namespaces":
                continue
            for key, namespace in list(objects.items()):
                if namespace["metadata"].get("deletionTimestamp"):
                    self._terminating.add((cluster, key[3]))
                    self._settle_namespace(cluster, key[3])  # emptied while it was down

    def _index(self, key: ObjectKey, obj: Obj) -> None:
        previous = self._objects.get(key)
        if previous is not None:
            self._unlink_owners(key, previous)
        self._objects[key] = obj
        self._changed(key)
        self._by_resource.setdefault((key[0], key[1]), {})[key] = obj
        self._by_namespace.setdefault(key[:3], {})[key] = obj
        for uid in _owner_uids(obj):
            self._by_owner.setdefault((key[0], uid), {})[key] = None
        if not _has_controller(obj):
            self._orphans.setdefault(key[:3], {})[key] = None

    def _unindex(self, key: ObjectKey) -> None:
        previous = self._objects.pop(key, None)
        if previous is not None:
            self._unlink_owners(key, previous)
            self._changed(key)
        self._by_resource.get((key[0], key[1]), {}).pop(key, None)
        in_namespace = self._by_namespace.get(key[:3])
        if in_namespace is not None:
            in_namespace.pop(key, None)
            if not in_namespace:
                del self._by_namespace[key[:3]]

    def _changed(self, key: ObjectKey) -> None:
        collection = (key[0], key[1])
        self._changes[collection] = self._changes.get(collection, 0) + 1

    def _unlink_owners(self, key: ObjectKey, obj: Obj) -> None:
        orphans = self._orphans.get(key[:3])
        if orphans is not None:
            orphans.pop(key, None)
        for uid in _owner_uids(obj):
            dependents = self._by_owner.get((key[0], uid))
            if dependents is not None:
                dependents.pop(key, None)
                if not dependents:
                    del self._by_owner[(key[0], uid)]

    def _referencing(self, cluster: str, uid: str | None) -> list[ObjectKey]:
        """The keys of the objects of ``cluster`` whose owner references name ``uid``."""
        return list(self._by_owner.get((cluster, uid), {})) if uid else []

    def _set_body(self, key: ObjectKey, body: str | None) -> None:
        """Keep a key's serialized body (None: removed) and its cluster's usage."""
        usage = self._usage.setdefault(key[0], [0, 0])
        old = self._bodies.pop(key, None)
        if old is not None:
            usage[0] -= 1
            usage[1] -= len(old)
        if body is not None:
            self._bodies[key] = body
            usage[0] += 1
            usage[1] += len(body)

    def stored_size(self, cluster: str, resource: Resource, namespace: str, name: str) -> int:
        """Bytes of an object's stored body (0 if absent), without serializing it again."""
        return len(self._bodies.get((cluster, resource.key, namespace, name), ""))

    def usage(self, cluster: str) -> tuple[int, int]:
        """How many objects a cluster holds and the bytes of their stored bodies."""
        objects, size = self._usage.get(cluster, (0, 0))
        return objects, size

    def retained_history(self, cluster: str) -> int:
        """Bytes of the events a cluster's history keeps for watches to resume from."""
        with self._lock:
            return self._history.retained_bytes(cluster)

    def bound_history(self, cluster: str, size: int | None) -> None:
        """The most bytes of events ``cluster`` keeps (None: the default), its history
        compacted at once if it holds more (``allot.store.history``)."""
        with self._lock:
            self._in_transaction(lambda: self._history.bound(cluster, size))

    def close(self) -> None:
        with self._lock:
            self._commits.commit_now()
            self._commits.closed = True
            self._db.close()

    async def committed(self) -> None:
        """Return once every write made so far is committed: what the API server awaits
        before it answers a request (``allot.store.commits``)."""
        await self._commits.committed()

    # ------------------------------------------------------------------ reading
    def current_rv(self) -> int:
        return self._rv

    def _stored_rv(self) -> int:
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name='events'").fetchone()
        return int(row[0]) if row else 0

    def changes(self, cluster: str, resource: Resource) -> int:
        """How many writes have changed the objects of ``resource`` in ``cluster`` since the
        store opened: equal counts mean an unchanged collection, so a reader can keep what it
        derived from it (the capacity snapshot behind ``/metrics``)."""
        with self._lock:
            return self._changes.get((cluster, resource.key), 0)

    def compacted_rv(self, cluster: str) -> int:
        """The cluster's compacted revision: watches from older versions get 410."""
        with self._lock:
            return self._history.floor(cluster)

    def new_uid(self) -> str:
        """A fresh uid from the store's seeded generator (for a create that needs the uid
        before the object is stored: a Job's generated selector)."""
        with self._lock:
            return str(uuid.UUID(int=self._random.getrandbits(128), version=4))

    def peek(self, cluster: str, resource: Resource, namespace: str, name: str) -> Obj | None:
        """The stored object itself, for read-only callers (no copy); None if absent."""
        self._commits.observe()
        return self._objects.get((cluster, resource.key, namespace, name))

    def get(self, cluster: str, resource: Resource, namespace: str, name: str) -> Obj:
        self._commits.observe()
        found = self._objects.get((cluster, resource.key, namespace, name))
        if found is None:
            raise _not_found(resource, name)
        return clone_document(found)

    def list_objects(
        self,
        cluster: str,
        resource: Resource,
        namespace: str | None = None,
        *,
        shared: bool = False,
    ) -> tuple[list[Obj], int]:
        """All objects of a resource (in a namespace, or all), sorted, and the list RV.

        ``shared=True`` returns the store's own dicts for read-only callers (list
        rendering), saving a deep copy of every object; they must not be modified.
        """
        with self._lock:
            self._commits.observe()
            found = (
                self._by_resource.get((cluster, resource.key), {})
                if namespace is None
                else self._by_namespace.get((cluster, resource.key, namespace), {})
            )
            items = [obj if shared else clone_document(obj) for obj in found.values()]
            rv = self.current_rv()
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return items, rv

    def scan(self, cluster: str, resource: Resource) -> list[Obj]:
        """Every object of a resource in no particular order, the store's own dicts (read
        them, never modify them): for controllers that look for a few among many."""
        with self._lock:
            self._commits.observe()
            return list(self._by_resource.get((cluster, resource.key), {}).values())

    def count(self, cluster: str, resource: Resource) -> int:
        """How many objects of a resource a cluster holds (no list is made)."""
        return len(self._by_resource.get((cluster, resource.key), ()))

    def scan_namespace(self, cluster: str, resource: Resource, namespace: str) -> list[Obj]:
        """:meth:`scan` of one namespace (from an index kept on every write)."""
        with self._lock:
            self._commits.observe()
            return list(self._by_namespace.get((cluster, resource.key, namespace), {}).values())

    def owned_by(self, cluster: str, resource: Resource, uid: str) -> list[Obj]:
        """The objects of a resource whose owner references name ``uid`` (from an index
        kept on every write), the store's own dicts: read them, never modify them."""
        with self._lock:
            self._commits.observe()
            return [
                self._objects[key]
                for key in self._referencing(cluster, uid)
                if key[1] == resource.key
            ]

    def orphans(self, cluster: str, resource: Resource, namespace: str) -> list[Obj]:
        """The objects of a namespace that no controller reference names (what a workload
        controller may adopt), the store's own dicts: read them, never modify them."""
        with self._lock:
            self._commits.observe()
            keys = self._orphans.get((cluster, resource.key, namespace), {})
            return [self._objects[key] for key in keys]

    def list_serialized(
        self, cluster: str, resource: Resource, namespace: str | None = None
    ) -> tuple[list[str], int]:
        """Like ``list_objects`` but the stored JSON texts, for fast unfiltered lists."""
        with self._lock:
            self._commits.observe()
            keyed = sorted(
                (k[2], k[3], body)
                for k, body in self._bodies.items()
                if k[0] == cluster
                and k[1] == resource.key
                and (namespace is None or k[2] == namespace)
            )
            rv = self.current_rv()
        return [body for _, _, body in keyed], rv

    def iter_cluster(self, cluster: str) -> Iterator[tuple[str, Obj]]:
        self._commits.observe()
        for (c, resource, _, _), obj in list(self._objects.items()):
            if c == cluster:
                yield resource, obj

    def events_since(self, cluster: str, resource: Resource, rv: int) -> list[WatchEvent]:
        """Events after ``rv`` for a resource; Expired when ``rv`` was compacted away.
        Each carries its ``previous`` object while the event that wrote it is retained
        (its row names it: ``prev_rv``), as a live event does."""
        with self._lock:
            self._commits.observe()
            compacted = self._history.floor(cluster)
            if rv < compacted and rv < self.current_rv():
                raise Expired(f"too old resource version: {rv} ({compacted})")
            rows = self._db.execute(
                "SELECT rv, type, body, prev_rv FROM events "
                "WHERE cluster=? AND resource=? AND rv>? ORDER BY rv",
                (cluster, resource.key, rv),
            ).fetchall()
            objects: dict[int, Obj] = {number: json.loads(body) for number, _, body, _ in rows}
            earlier = [p for *_, p in rows if p is not None and p not in objects]
            objects.update(self._event_objects(earlier))
        return [
            WatchEvent(
                kind,
                number,
                cluster,
                resource.key,
                objects[number],
                objects.get(previous) if previous is not None else None,
            )
            for number, kind, _, previous in rows
        ]

    def _event_objects(self, versions: list[int]) -> dict[int, Obj]:
        """The objects the retained events of ``versions`` wrote (compacted ones are absent)."""
        found: dict[int, Obj] = {}
        for start in range(0, len(versions), 500):
            chunk = versions[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for number, body in self._db.execute(
                f"SELECT rv, body FROM events WHERE rv IN ({marks})",
                chunk,
            ):
                found[number] = json.loads(body)
        return found

    def add_listener(
        self,
        listener: Listener,
        *,
        committed: bool = False,
        only: tuple[str, str] | None = None,
    ) -> None:
        """Call ``listener`` after each write: at once (in-process caches, controllers), or
        with ``committed`` only once the write is committed (what leaves the process:
        watch streams), then for the writes of ``only`` = (cluster, resource key) alone if
        given (a watch: a write is handed to its own resource's watches, not offered to
        every watch of every cluster)."""
        if committed:
            self._committed_listeners.setdefault(only, []).append(listener)
        else:
            self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)
        for scope, listeners in list(self._committed_listeners.items()):
            if listener in listeners:
                listeners.remove(listener)
                if not listeners:
                    del self._committed_listeners[scope]

    def _state_at_begin(self) -> Begun:
        return Begun(self._rv, self._history.snapshot())

    def _take_back(self, undo: list[object]) -> None:
        """The transaction was rolled back: its writes are taken back in memory, newest
        first, and its events never handed over; the in-process listeners hear of each
        taken-back write as a write that puts the object back as it was."""
        begun, writes = undo[0], [entry for entry in undo if isinstance(entry, Undo)]
        assert isinstance(begun, Begun)
        with self._lock:
            self._uncommitted = []
            self._rv = begun.rv
            self._history.restore(begun.history)
            restoring = [self._restore(entry) for entry in reversed(writes)]
        for event in restoring:
            for listener in list(self._listeners):
                listener(event)

    def _restore(self, undo: Undo) -> WatchEvent:
        """Put one key back as it was before a lost write; the event that tells of it."""
        key, before, body = undo.key, undo.before, undo.body
        lost = self._objects.get(key)
        if before is None:
            self._unindex(key)
        else:
            self._index(key, before)
        self._set_body(key, body)
        for obj in (lost, before):
            uid = obj["metadata"].get("uid", "") if obj is not None else ""
            self._foreground.pop(uid, None)
        if before is not None and FOREGROUND_FINALIZER in (
            before["metadata"].get("finalizers") or []
        ):
            self._foreground[before["metadata"]["uid"]] = key
        if key[1] == "namespaces":
            marked = before is not None and before["metadata"].get("deletionTimestamp")
            (self._terminating.add if marked else self._terminating.discard)((key[0], key[3]))
        cluster, resource = key[0], key[1]
        if before is None:
            assert lost is not None
            return WatchEvent("DELETED", undo.rv, cluster, resource, lost, lost)
        kind = "ADDED" if lost is None else "MODIFIED"
        return WatchEvent(kind, undo.rv, cluster, resource, before, lost)

    def _hand_over(self) -> None:
        """After a commit: the committed listeners get the events of what it held."""
        with self._lock:
            events, self._uncommitted = self._uncommitted, []
        scoped = self._committed_listeners
        for event in events:
            for listener in (
                *scoped.get((event.cluster, event.resource), ()),
                *scoped.get(None, ()),
            ):
                listener(event)

    # ------------------------------------------------------------------ writing
    def create(
        self,
        cluster: str,
        resource: Resource,
        obj: Obj,
        *,
        dry_run: bool = False,
        owned: bool = False,
        copy_result: bool = True,
        keep_identity: bool = False,
    ) -> Obj:
        """Store a new object. ``owned``: the caller hands ``obj`` over (no defensive copy);
        ``copy_result=False`` returns the stored object itself, which must not be modified;
        ``keep_identity`` keeps a given uid and creationTimestamp (a mirror of a cluster)."""
        obj = obj if owned else clone_document(obj)
        metadata = obj.setdefault("metadata", {})
        namespace = metadata.get("namespace", "") if resource.namespaced else ""
        if resource.namespaced:
            self._require_namespace(cluster, namespace, resource, metadata)
        with self._lock:
            if not metadata.get("name") and metadata.get("generateName"):
                metadata["name"] = self._generate_name(
                    cluster, resource, namespace, metadata["generateName"]
                )
            name = metadata["name"]
            key = (cluster, resource.key, namespace, name)
            if key in self._objects:
                raise AlreadyExists(
                    f'{resource.key} "{name}" already exists',
                    **_about(resource, name),
                )
            if not (keep_identity and metadata.get("uid")):
                metadata["uid"] = str(uuid.UUID(int=self._random.getrandbits(128), version=4))
            if not (keep_identity and metadata.get("creationTimestamp")):
                metadata["creationTimestamp"] = rfc3339(self.clock())
            for transient in ("resourceVersion", "deletionTimestamp", "selfLink"):
                metadata.pop(transient, None)
            if dry_run:
                return obj
            self._write(key, obj, "ADDED")
        return clone_document(obj) if copy_result else obj

    def update(
        self,
        cluster: str,
        resource: Resource,
        obj: Obj,
        *,
        dry_run: bool = False,
        owned: bool = False,
        copy_result: bool = True,
    ) -> Obj:
        """Replace an object; a ``metadata.resourceVersion`` in ``obj`` is a precondition.
        ``owned`` and ``copy_result`` as for :meth:`create`."""
        obj = obj if owned else clone_document(obj)
        metadata = obj["metadata"]
        namespace = metadata.get("namespace", "") if resource.namespaced else ""
        key = (cluster, resource.key, namespace, metadata.get("name", ""))
        with self._lock:
            current = self._objects.get(key)
            if current is None:
                raise _not_found(resource, key[3])
            expected = metadata.get("resourceVersion")
            if expected and expected != current["metadata"]["resourceVersion"]:
                raise Conflict(
                    f'Operation cannot be fulfilled on {resource.key} "{key[3]}": the object '
                    "has been modified; please apply your changes to the latest version and "
                    "try again",
                    **_about(resource, key[3]),
                )
            for immutable in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ):
                if immutable in current["metadata"]:
                    metadata[immutable] = current["metadata"][immutable]
                else:
                    metadata.pop(immutable, None)
            if dry_run:
                return obj
            if _removable(metadata) and not self._holds_content(key):
                self._remove(key, obj)
                return clone_document(obj) if copy_result else obj
            self._write(key, obj, "MODIFIED")
            if self._foreground and current["metadata"].get("ownerReferences"):
                self._release_owners(current)
        return clone_document(obj) if copy_result else obj

    def delete(
        self,
        cluster: str,
        resource: Resource,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        dry_run: bool = False,
        grace_seconds: int = 0,
        propagation: str = "Background",
    ) -> tuple[Obj, bool]:
        """Delete (or mark for deletion); returns (object, removed now). With
        ``grace_seconds`` the object is only marked (``deletionTimestamp`` that far ahead,
        ``deletionGracePeriodSeconds``), as the API server does for a running pod: whoever
        ends it deletes it again with no grace period. ``propagation`` is what happens to
        the dependents (``ownerReferences``): ``Background`` deletes them once the object
        is gone, ``Foreground`` deletes them first while the object waits behind the
        ``foregroundDeletion`` finalizer for those with ``blockOwnerDeletion``, ``Orphan``
        removes their references to it (a pod is never held in the foreground)."""
        key = (cluster, resource.key, namespace if resource.namespaced else "", name)
        with self._lock:
            current = self._objects.get(key)
            if current is None:
                raise _not_found(resource, name)
            self._check_preconditions(resource, name, current, uid, resource_version)
            obj = clone_document(current)
            if dry_run:
                return obj, False
            if propagation == "Orphan":
                self._orphan_dependents(cluster, obj["metadata"].get("uid"))
            if resource.key == "namespaces":
                return self._terminate_namespace(key, obj)
            if propagation == "Foreground" and _holds_for_dependents(key) and self._dependents(key):
                return self._delete_foreground(key, obj), False
            if grace_seconds > 0 or obj["metadata"].get("deletionGracePeriodSeconds"):
                return self._mark_graceful(key, obj, grace_seconds), False
            if obj["metadata"].get("finalizers"):
                if not obj["metadata"].get("deletionTimestamp"):
                    obj["metadata"]["deletionTimestamp"] = rfc3339(self.clock())
                    obj["metadata"]["deletionGracePeriodSeconds"] = 0
                    self._write(key, obj, "MODIFIED")
                return clone_document(obj), False
            self._remove(key, obj)
        return obj, True

    # ------------------------------------------------------ garbage collection
    def _dependents(self, owner: ObjectKey) -> list[ObjectKey]:
        """The keys of the objects in the owner's cluster that reference it by uid."""
        current = self._objects.get(owner)
        return self._referencing(owner[0], current["metadata"].get("uid") if current else None)

    def _orphan_dependents(self, cluster: str, uid: str | None) -> None:
        """Remove every reference to ``uid`` from its dependents (``propagationPolicy:
        Orphan``), as the garbage collector's orphan finalizer does."""
        for key in self._referencing(cluster, uid):
            current = self._objects[key]
            refs = current["metadata"].get("ownerReferences") or []
            obj = clone_document(current)
            kept = [ref for ref in refs if ref.get("uid") != uid]
            if kept:
                obj["metadata"]["ownerReferences"] = kept
            else:
                del obj["metadata"]["ownerReferences"]
            self._write(key, obj, "MODIFIED")

    def _delete_foreground(self, key: ObjectKey, obj: Obj) -> Obj:
        """Mark the owner (``deletionTimestamp``, ``foregroundDeletion``), delete its
        dependents in the foreground too, and let it go once no blocking dependent is left."""
        metadata = obj["metadata"]
        finalizers = list(metadata.get("finalizers") or [])
        if FOREGROUND_FINALIZER not in finalizers:
            metadata["finalizers"] = [*finalizers, FOREGROUND_FINALIZER]
        if not metadata.get("deletionTimestamp"):
            metadata["deletionTimestamp"] = rfc3339(self.clock())
            metadata["deletionGracePeriodSeconds"] = 0
        self._write(key, obj, "MODIFIED")
        self._foreground[metadata["uid"]] = key
        for dependent in self._dependents(key):
            self._delete_key(dependent, foreground=True)
        self._release_foreground(key)
        return clone_document(self._objects.get(key) or obj)

    def _release_foreground(self, key: ObjectKey) -> None:
        """Remove the ``foregroundDeletion`` finalizer once no dependent that blocks the
        owner's deletion is left; the owner goes with its last finalizer."""
        current = self._objects.get(key)
        if current is None:
            return
        metadata = current["metadata"]
        if FOREGROUND_FINALIZER not in (metadata.get("finalizers") or []):
            self._foreground.pop(metadata.get("uid", ""), None)
            return
        uid = metadata.get("uid")
        for dependent in self._dependents(key):
            refs = self._objects[dependent]["metadata"].get("ownerReferences") or []
            if any(ref.get("uid") == uid and ref.get("blockOwnerDeletion") for ref in refs):
                return
        self._foreground.pop(uid, None)
        obj = clone_document(current)
        kept = [f for f in metadata["finalizers"] if f != FOREGROUND_FINALIZER]
        if kept:
            obj["metadata"]["finalizers"] = kept
            self._write(key, obj, "MODIFIED")
            return
        del obj["metadata"]["finalizers"]
        self._remove(key, obj)

    def _release_owners(self, obj: Obj) -> None:
        """A dependent went (or dropped its references): owners waiting in the foreground
        for it may go now."""
        if not self._foreground:
            return
        for ref in obj["metadata"].get("ownerReferences") or []:
            owner = self._foreground.get(ref.get("uid", ""))
            if owner is not None:
                self._release_foreground(owner)

    # ----------------------------------------------------------------- internals
    def _mark_graceful(self, key: ObjectKey, obj: Obj, grace_seconds: int) -> Obj:
        """Mark (or shorten the grace of) a graceful deletion; grace 0 on an object
        already marked removes it unless finalizers hold it."""
        metadata = obj["metadata"]
        if grace_seconds == 0:
            metadata["deletionGracePeriodSeconds"] = 0
            if not metadata.get("finalizers"):
                self._remove(key, obj)
                return clone_document(obj)
        elif metadata.get("deletionGracePeriodSeconds", grace_seconds + 1) > grace_seconds:
            now = self.clock()
            metadata["deletionTimestamp"] = rfc3339(now + dt.timedelta(seconds=grace_seconds))
            metadata["deletionGracePeriodSeconds"] = grace_seconds
        else:
            return obj
        self._write(key, obj, "MODIFIED")
        return clone_document(obj)

    def _check_preconditions(
        self,
        resource: Resource,
        name: str,
        current: Obj,
        uid: str | None,
        resource_version: str | None,
    ) -> None:
        metadata = current["metadata"]
        if uid and uid != metadata.get("uid"):
            raise Conflict(
                f'Operation cannot be fulfilled on {resource.key} "{name}": '
                f"Precondition failed: UID in precondition: {uid}, UID in object "
                f"meta: {metadata.get('uid')}",
                **_about(resource, name),
            )
        if resource_version and resource_version != metadata.get("resourceVersion"):
            raise Conflict(
                f'Operation cannot be fulfilled on {resource.key} "{name}": '
                "Precondition failed: ResourceVersion in precondition: "
                f"{resource_version}, ResourceVersion in object meta: "
                f"{metadata.get('resourceVersion')}",
                **_about(resource, name),
            )

    def _require_namespace(
        self, cluster: str, namespace: str, resource: Resource, metadata: Obj
    ) -> None:
        if not namespace:
            raise BadRequest("the namespace of the object is required")
        if (cluster, "namespaces", "", namespace) not in self._objects:
            raise NotFound(
                f'namespaces "{namespace}" not found',
                resource="namespaces",
                name=namespace,
                plural="namespaces",
            )
        phase = self._objects[(cluster, "namespaces", "", namespace)].get("status", {})
        if phase.get("phase") == "Terminating":
            name = str(metadata.get("name") or metadata.get("generateName") or "")
            raise NamespaceTerminating(namespace, **_about(resource, name))

    def _generate_name(self, cluster: str, resource: Resource, namespace: str, prefix: str) -> str:
        base = prefix[:58]
        for _ in range(16):
            suffix = "".join(self._random.choice(NAME_SUFFIX_ALPHABET) for _ in range(5))
            if (cluster, resource.key, namespace, base + suffix) not in self._objects:
                return base + suffix
        raise AlreadyExists(
            f'{resource.key} "{base}" already exists: could not generate a unique name',
            resource=resource.key,
            name=base,
        )

    def _write(self, key: ObjectKey, obj: Obj, event_type: str) -> None:
        cluster, resource, namespace, name = key
        rv = self._rv + 1
        obj["metadata"]["resourceVersion"] = str(rv)
        encoded = encode_document(obj)
        if len(encoded) > MAX_OBJECT_BYTES:
            raise TooLarge(f"Request entity too large: limit is {MAX_OBJECT_BYTES}")
        body = encoded.decode()
        previous = self._objects.get(key)
        commit_now = self._persist(
            rv,
            (cluster, resource, event_type, body, _version(previous)),
            "INSERT OR REPLACE INTO objects (cluster, resource, namespace, name, body) "
            "VALUES (?, ?, ?, ?, ?)",
            (cluster, resource, namespace, name, body),
        )
        self._commits.remember(Undo(key, previous, self._bodies.get(key), rv))
        # ``obj`` is the store's private copy from here on; listeners must not modify it.
        self._index(key, obj)
        self._set_body(key, body)
        try:
            self._after_write(WatchEvent(event_type, rv, cluster, resource, obj, previous))
        finally:
            if commit_now:
                self._commits.commit_now()

    def _remove(self, key: ObjectKey, obj: Obj) -> None:
        cluster, resource, _, name = key
        rv = self._rv + 1
        obj["metadata"]["resourceVersion"] = str(rv)
        previous = self._objects.get(key)
        commit_now = self._persist(
            rv,
            (
                cluster,
                resource,
                "DELETED",
                encode_document(obj).decode(),
                _version(previous),
            ),
            "DELETE FROM objects WHERE cluster=? AND resource=? AND namespace=? AND name=?",
            key,
        )
        self._commits.remember(Undo(key, previous, self._bodies.get(key), rv))
        self._unindex(key)
        self._set_body(key, None)
        try:
            self._after_write(WatchEvent("DELETED", rv, cluster, resource, obj, previous))
        finally:
            if commit_now:
                self._commits.commit_now()
        self._foreground.pop(obj["metadata"].get("uid", ""), None)
        self._collect_garbage(cluster, obj)
        self._release_owners(obj)
        if resource == "namespaces":
            self._terminating.discard((cluster, name))
            self._empty_namespace(cluster, name)
        elif (cluster, key[2]) in self._terminating and not self._emptying:
            self._settle_namespace(cluster, key[2])

    def _persist(
        self,
        rv: int,
        event: tuple[str, str, str, str, int | None],
        statement: str,
        values: tuple[str, ...],
    ) -> bool:
        """Append event ``rv`` and change the object's row in the loop turn's transaction,
        compacting the cluster's history if it grew past its bounds; True when the caller
        commits once it has told the listeners (no loop runs here). A failed write leaves
        neither row; ``Unwritable`` (``DiskFull``) when SQLite refused it."""
        COSTS.wrote(event[0], event[1])
        commit_now = self._commits.begin()
        try:
            self._db.execute(
                "INSERT INTO events (rv, cluster, resource, type, body, prev_rv, size) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (rv, *event, len(event[3])),
            )
            try:
                self._db.execute(statement, values)
                self._history.appended(event[0], len(event[3]))
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("DELETE FROM events WHERE rv=?", (rv,))
                raise
        except sqlite3.Error as err:
            failure = self._commits.abandon(err)
            if commit_now:
                self._commits.commit_now()
            raise failure from None
        self._rv = rv
        return commit_now

    def _after_write(self, event: WatchEvent) -> None:
        if self._committed_listeners:
            self._uncommitted.append(event)
        for listener in list(self._listeners):
            listener(event)

    def _collect_garbage(self, cluster: str, owner: Obj) -> None:
        """Delete objects whose owner references point at the removed object (background)."""
        for key in self._referencing(cluster, owner["metadata"].get("uid")):
            self._delete_key(key)

    def _empty_namespace(self, cluster: str, namespace: str) -> None:
        for key in [k for k in self._objects if k[0] == cluster and k[2] == namespace]:
            self._delete_key(key)

    # ------------------------------------------------------ namespace deletion
    def _terminate_namespace(self, key: ObjectKey, obj: Obj) -> tuple[Obj, bool]:
        """Delete a namespace as upstream's namespace controller does: mark it
        ``Terminating``, delete everything in it, and remove it once nothing is left (objects
        with finalizers stay until theirs go; its own ``metadata.finalizers`` too)."""
        cluster, _, _, name = key
        metadata = obj["metadata"]
        if not metadata.get("deletionTimestamp"):
            metadata["deletionTimestamp"] = rfc3339(self.clock())
            metadata["deletionGracePeriodSeconds"] = 0
            obj["status"] = {**(obj.get("status") or {}), "phase": "Terminating"}
            self._write(key, obj, "MODIFIED")
        self._terminating.add((cluster, name))
        self._emptying = True
        try:
            for content in self._content_keys(cluster, name):
                if content[1] == "pods":
                    self._end_pod(content)
                else:
                    self._delete_key(content)
        finally:
            self._emptying = False
        self._settle_namespace(cluster, name)
        current = self._objects.get(key)
        return (clone_document(current), False) if current is not None else (obj, True)

    def _end_pod(self, key: ObjectKey) -> None:
        """A pod of a terminating namespace, deleted as the namespace controller deletes it:
        a running pod on an existing node gets its grace period (its
        ``terminationGracePeriodSeconds``, default 30) for its node agent to end it, as the
        kubelet does; any other pod goes at once."""
        current = self._objects.get(key)
        if current is None:
            return
        spec, status = current.get("spec") or {}, current.get("status") or {}
        node = spec.get("nodeName")
        grace = spec.get("terminationGracePeriodSeconds", DEFAULT_POD_GRACE_SECONDS)
        running = bool(node) and status.get("phase") not in ("Succeeded", "Failed")
        if running and (key[0], "nodes", "", node) in self._objects and grace:
            if not current["metadata"].get("deletionTimestamp"):
                self._mark_graceful(key, clone_document(current), int(grace))
            return
        self._delete_key(key)

    def _content(self, cluster: str, namespace: str) -> dict[str, list[Obj]]:
        """What is left in a namespace, by resource (from the per-namespace index)."""
        return {
            triple[1]: list(objects.values())
            for triple, objects in list(self._by_namespace.items())
            if triple[0] == cluster and triple[2] == namespace and objects
        }

    def _content_keys(self, cluster: str, namespace: str) -> list[ObjectKey]:
        return [
            (cluster, resource, namespace, obj["metadata"]["name"])
            for resource, objects in self._content(cluster, namespace).items()
            for obj in objects
        ]

    def _holds_content(self, key: ObjectKey) -> bool:
        """Whether ``key`` is a namespace that still has objects in it."""
        return key[1] == "namespaces" and bool(self._content(key[0], key[3]))

    def _settle_namespace(self, cluster: str, name: str) -> None:
        """Remove a terminating namespace whose content is gone, or write what remains in
        its conditions (only when that changed)."""
        key = (cluster, "namespaces", "", name)
        current = self._objects.get(key)
        if current is None:
            self._terminating.discard((cluster, name))
            return
        left = self._content(cluster, name)
        obj = clone_document(current)
        if not left and not obj["metadata"].get("finalizers"):
            self._remove(key, obj)
            return
        status = obj.setdefault("status", {})
        previous = status.get("conditions") or []
        resources, finalizers = namespaces.remaining_content(left)
        wanted = namespaces.conditions(resources, finalizers, rfc3339(self.clock()), previous)
        if wanted != previous:
            status["conditions"] = wanted
            self._write(key, obj, "MODIFIED")

    def _delete_key(self, key: ObjectKey, foreground: bool = False) -> None:
        current = self._objects.get(key)
        if current is None:
            return
        obj = clone_document(current)
        if foreground and _holds_for_dependents(key) and self._dependents(key):
            self._delete_foreground(key, obj)
            return
        if obj["metadata"].get("finalizers"):
            if not obj["metadata"].get("deletionTimestamp"):
                obj["metadata"]["deletionTimestamp"] = rfc3339(self.clock())
                self._write(key, obj, "MODIFIED")
            return
        self._remove(key, obj)

    def clusters(self) -> list[str]:
        """Every cluster that holds at least one object."""
        return sorted({key[0] for key in self._objects})

    def purge(self, cluster: str, resource: Resource, namespace: str, name: str) -> None:
        """Remove an object at once, finalizers and grace periods notwithstanding: for a
        mirror following a cluster where it is already gone (``allot controller``)."""
        key = (cluster, resource.key, namespace if resource.namespaced else "", name)
        with self._lock:
            current = self._objects.get(key)
            if current is not None:
                self._remove(key, clone_document(current))

    def drop_cluster(self, cluster: str) -> int:
        """Remove every object of ``cluster`` at once, finalizers notwithstanding (a deleted
        virtual cluster); watchers see each DELETED event. Returns how many were removed."""
        with self._lock:
            keys = [k for k in self._objects if k[0] == cluster]
            for key in keys:
                current = self._objects.get(key)
                if current is not None:
                    self._remove(key, clone_document(current))
            # its events go too (the watches heard of the deletes already)
            self._in_transaction(lambda: self._history.forget(cluster))
            return len(keys)

    def _in_transaction(self, change: Callable[[], None]) -> None:
        """Run ``change`` (statements that write no object) in the turn's transaction."""
        commit_now = self._commits.begin()
        try:
            change()
        except sqlite3.Error as err:
            raise self._commits.abandon(err) from None
        finally:
            if commit_now:
                self._commits.commit_now()

    def namespace_exists(self, cluster: str, namespace: str) -> bool:
        return (cluster, "namespaces", "", namespace) in self._objects


def _open_database(path: Path, durable: bool) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL" if durable else "PRAGMA journal_mode=MEMORY")
    db.execute("PRAGMA synchronous=NORMAL" if durable else "PRAGMA synchronous=OFF")
    db.executescript("""
        CREATE TABLE IF NOT EXISTS objects (
            cluster TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL,
            name TEXT NOT NULL, body TEXT NOT NULL,
            PRIMARY KEY (cluster, resource, namespace, name));
        CREATE TABLE IF NOT EXISTS events (
            rv INTEGER PRIMARY KEY AUTOINCREMENT, cluster TEXT NOT NULL,
            resource TEXT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL,
            prev_rv INTEGER, size INTEGER);
        CREATE INDEX IF NOT EXISTS events_by_resource ON events (cluster, resource, rv);
    """)
    _add_previous_versions(db)
    return db


def _add_previous_versions(db: sqlite3.Connection) -> None:
    """Give a database from before ``events.prev_rv`` the column (its old events keep
    NULL: their previous object is unknown)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(events)")}
    if "prev_rv" not in columns:
        db.execute("ALTER TABLE events ADD COLUMN prev_rv INTEGER")


def _version(obj: Obj | None) -> int | None:
    """The resourceVersion of a stored object: the number of the event that wrote it."""
    return None if obj is None else int(obj["metadata"]["resourceVersion"])


def _owner_uids(obj: Obj) -> list[str]:
    refs = obj["metadata"].get("ownerReferences") or []
    return [ref["uid"] for ref in refs if isinstance(ref, dict) and isinstance(ref.get("uid"), str)]


def _has_controller(obj: Obj) -> bool:
    refs = obj["metadata"].get("ownerReferences") or []
    return any(isinstance(ref, dict) and ref.get("controller") for ref in refs)


def _holds_for_dependents(key: ObjectKey) -> bool:
    """Whether a foreground deletion keeps the object until its dependents are gone: every
    kind but pods, whose end the node agent and the claim controller already order (a pod
    held for its generated claims would hold them allocated in turn)."""
    return key[1] != "pods"


def _removable(metadata: Obj) -> bool:
    """Deleted, no grace period left and no finalizer holding it: upstream's rule for
    removing an object on update."""
    return (
        bool(metadata.get("deletionTimestamp"))
        and not metadata.get("deletionGracePeriodSeconds")
        and not metadata.get("finalizers")
    )


def _about(resource: Resource, name: str) -> dict[str, str]:
    """The object an error is about, for the Status details."""
    return {
        "resource": resource.key,
        "name": name,
        "group": resource.group,
        "plural": resource.plural,
    }


def _not_found(resource: Resource, name: str) -> NotFound:
    return NotFound(f'{resource.key} "{name}" not found', **_about(resource, name))
