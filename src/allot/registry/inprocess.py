"""The client protocol in process: :class:`InProcessClient`, over the registry's handlers.

Writes go through :class:`allot.registry.handlers.Handlers` exactly as an HTTP request's
do (decoding, defaulting, validation, the admission chain, field managers), admitted as
the platform's controllers (``user``), without HTTP or JSON: the object given is the
request body, a patch is handed over decoded, and an answer is the stored object (copied
for the caller, never decoded again). Reads are the store's in-memory objects (``peek``,
``list`` and ``owned_by`` uncopied, from its namespace and owner indexes); in process the
store is the informer's cache, always current. A refusal is raised as the protocol's error
built from the Status :func:`allot.statuses.to_status` gives the registry's exception, so
a controller catches the same class with the same message as over HTTP.

:class:`StoreSource` is the in-process informer: the store's committed writes, every
resource of every cluster, go to a :class:`~allot.client.dispatch.Dispatcher` after the
commit that holds them, never from inside the write. Only an index over the store
(:meth:`InProcessClient.add_indexer`, the DRA index) follows the writes as they are made,
as the store's own indexes do: readers join it with store reads (the capacity view checks
that a slice's entry is the version it lists), so it may not lag the store. The platform
makes one source for all its clients; a client made alone makes its own when its
dispatcher is first asked for.
"""

from __future__ import annotations

import builtins
import datetime as dt
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from allot.api.documents import clone_document
from allot.api.errors import UnknownKindError
from allot.api.kinds import lookup as lookup_kind
from allot.client import errors
from allot.client.dispatch import Dispatcher
from allot.client.events import EventRecorder
from allot.client.protocol import APPLY_CONTENT_TYPE, PATCH_CONTENT_TYPES, PatchType, WatchEvent
from allot.registry.admission import CONTROLLER_USER
from allot.registry.handlers import Handlers, WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import ServedResource, by_kind
from allot.registry.resources import lookup as lookup_resource
from allot.registry.selectors import field_selector as field_predicate
from allot.registry.selectors import label_selector as label_predicate
from allot.statuses import maps, to_status
from allot.store import Store
from allot.types import Obj

LOG = logging.getLogger("allot.client")


class StoreSource:
    """The store's committed writes, handed to a dispatcher (see the module)."""

    def __init__(self, store: Store, dispatcher: Dispatcher) -> None:
        self.store = store
        self.dispatcher = dispatcher
        store.add_listener(dispatcher.deliver, committed=True)
        dispatcher.settlers.append(store.committed)

    def close(self) -> None:
        self.store.remove_listener(self.dispatcher.deliver)


@dataclass(frozen=True)
class StoreInformer:
    """A kind watched in process: the store holds it, its writes reach the dispatcher."""

    resource: str

    def synced(self) -> bool:
        return True


class InProcessClient:
    def __init__(
        self,
        cluster: str,
        store: Store,
        handlers: Handlers,
        clock: Callable[[], dt.datetime],
        *,
        user: str = CONTROLLER_USER,
        dispatcher: Dispatcher | None = None,
    ) -> None:
        self._cluster = cluster
        self.store = store
        self.handlers = handlers
        self.clock = clock
        self.user = user
        self._dispatcher = dispatcher
        self._recorder: EventRecorder | None = None
        self._resources: dict[tuple[str, str | None], ServedResource] = {}

    @property
    def cluster(self) -> str:
        return self._cluster

    @property
    def dispatcher(self) -> Dispatcher:
        if self._dispatcher is None:
            self._dispatcher = Dispatcher()
            StoreSource(self.store, self._dispatcher)
        return self._dispatcher

    def now(self) -> dt.datetime:
        return self.clock()

    # ------------------------------------------------------------------ kinds
    def resource(self, kind: str, api_version: str | None = None) -> ServedResource:
        """A served kind by name (and apiVersion: a custom kind of this cluster)."""
        known = self._resources.get((kind, api_version))
        if known is None:
            with _translated():
                found = self._find(kind, api_version)
            known = self._resources[(kind, api_version)] = found
        return known

    def _find(self, kind: str, api_version: str | None) -> ServedResource:
        try:
            served = by_kind(kind)
            if api_version is None or served.api_version == api_version:
                return served
        except KeyError:
            if api_version is None:
                raise UnknownKindError(
                    f'no matches for kind "{kind}": name its apiVersion', api_version="", kind=kind
                ) from None
        info = lookup_kind(api_version, kind, self.cluster)
        custom = lookup_resource(info.group, info.version, info.plural, self.cluster)
        if custom is None:
            raise UnknownKindError(
                f'no matches for kind "{kind}" in version "{api_version}"',
                api_version=api_version,
                kind=kind,
            )
        return custom

    def _of(self, obj: Obj) -> ServedResource:
        return self.resource(str(obj.get("kind")), obj.get("apiVersion") or None)

    def _options(
        self, field_manager: str, *, dry_run: bool = False, force: bool = False
    ) -> WriteOptions:
        return WriteOptions(
            field_manager=field_manager,
            field_validation="Strict",
            dry_run=dry_run,
            force=force,
            user=self.user,
        )

    # ------------------------------------------------------------------ reads
    def get(
        self, kind: str, namespace: str, name: str, *, api_version: str | None = None
    ) -> Obj | None:
        found = self.peek(kind, namespace, name, api_version=api_version)
        return clone_document(found) if found is not None else None

    def peek(
        self, kind: str, namespace: str, name: str, *, api_version: str | None = None
    ) -> Obj | None:
        resource = self.resource(kind, api_version)
        where = namespace if resource.namespaced else ""
        return self.store.peek(self.cluster, resource.store, where, name)

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        api_version: str | None = None,
    ) -> builtins.list[Obj]:
        resource = self.resource(kind, api_version)
        if namespace is None or not resource.namespaced:
            items = self.store.scan(self.cluster, resource.store)
        else:
            items = self.store.scan_namespace(self.cluster, resource.store, namespace)
        if not label_selector and not field_selector:
            return items
        with _translated():
            labels = label_predicate(label_selector)
            fields = field_predicate(field_selector, resource.store.key)
        return [item for item in items if labels(item) and fields(item)]

    def owned_by(
        self, kind: str, owner_uid: str, *, api_version: str | None = None
    ) -> builtins.list[Obj]:
        resource = self.resource(kind, api_version)
        return self.store.owned_by(self.cluster, resource.store, owner_uid)

    # ----------------------------------------------------------------- writes
    def _target(self, resource: ServedResource, obj: Obj, subresource: str = "") -> Target:
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") if resource.namespaced else None
        return Target(resource, namespace, metadata.get("name"), subresource)

    def _named(
        self, kind: str, namespace: str, name: str, subresource: str, api_version: str | None
    ) -> Target:
        resource = self.resource(kind, api_version)
        return Target(resource, namespace if resource.namespaced else None, name, subresource)

    def create(self, obj: Obj, *, field_manager: str, dry_run: bool = False) -> Obj:
        resource = self._of(obj)
        target = self._target(resource, obj)
        with _translated():
            result = self.handlers.create(
                self.cluster,
                Target(resource, target.namespace, None, ""),
                obj,
                self._options(field_manager, dry_run=dry_run),
            )
        return clone_document(result.object)

    def update(self, obj: Obj, *, field_manager: str, subresource: str = "") -> Obj:
        resource = self._of(obj)
        target = self._target(resource, obj, subresource)
        options = self._options(field_manager)
        with _translated():
            if subresource == "scale":
                result = self.handlers.update_scale(self.cluster, target, obj, options)
            else:
                result = self.handlers.update(self.cluster, target, obj, options)
        return clone_document(result.object)

    def update_with_status(self, obj: Obj, *, field_manager: str) -> Obj:
        resource = self._of(obj)
        with _translated():
            result = self.handlers.update_with_status(
                self.cluster, self._target(resource, obj), obj, self._options(field_manager)
            )
        return clone_document(result.object)

    def patch(
        self,
        kind: str,
        namespace: str,
        name: str,
        patch: Any,
        *,
        field_manager: str,
        patch_type: PatchType = "merge",
        subresource: str = "",
        api_version: str | None = None,
    ) -> Obj:
        target = self._named(kind, namespace, name, subresource, api_version)
        content_type = PATCH_CONTENT_TYPES[patch_type]
        options = self._options(field_manager)
        with _translated():
            if subresource == "scale":
                result = self.handlers.patch_scale_decoded(
                    self.cluster, target, content_type, patch, options
                )
            else:
                result = self.handlers.patch_decoded(
                    self.cluster, target, content_type, patch, options
                )
        return clone_document(result.object)

    def apply(
        self, obj: Obj, *, field_manager: str, force: bool = False, subresource: str = ""
    ) -> Obj:
        target = self._target(self._of(obj), obj, subresource)
        options = self._options(field_manager, force=force)
        with _translated():
            result = self.handlers.patch_decoded(
                self.cluster, target, APPLY_CONTENT_TYPE, obj, options
            )
        return clone_document(result.object)

    def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        options: Obj | None = None,
        api_version: str | None = None,
    ) -> None:
        target = self._named(kind, namespace, name, "", api_version)
        with _translated():
            self.handlers.delete(self.cluster, target, options or {}, dry_run=False, user=self.user)

    def create_subresource(
        self, kind: str, namespace: str, name: str, subresource: str, body: Obj
    ) -> Obj | None:
        target = self._named(kind, namespace, name, subresource, None)
        with _translated():
            if subresource == "binding":
                self.handlers.bind(self.cluster, target, body, user=self.user)
            elif subresource == "eviction":
                self.handlers.evict(self.cluster, target, body, dry_run=False, user=self.user)
            else:
                raise errors.NotFound(
                    errors.status(404, "NotFound", f"{kind} has no {subresource} to create")
                )
        return None

    def get_subresource(self, kind: str, namespace: str, name: str, subresource: str) -> Obj:
        target = self._named(kind, namespace, name, subresource, None)
        with _translated():
            if subresource == "scale":
                return self.handlers.get_scale(self.cluster, target)
            return self.handlers.get(self.cluster, target)

    # ---------------------------------------------------------------- watches
    def inform(self, kind: str, *, api_version: str | None = None) -> StoreInformer:
        _ = self.dispatcher  # the store's writes reach it from now on
        return StoreInformer(self.resource(kind, api_version).store.key)

    def add_indexer(
        self, name: str, observe: Callable[[WatchEvent], None], resources: Iterable[str] | None
    ) -> None:
        """In process the store is the cache: ``observe`` follows its writes as they are
        made (an index must agree with the store that readers join it with)."""
        wanted = frozenset(resources) if resources is not None else None
        self.store.add_listener(_Indexer(name, observe, wanted))

    def events(self) -> EventRecorder:
        if self._recorder is None:
            self._recorder = EventRecorder(self)
        return self._recorder


@dataclass(frozen=True)
class _Indexer:
    """An index's store listener: only its resources, its failures logged (a write that
    stored its row is never failed by an index)."""

    name: str
    observe: Callable[[WatchEvent], None]
    resources: frozenset[str] | None

    def __call__(self, event: WatchEvent) -> None:
        if self.resources is None or event.resource in self.resources:
            try:
                self.observe(event)
            except Exception:
                LOG.exception("%s: indexing %s %s failed", self.name, event.type, event.resource)


class _Translated:
    """The registry's refusals raised as the protocol's errors (bugs left as they are)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, err: BaseException | None, traceback: Any) -> None:
        if err is None or isinstance(err, errors.ClientError) or not maps(err):
            return
        assert isinstance(err, Exception)
        raise errors.from_status(to_status(err).to_wire()) from err


_TRANSLATED = _Translated()


def _translated() -> _Translated:
    return _TRANSLATED
