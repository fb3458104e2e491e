"""``allot controller``: the platform's operations controllers, run by watch on a real cluster.

The same components as the embedded platform, on the client protocol's remote
implementation (:class:`allot.kube.remote.RemoteClient`): shared informers list and watch
the DRA objects, pods, nodes, namespaces, quotas, Tenants and ConfigMaps (their caches
answer every read; the DRA index and the change counts the capacity view keys its caches
on are indexers, so they change with the caches), and the dispatcher hands each change to
the controllers after it happened on the cluster. No mirror, no polling:

- the alert manager (on its timer, ``--interval``) raises Alerts and Events on the
  cluster from the capacity view over the caches;
- the audit recorder (:class:`allot.ops.audit.AuditRecorder`, by claim events) writes
  ``<data-dir>/audit.db``, whose appends are idempotent, so a replica that takes over
  records what it missed and nothing twice;
- :class:`TenantObjects` keeps every Tenant's rendered objects applied (the same code as
  ``allot apply``, forcing conflicts), prunes those of Tenants that are gone, and writes
  the Tenants' status, when a Tenant, a class or one of those objects changes;
- ``/metrics`` and ``/healthz`` (:func:`metrics_app`).

With leader election (:class:`~allot.client.leaderelection.LeaderElector`, a Lease in
``allot-system``), replicas wait while another leads: only the leader builds the
controllers (and opens the audit log); a leader that cannot renew stops them. Used by
``allot controller`` and its tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from allot.api.kinds import decode
from allot.api.tenancy import Tenant, TenantSpec
from allot.client.errors import ClientError
from allot.client.leaderelection import LeaderElector, LeaseSettings
from allot.client.protocol import HOST_CLUSTER, WatchEvent
from allot.cluster import apply as applying
from allot.cluster.render import objects_in_apply_order, tenant_files
from allot.controllers.runtime import ControllerManager
from allot.dra import DraIndex
from allot.kube.client import Client as KubeClient
from allot.kube.errors import KubeError
from allot.kube.remote import RemoteClient
from allot.ops import audit
from allot.ops.alerts import AlertManager, tenant_quotas
from allot.ops.audit import AuditLog, AuditRecorder
from allot.ops.capacity import CapacityView
from allot.ops.metrics import MetricSources, PlatformMetrics
from allot.ops.rules import AlertSettings
from allot.tenancy import entitlement, names
from allot.types import Obj

LOG = logging.getLogger("allot.controller")
COMPONENT = "allot-controller"
WATCHED = (
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "Namespace",
    "Node",
    "Pod",
    "ResourceQuota",
    "Tenant",
    "ConfigMap",
)
"""The kinds the controllers read, each through one shared informer."""
DRA_RESOURCES = (
    "resourceslices.resource.k8s.io",
    "deviceclasses.resource.k8s.io",
    "resourceclaims.resource.k8s.io",
)
TENANTS = "tenants.allot.dev"
RENDERED = ("configmaps", "resourcequotas", "namespaces")
"""Kinds of the rendered tenant objects whose edits :class:`TenantObjects` takes back."""


class Collection(Protocol):
    """What :class:`CacheReads` reads of the capacity view's resource."""

    @property
    def key(self) -> str: ...

    @property
    def kind(self) -> str: ...


class ChangeCounts:
    """Changes per resource, counted as the caches change (what :class:`CacheReads`
    answers for ``changes``)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def observe(self, event: WatchEvent) -> None:
        self.counts[event.resource] += 1


class CacheReads:
    """The informers' caches read as the capacity view reads a store."""

    def __init__(self, client: RemoteClient, counts: ChangeCounts) -> None:
        self.client = client
        self.counts = counts

    def changes(self, cluster: str, resource: Collection) -> int:
        return self.counts.counts[resource.key]

    def list_objects(
        self, cluster: str, resource: Collection, namespace: str | None = None, *, shared: bool
    ) -> tuple[list[Obj], int]:
        items = self.client.list(resource.kind, namespace)
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return items, 0


class TenantObjects:
    """The controller that keeps every Tenant's rendered objects applied (one key)."""

    name = "tenant-objects"
    watches = frozenset({TENANTS, "deviceclasses.resource.k8s.io", *RENDERED})
    KEY = "tenants"

    def __init__(self, api: KubeClient, client: RemoteClient) -> None:
        self.api = api
        self.client = client
        self.specs: dict[str, TenantSpec] = {}
        self.applied: list[str] = []
        """What the passes changed (``configmap/... configured``), the newest 100."""

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.resource in RENDERED:
            labels = event.object["metadata"].get("labels") or {}
            return [self.KEY] if names.TENANT_LABEL in labels else []
        if event.resource == TENANTS and event.type == "MODIFIED" and event.previous:
            before, after = event.previous, event.object
            if before.get("spec") == after.get("spec") and _labels(before) == _labels(after):
                return []  # a status write (this controller's own, or another's)
        return [self.KEY]

    def initial_keys(self) -> list[Hashable]:
        return [self.KEY]

    def reconcile(self, key: Hashable) -> None:
        """Every Tenant's objects applied, forcing conflicts: an edit by another manager is
        drift this controller takes back, as a real cluster's field manager would otherwise
        refuse the apply."""
        tenants = [Tenant.model_validate(decode(dict(t))) for t in self.client.list("Tenant")]
        tenants.sort(key=lambda t: t.metadata.name or "")
        self.specs = {t.metadata.name or "": t.spec for t in tenants}
        classes = sorted(
            (dict(c) for c in self.client.list("DeviceClass")), key=lambda c: c["metadata"]["name"]
        )
        objects = objects_in_apply_order(tenant_files(tenants, classes))
        report = applying.apply(self.api, objects, prune=False, force=True)
        self._prune_gone(set(self.specs))
        self._write_status(tenants, classes)
        changed = [a.line() for a in report.actions if a.verb != "unchanged"]
        self.applied = [*self.applied, *changed][-100:]
        for line in changed:
            LOG.info("%s", line)

    def _prune_gone(self, present: set[str]) -> None:
        for api_version, kind in (
            ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
            ("v1", "ConfigMap"),
            ("v1", "ResourceQuota"),
        ):
            for item in self.client.list(
                kind, label_selector=applying.MANAGED_SELECTOR, api_version=api_version
            ):
                tenant = (item["metadata"].get("labels") or {}).get(names.TENANT_LABEL)
                if tenant and tenant not in present:
                    self.client.delete(
                        kind,
                        item["metadata"].get("namespace") or "",
                        item["metadata"]["name"],
                        api_version=api_version,
                    )

    def _write_status(self, tenants: list[Tenant], classes: list[Obj]) -> None:
        for tenant in tenants:
            name = tenant.metadata.name or ""
            status = {
                "phase": "Ready",
                "namespace": names.host_namespace(name),
                "entitledDeviceClasses": entitlement.entitled_classes(tenant, classes),
            }
            live = self.client.peek("Tenant", "", name)
            written = (live or {}).get("status") or {}
            if live is None or all(written.get(k) == v for k, v in status.items()):
                continue  # only these fields are this controller's: others may write more
            try:
                self.client.patch(
                    "Tenant", "", name, {"status": status}, field_manager=COMPONENT,
                    subresource="status",
                )  # fmt: skip
            except ClientError as err:
                LOG.warning("tenant %s: status not written: %s", name, err)


def _labels(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


class Controllers:
    """What the leader runs: the informers and every controller on them."""

    def __init__(self, api: KubeClient, data_dir: Path, settings: AlertSettings) -> None:
        self.client = RemoteClient(api)
        for kind in WATCHED:
            self.client.inform(kind)
        self.counts = ChangeCounts()
        self.client.add_indexer("changes", self.counts.observe, None)
        self.index = DraIndex(HOST_CLUSTER)
        self.client.add_indexer("dra-index", self.index.observe, DRA_RESOURCES)
        self.capacity = CapacityView(CacheReads(self.client, self.counts), index=self.index)
        self.tenants = TenantObjects(api, self.client)
        self.log_path = data_dir / "audit.db"
        self.log = AuditLog(self.log_path)
        self.alerts = AlertManager(
            self.client,
            self.capacity,
            lambda: self.tenants.specs,
            dict,
            settings,
            releases=lambda: audit.last_releases(self.log.entries()),
        )
        self.metrics = PlatformMetrics(
            MetricSources(
                lambda: self.capacity.snapshot(self.client.now()),
                lambda: tenant_quotas(self.client),
                self.alerts.current,
                dict,
                pending_since=self.alerts.pending_since,
            )
        )
        self.recorder = AuditRecorder(self.client, self.log, self.metrics.count, self.index)
        self.manager = ControllerManager([self.recorder, self.tenants])
        self.manager.subscribe(self.client.dispatcher)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """List every kind (the caches and the DRA index full), then start the controllers
        and the alert timer."""
        await self.client.start()
        self.manager.start()
        self._tasks.append(asyncio.create_task(self.alerts.run(), name="alerts"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.manager.stop()
        await self.client.stop()
        self.log.close()


@dataclass
class Election:
    """``--leader-elect`` and its durations (client-go's defaults: 15 s, 10 s, 2 s)."""

    identity: str
    namespace: str = names.PLATFORM_NAMESPACE
    name: str = "allot-controller"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def settings(self) -> LeaseSettings:
        return LeaseSettings(
            self.name,
            self.namespace,
            self.identity,
            self.lease_duration,
            self.renew_deadline,
            self.retry_period,
        )


class ClusterController:
    """One replica of ``allot controller``: it leads (builds and runs :class:`Controllers`)
    at once, or once it holds the Lease."""

    def __init__(
        self,
        api: KubeClient,
        data_dir: Path,
        settings: AlertSettings | None = None,
        election: Election | None = None,
    ) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.api = api
        self.data_dir = data_dir
        self.settings = settings or AlertSettings()
        self.election = election
        if election is not None:
            election.settings().check()
        self.running: Controllers | None = None
        self.leading = asyncio.Event()
        self.failure: str | None = None
        """Why the controller stopped by itself (a refusal, no server), worded for users."""

    async def run(self, stop: asyncio.Event) -> None:
        """Lead (after winning the election, if any) until ``stop`` is set."""
        if self.election is None:
            await self._lead(stop)
            return
        elector = LeaderElector(RemoteClient(self.api), self.election.settings())
        while not stop.is_set():
            stopping = asyncio.create_task(stop.wait())
            electing = asyncio.create_task(elector.run(lambda: self._lead(stop)))
            await asyncio.wait({stopping, electing}, return_when=asyncio.FIRST_COMPLETED)
            for task in (stopping, electing):
                task.cancel()
            await asyncio.gather(stopping, electing, return_exceptions=True)
            failure = electing.exception() if not electing.cancelled() else None
            if failure is not None:
                raise failure  # the controllers could not start (a refusal, no server)

    async def _lead(self, stop: asyncio.Event) -> None:
        controllers = Controllers(self.api, self.data_dir, self.settings)
        try:
            await controllers.start()
            self.running = controllers
            self.leading.set()
            await stop.wait()
        finally:
            self.leading.clear()
            self.running = None
            await controllers.stop()

    def metrics_text(self) -> bytes:
        running = self.running
        leader = b"# TYPE allot_controller_leader gauge\nallot_controller_leader %d\n"
        if running is None:
            return leader % 0
        return running.metrics.render() + leader % 1


def metrics_app(
    controller: ClusterController, on_failure: Callable[[], None] = lambda: None
) -> Any:
    """The controller as an ASGI app: ``/metrics`` and ``/healthz``, the controller run
    from startup to shutdown; ``on_failure`` is called when it stops by itself (its
    ``failure`` says why)."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from allot.ops.metrics import CONTENT_TYPE

    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []

    async def metrics(request: Any) -> Response:
        return Response(controller.metrics_text(), media_type=CONTENT_TYPE)

    async def health(request: Any) -> Response:
        return PlainTextResponse("ok")

    async def run() -> None:
        try:
            await controller.run(stop)
        except (ClientError, KubeError) as err:
            controller.failure = _described(err)
            on_failure()

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        tasks.append(asyncio.create_task(run()))
        try:
            yield
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)

    return Starlette(
        routes=[Route("/metrics", metrics), Route("/healthz", health)], lifespan=lifespan
    )


def _described(err: Exception) -> str:
    rule = err.missing_rule() if hasattr(err, "missing_rule") else ""
    return f"{err} ({rule})" if rule else str(err)
