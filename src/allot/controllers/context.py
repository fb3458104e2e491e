"""What controllers share: reading the store, writing through the API handlers, Events.

Writes go through :class:`allot.registry.handlers.Handlers` with a field manager per
controller, so they are validated and versioned like any client's; ``Conflict`` simply
makes the runtime retry. Events are core/v1 Events as kube-scheduler and the kubelet write
them (reason, message, count, first/last timestamp). Used by every controller.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from allot.api.documents import clone_document
from allot.registry.admission import CONTROLLER_USER
from allot.registry.handlers import Handlers, WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import ServedResource, by_kind
from allot.store import Store
from allot.store.errors import AlreadyExists, NamespaceTerminating, NotFound
from allot.types import Obj, rfc3339

RECENT_EVENTS = 4096
"""Events remembered for counting repeats (client-go's correlator keeps as many)."""


@dataclass
class ControllerContext:
    cluster: str
    store: Store
    handlers: Handlers
    clock: Callable[[], dt.datetime]
    user: str = CONTROLLER_USER
    """Who the writes are admitted as: the platform's own controllers by default; a
    tenant's workload controllers write as the tenant's service accounts, so its cluster's
    admission (the tenant guard, quotas) judges them as any tenant write."""
    _recent_events: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    """Digest of (namespace, reason, message, object uid) -> the Event recorded for it."""
    _last_event_stamp: int = field(default=0, init=False, repr=False)

    def resource(self, kind: str) -> ServedResource:
        return by_kind(kind)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        try:
            return self.store.get(self.cluster, by_kind(kind).store, namespace, name)
        except NotFound:
            return None

    def peek(self, kind: str, namespace: str, name: str) -> Obj | None:
        """The stored object without a copy: read it, never modify it."""
        return self.store.peek(self.cluster, by_kind(kind).store, namespace, name)

    def scan(self, kind: str) -> list[Obj]:
        """Every stored object of a kind, unsorted and uncopied: read them, never modify."""
        return self.store.scan(self.cluster, by_kind(kind).store)

    def scan_namespace(self, kind: str, namespace: str) -> list[Obj]:
        """:meth:`scan` of one namespace, from the store's index of it."""
        return self.store.scan_namespace(self.cluster, by_kind(kind).store, namespace)

    def owned_by(self, kind: str, owner: Obj) -> list[Obj]:
        """The stored ``kind`` objects that reference ``owner`` (by uid), uncopied: read
        them, never modify them."""
        uid = owner["metadata"].get("uid") or ""
        return self.store.owned_by(self.cluster, by_kind(kind).store, uid)

    def orphans(self, kind: str, namespace: str) -> list[Obj]:
        """The stored ``kind`` objects of a namespace that nothing controls, uncopied."""
        return self.store.orphans(self.cluster, by_kind(kind).store, namespace)

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        items, _ = self.store.list_objects(
            self.cluster, by_kind(kind).store, namespace, shared=True
        )
        return items

    def update_custom(
        self, resource: ServedResource, obj: Obj, manager: str, subresource: str = ""
    ) -> Obj:
        """Update a custom object (``subresource``: ``status``) through the handlers."""
        metadata = obj["metadata"]
        target = Target(resource, metadata.get("namespace"), metadata.get("name"), subresource)
        return clone_document(
            self.handlers.update(self.cluster, target, obj, self._options(manager)).object
        )

    def _target(self, kind: str, obj: Obj, subresource: str = "") -> Target:
        resource = by_kind(kind)
        metadata = obj["metadata"]
        return Target(
            resource,
            metadata.get("namespace") if resource.namespaced else None,
            metadata.get("name"),
            subresource,
        )

    def _options(self, manager: str) -> WriteOptions:
        return WriteOptions(
            field_manager=manager, field_validation="Strict", dry_run=False, user=self.user
        )

    def create(self, kind: str, obj: Obj, manager: str) -> Obj:
        return clone_document(self.create_shared(kind, obj, manager))

    def create_shared(self, kind: str, obj: Obj, manager: str) -> Obj:
        """Create ``obj``; the stored object comes back uncopied (read it, never modify)."""
        resource = by_kind(kind)
        namespace = obj["metadata"].get("namespace") if resource.namespaced else None
        target = Target(resource, namespace, None, "")
        return self.handlers.create(self.cluster, target, obj, self._options(manager)).object

    def update(self, kind: str, obj: Obj, manager: str) -> Obj:
        return clone_document(
            self.handlers.update(
                self.cluster, self._target(kind, obj), obj, self._options(manager)
            ).object
        )

    def update_status(self, kind: str, obj: Obj, manager: str) -> Obj:
        return clone_document(
            self.handlers.update(
                self.cluster, self._target(kind, obj, "status"), obj, self._options(manager)
            ).object
        )

    def update_with_status(self, kind: str, obj: Obj, manager: str) -> Obj:
        """Write ``obj``'s metadata and spec and its status at once: one stored write,
        admitted as an update and a status update would be."""
        return clone_document(
            self.handlers.update_with_status(
                self.cluster, self._target(kind, obj), obj, self._options(manager)
            ).object
        )

    def write_status(self, kind: str, obj: Obj, manager: str) -> None:
        """:meth:`update_status` for a caller that does not read the stored object back
        (no copy of it is made)."""
        self.handlers.update(
            self.cluster, self._target(kind, obj, "status"), obj, self._options(manager)
        )

    def write_with_status(self, kind: str, obj: Obj, manager: str) -> None:
        """:meth:`update_with_status` for a caller that does not read the stored object
        back (no copy of it is made)."""
        self.handlers.update_with_status(
            self.cluster, self._target(kind, obj), obj, self._options(manager)
        )

    def bind(self, namespace: str, name: str, node: str) -> None:
        """Bind a pod to a node through the ``binding`` subresource, as kube-scheduler."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        target = Target(by_kind("Pod"), namespace, name, "binding")
        try:
            self.handlers.bind(self.cluster, target, body)
        except NotFound:
            return  # deleted meanwhile: nothing to bind

    def delete(self, kind: str, namespace: str, name: str, options: Obj | None = None) -> None:
        """Delete, with DeleteOptions (``gracePeriodSeconds``, ``preconditions``); gone
        already is fine."""
        resource = by_kind(kind)
        target = Target(resource, namespace if resource.namespaced else None, name, "")
        try:
            self.handlers.delete(self.cluster, target, options or {}, dry_run=False, user=self.user)
        except NotFound:
            return

    def event(
        self,
        involved: Obj,
        event_type: str,
        reason: str,
        message: str,
        component: str,
        *,
        source: EventOrigin | None = None,
    ) -> None:
        """Record an Event, or bump the count of the identical one recorded before (as
        client-go's correlator does, remembered in memory: the same object and part of it,
        source, reason and message). A new Event is named ``<object>.<hex nanoseconds>``
        as client-go names them, so the name order is the order they happened in:
        ``kubectl describe`` keeps it among events of one second."""
        metadata = involved["metadata"]
        namespace = metadata.get("namespace") or "default"
        moment = self.clock()
        now = rfc3339(moment)
        where = source or EventOrigin()
        digest = hashlib.sha1(
            f"{namespace}/{reason}/{message}/{metadata.get('uid')}/{where.field_path}/"
            f"{where.host}".encode()
        ).hexdigest()
        known = self._recent_events.get(digest)
        recorded = self.peek("Event", namespace, known) if known else None
        if recorded is not None:
            existing = clone_document(recorded)
            existing["count"] = int(existing.get("count") or 1) + 1
            existing["lastTimestamp"] = now
            self.update("Event", existing, component)
            return
        name = f"{metadata['name'][:236]}.{self._event_stamp(moment):x}"
        event = event_object(involved, event_type, reason, message, component, now, where)
        event["metadata"] = {"name": name, "namespace": namespace}
        try:
            self.create_shared("Event", event, component)  # the result is not needed
        except (AlreadyExists, NamespaceTerminating):  # dropped, as a recorder drops it
            return
        self._recent_events[digest] = name
        if len(self._recent_events) > RECENT_EVENTS:
            del self._recent_events[next(iter(self._recent_events))]

    def _event_stamp(self, moment: dt.datetime) -> int:
        """Nanoseconds of ``moment``, made strictly increasing (a fixed clock in tests, or
        two events in one tick, still get distinct names in order)."""
        stamp = max(int(moment.timestamp() * 1_000_000) * 1000, self._last_event_stamp + 1)
        self._last_event_stamp = stamp
        return stamp


@dataclass(frozen=True)
class EventOrigin:
    """Where an Event comes from beyond its component: the part of the object it is about
    (``involvedObject.fieldPath``, the kubelet's ``spec.containers{NAME}``) and the node
    that reports it (``source.host`` and ``reportingInstance``, the kubelet's node)."""

    field_path: str = ""
    host: str = ""


def event_object(
    involved: Obj,
    event_type: str,
    reason: str,
    message: str,
    component: str,
    now: str,
    where: EventOrigin | None = None,
) -> Obj:
    """A core/v1 Event about ``involved``, as kube-scheduler and the kubelet write them
    (its metadata is the caller's: a stable name here, ``generateName`` elsewhere)."""
    event = _event_fields(involved, event_type, reason, message, component, now)
    if where is not None and where.field_path:
        event["involvedObject"]["fieldPath"] = where.field_path
    if where is not None and where.host:
        event["source"]["host"] = where.host
        event["reportingInstance"] = where.host
    return event


def _event_fields(
    involved: Obj, event_type: str, reason: str, message: str, component: str, now: str
) -> Obj:
    metadata = involved["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"namespace": metadata.get("namespace") or "default"},
        "involvedObject": {
            "kind": involved.get("kind"),
            "apiVersion": involved.get("apiVersion"),
            "namespace": metadata.get("namespace"),
            "name": metadata["name"],
            "uid": metadata.get("uid"),
            "resourceVersion": metadata.get("resourceVersion"),
        },
        "reason": reason,
        "message": message,
        "type": event_type,
        "source": {"component": component},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "reportingComponent": component,
    }
