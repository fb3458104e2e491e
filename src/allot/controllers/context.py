"""What controllers share: reading the store, writing through the API handlers, Events.

Writes go through :class:`allot.registry.handlers.Handlers` with a field manager per
controller, so they are validated and versioned like any client's; ``Conflict`` simply
makes the runtime retry. Events are core/v1 Events as kube-scheduler and the kubelet write
them, recorded by the client protocol's recorder (:mod:`allot.client.events`).

This is the embedded platform's older controller interface, which raises the registry's
own errors; :attr:`ControllerContext.client` is the same cluster as the client protocol
(:class:`allot.registry.inprocess.InProcessClient`), which controllers move to one by one
(docs/architecture.md lists those on it). Used by every controller not yet moved.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from allot.api.documents import clone_document
from allot.client.events import EventOrigin, event_object
from allot.registry.admission import CONTROLLER_USER
from allot.registry.handlers import Handlers, WriteOptions
from allot.registry.inprocess import InProcessClient
from allot.registry.requests import Target
from allot.registry.resources import ServedResource, by_kind
from allot.store import Store
from allot.store.errors import NotFound
from allot.types import Obj

__all__ = ["ControllerContext", "EventOrigin", "event_object"]


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
    _client: InProcessClient | None = field(default=None, init=False, repr=False)

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

    @property
    def client(self) -> InProcessClient:
        """This context as the client protocol (same cluster, user and clock)."""
        if self._client is None:
            self._client = InProcessClient(
                self.cluster, self.store, self.handlers, self.clock, user=self.user
            )
        return self._client

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
        """Record an Event, or count a repeat of one recorded before, with the protocol's
        recorder (:class:`allot.client.events.EventRecorder`: client-go's correlation and
        names)."""
        self.client.events().record(involved, event_type, reason, message, component, origin=source)
