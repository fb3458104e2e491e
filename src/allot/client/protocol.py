"""The typed client protocol: everything allot's own controllers do against one cluster.

One :class:`Client` per cluster. Kinds are named by ``kind`` (``"Pod"``,
``"ResourceClaim"``), as the built-in table :mod:`allot.api.kinds` names them; ``api_version``
only where a kind name is ambiguous or not built in (a custom resource). Every method that
names one object takes ``(kind, namespace, name)`` in that order (``namespace`` ``""`` for a
cluster-scoped kind); a write takes the object itself, whose ``apiVersion`` and ``kind`` say
what it is.

Reads come from the informer's cache when the kind is watched (the in-process
implementation's cache is the store itself), so they cost no request, and, as client-go's
listers, a remote cache may not show yet a write just made (controllers are level-based:
the write's change arrives as an event and queues the key again): ``get`` returns a copy
the caller owns, ``peek``, ``list`` and ``owned_by`` the cached objects themselves, which
must never be modified. Absence is ``None`` from ``get``/``peek`` (a lister's answer);
writes raise :mod:`allot.client.errors`. Watching is :meth:`Client.inform`: the kind's
changes reach the client's :class:`~allot.client.dispatch.Dispatcher`, which hands each
subscriber its events after the write committed; an index over the cache
(:meth:`Client.add_indexer`) changes with the cache itself. Implemented by
:class:`allot.registry.inprocess.InProcessClient` and :class:`allot.kube.remote.RemoteClient`.
"""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from allot.types import Obj

if TYPE_CHECKING:
    from allot.client.dispatch import Dispatcher
    from allot.client.events import EventRecorder

HOST_CLUSTER = "host"
"""The platform's own cluster (the host); tenants' clusters are named after them."""
PatchType = Literal["merge", "strategic", "json"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"


@dataclass(frozen=True)
class WatchEvent:
    """One change of one object, as a watch delivers it. ``resource`` is the storage key
    (``pods``, ``resourceclaims.resource.k8s.io``), ``rv`` the change's resourceVersion (0
    when the server's is not a number), ``previous`` the object before it when known (the
    in-process store's own dict, or the informer cache's entry), ``synthetic`` True for a
    change worked out by a relist after a gap rather than watched. Neither object may be
    modified."""

    type: str  # ADDED, MODIFIED, DELETED
    rv: int
    cluster: str
    resource: str
    object: Obj
    previous: Obj | None = field(default=None, compare=False, repr=False)
    synthetic: bool = field(default=False, compare=False, repr=False)


class Informer(Protocol):
    """A kind watched for a client: its cache is current once ``synced``."""

    @property
    def resource(self) -> str:
        """The storage key of the kind (what its :class:`WatchEvent` s name)."""

    def synced(self) -> bool:
        """Whether the first list is in the cache (always, in process)."""


class Client(Protocol):
    """What a controller may do against one cluster (see the module's docstring)."""

    @property
    def cluster(self) -> str:
        """The cluster's name: ``host``, or a tenant's (what its events carry)."""

    @property
    def dispatcher(self) -> Dispatcher:
        """Where the changes of the kinds this client informs arrive."""

    def now(self) -> dt.datetime:
        """The cluster's clock (a fixed one in tests)."""

    # ------------------------------------------------------------------ reads
    def get(
        self, kind: str, namespace: str, name: str, *, api_version: str | None = None
    ) -> Obj | None:
        """A copy of the object, or None when there is none."""

    def peek(
        self, kind: str, namespace: str, name: str, *, api_version: str | None = None
    ) -> Obj | None:
        """The cached object itself (never modify it), or None."""

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        api_version: str | None = None,
    ) -> builtins.list[Obj]:
        """The objects of a kind (in ``namespace``, or all), cached and shared (never
        modify them), in no particular order."""

    def owned_by(
        self, kind: str, owner_uid: str, *, api_version: str | None = None
    ) -> builtins.list[Obj]:
        """The cached ``kind`` objects whose ownerReferences name ``owner_uid``."""

    # ----------------------------------------------------------------- writes
    def create(self, obj: Obj, *, field_manager: str, dry_run: bool = False) -> Obj:
        """Create ``obj`` (``generateName`` allowed); the created object."""

    def update(self, obj: Obj, *, field_manager: str, subresource: str = "") -> Obj:
        """Replace ``obj`` (its ``resourceVersion``, if any, is a precondition), or its
        ``status`` (``subresource="status"``)."""

    def update_with_status(self, obj: Obj, *, field_manager: str) -> Obj:
        """Replace ``obj`` with its ``status``: in process one stored write, admitted as an
        update and a status update would be; remotely the object, then its status (two
        requests, as a client-go controller makes them)."""

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
        """A JSON merge, strategic merge or JSON patch of the object (or a subresource)."""

    def apply(
        self, obj: Obj, *, field_manager: str, force: bool = False, subresource: str = ""
    ) -> Obj:
        """Server-side apply of ``obj`` as ``field_manager``; ``force`` takes conflicting
        fields over."""

    def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        options: Obj | None = None,
        api_version: str | None = None,
    ) -> None:
        """Delete with DeleteOptions (``gracePeriodSeconds``, ``preconditions``,
        ``propagationPolicy``); NotFound when it is gone already."""

    def create_subresource(
        self, kind: str, namespace: str, name: str, subresource: str, body: Obj
    ) -> Obj | None:
        """POST to a subresource: a pod's ``binding`` or ``eviction``."""

    def get_subresource(self, kind: str, namespace: str, name: str, subresource: str) -> Obj:
        """GET a subresource (``scale``)."""

    # ---------------------------------------------------------------- watches
    def inform(self, kind: str, *, api_version: str | None = None) -> Informer:
        """Watch ``kind``: its cache is kept and its changes go to :attr:`dispatcher`."""

    def add_indexer(
        self, name: str, observe: Callable[[WatchEvent], None], resources: Iterable[str] | None
    ) -> None:
        """Keep derived state in step with the cache: ``observe`` is called as the cache
        of ``resources`` (None: every one) changes, before any subscriber is handed the
        change, so what a controller reads from the index agrees with what it reads from
        the cache (the DRA index). It must be cheap, must not write, and its failures are
        logged, never raised into a write."""

    def events(self) -> EventRecorder:
        """The client's Event recorder (one per client, correlating repeats)."""
