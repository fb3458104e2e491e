"""The client protocol over any API server: :class:`RemoteClient`, through :mod:`allot.kube`.

Requests go through the official client (:class:`allot.kube.client.Client`, the only door
to ``kubernetes``); refusals become :mod:`allot.client.errors` built from the server's own
Status, so a controller sees what it would see in process. A 403 also names the RBAC rule
the request needed (:meth:`Forbidden.missing_rule`). Server-side apply is a PATCH with
``application/apply-patch+yaml``, ``fieldManager`` and ``force``; subresources (``status``,
``scale``, ``binding``, ``eviction``) are their paths.

:meth:`RemoteClient.inform` starts a shared informer for a kind (list, then watch with
bookmarks, relist after ``410 Gone``; :mod:`allot.client.informers`), whose cache answers
``get``, ``peek``, ``list`` (without selectors) and ``owned_by`` without a request once it
has synced, and whose changes reach :attr:`RemoteClient.dispatcher`. Used by ``allot
controller`` and the driver's publisher against real clusters and the embedded server.
"""

from __future__ import annotations

import asyncio
import builtins
import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from allot.api.documents import clone_document
from allot.client import errors
from allot.client.dispatch import Dispatcher
from allot.client.errors import ClientError, RbacRule
from allot.client.events import EventRecorder
from allot.client.informers import Informer
from allot.client.kinds import KindRef, builtin
from allot.client.protocol import (
    APPLY_CONTENT_TYPE,
    HOST_CLUSTER,
    PATCH_CONTENT_TYPES,
    PatchType,
    WatchEvent,
)
from allot.kube.client import Client as KubeClient
from allot.kube.errors import KubeError
from allot.types import Obj, utc_now

VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class RemoteClient:
    def __init__(
        self,
        api: KubeClient,
        cluster: str = HOST_CLUSTER,
        *,
        clock: Callable[[], dt.datetime] = utc_now,
        dispatcher: Dispatcher | None = None,
    ) -> None:
        self.api = api
        self._cluster = cluster
        self._clock = clock
        self._dispatcher = dispatcher or Dispatcher()
        self._kinds: dict[tuple[str, str | None], KindRef] = {}
        self.informers: dict[str, Informer] = {}
        self._recorder: EventRecorder | None = None
        self._indexers: builtins.list[
            tuple[Callable[[WatchEvent], None], frozenset[str] | None]
        ] = []

    @property
    def cluster(self) -> str:
        return self._cluster

    @property
    def dispatcher(self) -> Dispatcher:
        return self._dispatcher

    def now(self) -> dt.datetime:
        return self._clock()

    # ------------------------------------------------------------------ kinds
    def kind(self, kind: str, api_version: str | None = None) -> KindRef:
        """The kind's path parts: allot's table, else the server's discovery."""
        known = self._kinds.get((kind, api_version))
        if known is None:
            known = builtin(kind, api_version)
            if known is None:
                if api_version is None:
                    message = f'no matches for kind "{kind}": name its apiVersion'
                    raise errors.NotFound(errors.status(404, "NotFound", message))
                with _Translated(None):
                    plural, namespaced = self.api.resource_of(api_version, kind)
                known = KindRef(api_version, kind, plural, namespaced)
            self._kinds[(kind, api_version)] = known
        return known

    def _ref_of(self, obj: Obj) -> KindRef:
        return self.kind(str(obj.get("kind")), str(obj.get("apiVersion") or "") or None)

    def _informed(self, ref: KindRef) -> Informer | None:
        informer = self.informers.get(ref.resource)
        return informer if informer is not None and informer.synced() else None

    # ------------------------------------------------------------------ reads
    def get(
        self, kind: str, namespace: str, name: str, *, api_version: str | None = None
    ) -> Obj | None:
        found = self.peek(kind, namespace, name, api_version=api_version)
        return clone_document(found) if found is not None else None

    def peek(
        self, kind: str, namespace: str, name: str, *, api_version: str | None = None
    ) -> Obj | None:
        ref = self.kind(kind, api_version)
        informer = self._informed(ref)
        if informer is not None:
            return informer.cache.get(namespace if ref.namespaced else "", name)
        try:
            found: Obj = self._request(ref, "GET", namespace, name)
        except errors.NotFound:
            return None
        return found

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        api_version: str | None = None,
    ) -> builtins.list[Obj]:
        ref = self.kind(kind, api_version)
        informer = self._informed(ref)
        if informer is not None and not label_selector and not field_selector:
            return informer.cache.list(namespace)
        query = [
            (key, value)
            for key, value in (("labelSelector", label_selector), ("fieldSelector", field_selector))
            if value
        ]
        answer = self._request(ref, "GET", namespace, query=query)
        return [_typed(ref, item) for item in (answer or {}).get("items") or []]

    def owned_by(
        self, kind: str, owner_uid: str, *, api_version: str | None = None
    ) -> builtins.list[Obj]:
        ref = self.kind(kind, api_version)
        informer = self._informed(ref)
        if informer is not None:
            return informer.cache.owned_by(owner_uid)
        return [
            item
            for item in self.list(kind, api_version=api_version)
            if any(r.get("uid") == owner_uid for r in item["metadata"].get("ownerReferences") or [])
        ]

    # ----------------------------------------------------------------- writes
    def create(self, obj: Obj, *, field_manager: str, dry_run: bool = False) -> Obj:
        ref = self._ref_of(obj)
        namespace = obj.get("metadata", {}).get("namespace")
        query = _write_query(field_manager, dry_run)
        found: Obj = self._request(ref, "POST", namespace, None, obj, query=query)
        return found

    def update(self, obj: Obj, *, field_manager: str, subresource: str = "") -> Obj:
        ref = self._ref_of(obj)
        metadata = obj["metadata"]
        found: Obj = self._request(
            ref,
            "PUT",
            metadata.get("namespace"),
            metadata["name"],
            obj,
            subresource=subresource,
            query=_write_query(field_manager),
        )
        return found

    def update_with_status(self, obj: Obj, *, field_manager: str) -> Obj:
        updated = self.update(obj, field_manager=field_manager)
        if "status" not in obj or updated.get("status") == obj["status"]:
            return updated
        status = {**updated, "status": obj["status"]}
        return self.update(status, field_manager=field_manager, subresource="status")

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
        ref = self.kind(kind, api_version)
        found: Obj = self._request(
            ref,
            "PATCH",
            namespace,
            name,
            patch,  # the official client serializes a JSON body itself
            subresource=subresource,
            query=_write_query(field_manager),
            content_type=PATCH_CONTENT_TYPES[patch_type],
        )
        return found

    def apply(
        self, obj: Obj, *, field_manager: str, force: bool = False, subresource: str = ""
    ) -> Obj:
        ref = self._ref_of(obj)
        metadata = obj["metadata"]
        query = [("fieldManager", field_manager)] + ([("force", "true")] if force else [])
        found: Obj = self._request(
            ref,
            "PATCH",
            metadata.get("namespace"),
            metadata["name"],
            json.dumps(obj),
            subresource=subresource,
            query=query,
            content_type=APPLY_CONTENT_TYPE,
        )
        return found

    def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        options: Obj | None = None,
        api_version: str | None = None,
    ) -> None:
        ref = self.kind(kind, api_version)
        body = {"apiVersion": "v1", "kind": "DeleteOptions", **(options or {})}
        self._request(ref, "DELETE", namespace, name, body)

    def create_subresource(
        self, kind: str, namespace: str, name: str, subresource: str, body: Obj
    ) -> Obj | None:
        ref = self.kind(kind)
        found: Obj | None = self._request(
            ref, "POST", namespace, name, body, subresource=subresource
        )
        return found

    def get_subresource(self, kind: str, namespace: str, name: str, subresource: str) -> Obj:
        ref = self.kind(kind)
        found: Obj = self._request(ref, "GET", namespace, name, subresource=subresource)
        return found

    def _request(
        self,
        ref: KindRef,
        method: str,
        namespace: str | None,
        name: str | None = None,
        body: Any = None,
        *,
        subresource: str = "",
        query: builtins.list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """One request to the kind's path; a refusal as the protocol's error, a 403 with
        the RBAC rule that would have allowed it."""
        verb = "list" if method == "GET" and name is None else VERBS[method]
        resource = f"{ref.plural}/{subresource}" if subresource else ref.plural
        rule = RbacRule(verb, ref.group, resource, namespace if ref.namespaced else None)
        path = ref.path(namespace, name, subresource)
        with _Translated(rule):
            return self.api.request(method, path, body, query=query, content_type=content_type)

    # ---------------------------------------------------------------- watches
    def inform(self, kind: str, *, api_version: str | None = None) -> Informer:
        ref = self.kind(kind, api_version)
        informer = self.informers.get(ref.resource)
        if informer is None:
            informer = Informer(
                self.cluster, ref.resource, KubeListWatch(self.api, ref), self.dispatcher
            )
            informer.indexers.extend(
                observe
                for observe, resources in self._indexers
                if resources is None or ref.resource in resources
            )
            self.informers[ref.resource] = informer
        return informer

    def add_indexer(
        self, name: str, observe: Callable[[WatchEvent], None], resources: Iterable[str] | None
    ) -> None:
        """``observe`` changes with the informers' caches of ``resources`` (None: every
        one; those informed now and later), before each change is dispatched."""
        wanted = frozenset(resources) if resources is not None else None
        self._indexers.append((observe, wanted))
        for resource, informer in self.informers.items():
            if wanted is None or resource in wanted:
                informer.indexers.append(observe)

    async def start(self, timeout: float = 60.0) -> None:
        """Start every informer and the dispatcher; return once each has listed."""
        self.dispatcher.start()
        informers = list(self.informers.values())
        for informer in informers:
            informer.start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not all(i.synced() for i in informers):
            refused = next(
                (i.error for i in informers if isinstance(i.error, errors.Forbidden)), None
            )
            if refused is not None:
                raise refused  # no use waiting: the permission is missing
            if loop.time() >= deadline:
                late = next(i for i in informers if not i.synced())
                raise late.error or errors.unavailable(f"{late.resource} did not list in time")
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        await asyncio.gather(*(i.stop() for i in self.informers.values()))
        self.dispatcher.stop()

    def events(self) -> EventRecorder:
        if self._recorder is None:
            self._recorder = EventRecorder(self)
        return self._recorder


class KubeListWatch:
    """A kind's list and watch requests through :class:`allot.kube.client.Client`."""

    def __init__(self, api: KubeClient, ref: KindRef) -> None:
        self.api = api
        self.ref = ref

    def list(self) -> tuple[list[Obj], str]:
        with _Translated(RbacRule("list", self.ref.group, self.ref.plural, None)):
            answer = self.api.request("GET", self.ref.path(None))
        items = [_typed(self.ref, item) for item in answer.get("items") or []]
        return items, str((answer.get("metadata") or {}).get("resourceVersion") or "")

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[tuple[str, Obj]]:
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        rule = RbacRule("watch", self.ref.group, self.ref.plural, None)
        with _Translated(rule):
            for event in self.api.stream(self.ref.path(None), query, timeout_seconds):
                kind, obj = str(event.get("type")), event.get("object") or {}
                if kind == "ERROR":
                    raise errors.from_status(obj)
                yield kind, obj

    def close(self) -> None:
        self.api.end_streams()


class _Translated:
    """Turns a :class:`KubeError` into the protocol's error for the request's rule."""

    def __init__(self, rule: RbacRule | None) -> None:
        self.rule = rule

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, err: BaseException | None, traceback: Any) -> None:
        if isinstance(err, KubeError) and not isinstance(err, ClientError):
            body = err.status_body
            if body is None or "code" not in body:
                code = err.status
                reason = err.reason or ("ServiceUnavailable" if code in (0, 503) else "")
                body = errors.status(code, reason, str(err))
            raise errors.from_status(body, self.rule) from None


def _typed(ref: KindRef, item: Obj) -> Obj:
    """A listed item with its apiVersion and kind (lists leave them out)."""
    if "kind" not in item:
        item = {"apiVersion": ref.api_version, "kind": ref.kind, **item}
    return item


def _write_query(field_manager: str, dry_run: bool = False) -> builtins.list[tuple[str, str]]:
    return [("fieldManager", field_manager)] + ([("dryRun", "All")] if dry_run else [])
