"""``allot controller``: the platform's controllers, run against a real cluster.

The cluster is mirrored into a local store (``<data-dir>/mirror.db``) every ``interval``
seconds by listing its DRA objects, pods, nodes, namespaces, quotas, Tenants and the
entitlement params (ConfigMaps in ``allot-system``) through
:mod:`allot.kube`; on that mirror run the same components as the embedded platform: the
capacity view, the alert manager (its Events are written to the real cluster, on the host
claims), the audit recorder (its own SQLite file, ``<data-dir>/audit.db``) and the metrics
(``/metrics`` on ``--metrics-address``). Each round also keeps every Tenant's rendered
objects (namespace, params, bindings, quota; policies) applied with the same code as
``allot apply``, prunes the objects of Tenants that are gone (never namespaces), and
writes the Tenants' status. Used by ``allot controller`` and its tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from allot.api.kinds import decode
from allot.api.tenancy import Tenant
from allot.cluster import apply as applying
from allot.cluster.render import objects_in_apply_order, tenant_files
from allot.controllers.context import ControllerContext, EventOrigin, event_object
from allot.controllers.runtime import ControllerManager
from allot.dra import DraIndex
from allot.kube.client import Client
from allot.kube.errors import KubeError, KubeNotFound
from allot.ops.alerts import AlertManager, tenant_quotas
from allot.ops.audit import AuditLog, AuditRecorder
from allot.ops.capacity import CapacityView
from allot.ops.metrics import MetricSources, PlatformMetrics
from allot.ops.rules import AlertSettings
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.registry.resources import by_kind
from allot.tenancy import entitlement, names
from allot.types import Obj, rfc3339

LOG = logging.getLogger("allot.controller")
COMPONENT = "allot-controller"
MIRRORED = [
    ("resource.k8s.io/v1", "DeviceClass", None),
    ("resource.k8s.io/v1", "ResourceSlice", None),
    ("resource.k8s.io/v1", "ResourceClaim", None),
    ("v1", "Namespace", None),
    ("v1", "Node", None),
    ("v1", "Pod", None),
    ("v1", "ResourceQuota", None),
    ("allot.dev/v1alpha1", "Tenant", None),
    ("v1", "ConfigMap", names.PLATFORM_NAMESPACE),  # the entitlement params, for alerts
]


class RemoteEvents(ControllerContext):
    """A context over the mirror whose Events go to the real cluster."""

    remote: Client

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
        metadata = involved["metadata"]
        now = rfc3339(self.clock())
        event = event_object(involved, event_type, reason, message, COMPONENT, now, source)
        event["metadata"]["generateName"] = f"{metadata['name']}-"
        event["involvedObject"].pop("resourceVersion", None)  # the mirror's, not the cluster's
        try:
            self.remote.create(event)
        except KubeError as err:
            LOG.warning("could not record event %s on %s: %s", reason, metadata["name"], err)


@dataclass
class RoundReport:
    mirrored: int = 0
    applied: list[str] = field(default_factory=list)
    alerts: int = 0


class ClusterController:
    def __init__(
        self,
        client: Client,
        data_dir: Path,
        settings: AlertSettings | None = None,
    ) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.client = client
        self.mirror = Registry(data_dir / "mirror")
        context = RemoteEvents(
            HOST_CLUSTER, self.mirror.store, self.mirror.handlers, self.mirror.clock
        )
        context.remote = client
        self.context = context
        index = DraIndex(HOST_CLUSTER)  # fed from the mirror, before the audit sees events
        index.refresh(
            context.list("ResourceSlice"),
            context.list("DeviceClass"),
            context.list("ResourceClaim"),
        )
        self.mirror.store.add_listener(index.observe)
        self.capacity = CapacityView(self.mirror.store, index=index)
        self.tenants: dict[str, Any] = {}
        self.alerts = AlertManager(
            context, self.capacity, lambda: self.tenants, dict, settings or AlertSettings()
        )
        self.log_path = data_dir / "audit.db"
        self.log = AuditLog(self.log_path)
        self.metrics = PlatformMetrics(
            MetricSources(
                lambda: self.capacity.snapshot(self.mirror.clock()),
                lambda: tenant_quotas(self.context),
                self.alerts.current,
                dict,
            )
        )
        self.manager = ControllerManager(
            [AuditRecorder(context, self.log, self.metrics.count, index)]
        )
        self.manager.subscribe(context.client.dispatcher)

    # ------------------------------------------------------------------ rounds
    async def round(self) -> RoundReport:
        report = RoundReport(mirrored=self.sync_mirror())
        await self.manager.idle()
        report.applied = self.sync_tenants()
        report.alerts = len(self.alerts.evaluate_now())
        return report

    def sync_mirror(self) -> int:
        """Make the mirror equal the cluster's listed objects; returns how many changed."""
        changed = 0
        for api_version, kind, namespace in MIRRORED:
            try:
                items = self.client.list(api_version, kind, namespace=namespace)
            except KubeNotFound:
                continue
            changed += self._converge(
                kind, [{"apiVersion": api_version, "kind": kind, **i} for i in items]
            )
        return changed

    def _converge(self, kind: str, items: list[Obj]) -> int:
        resource = by_kind(kind).store
        store = self.mirror.store
        live = {(i["metadata"].get("namespace", ""), i["metadata"]["name"]): i for i in items}
        changed = 0
        for key in list(_stored(store, resource)):
            if key not in live:
                store.purge(HOST_CLUSTER, resource, *key)  # gone there: no finalizers here
                changed += 1
        for (namespace, name), item in live.items():
            current = store.peek(HOST_CLUSTER, resource, namespace, name)
            body = _mirrored(item)
            if current is None:
                if namespace and not store.namespace_exists(HOST_CLUSTER, namespace):
                    continue  # its namespace arrives in the same round
                store.create(HOST_CLUSTER, resource, body, keep_identity=True)
                changed += 1
            elif _mirrored(current) != body:
                store.update(
                    HOST_CLUSTER,
                    resource,
                    {
                        **body,
                        "metadata": {
                            **body["metadata"],
                            "resourceVersion": current["metadata"]["resourceVersion"],
                        },
                    },
                )
                changed += 1
        return changed

    def sync_tenants(self) -> list[str]:
        """Every Tenant's objects applied (the same code as ``allot apply``), forcing
        conflicts: an edit by another manager is drift this controller takes back, as a
        real cluster's field manager would otherwise refuse the apply."""
        tenants = [Tenant.model_validate(decode(t)) for t in self.context.list("Tenant")]
        self.tenants = {t.metadata.name or "": t.spec for t in tenants}
        classes = [dict(c) for c in self.context.list("DeviceClass")]
        objects = objects_in_apply_order(tenant_files(tenants, classes))
        report = applying.apply(self.client, objects, prune=False, force=True)
        self._prune_gone(set(self.tenants))
        self._write_status(tenants, classes)
        return [a.line() for a in report.actions if a.verb != "unchanged"]

    def _prune_gone(self, present: set[str]) -> None:
        for api_version, kind in (
            ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
            ("v1", "ConfigMap"),
            ("v1", "ResourceQuota"),
        ):
            for item in self.client.list(
                api_version, kind, label_selector=applying.MANAGED_SELECTOR
            ):
                tenant = (item["metadata"].get("labels") or {}).get(names.TENANT_LABEL)
                if tenant and tenant not in present:
                    self.client.delete(
                        api_version,
                        kind,
                        item["metadata"]["name"],
                        item["metadata"].get("namespace"),
                    )

    def _write_status(self, tenants: list[Tenant], classes: list[Obj]) -> None:
        for tenant in tenants:
            name = tenant.metadata.name or ""
            status = {
                "phase": "Ready",
                "namespace": names.host_namespace(name),
                "entitledDeviceClasses": entitlement.entitled_classes(tenant, classes),
            }
            try:
                live = self.client.get("allot.dev/v1alpha1", "Tenant", name)
                if live.get("status") != status:
                    self.client.update({**live, "status": status}, subresource="status")
            except KubeError as err:
                LOG.warning("tenant %s: status not written: %s", name, err)

    async def run(self, interval: float, stop: asyncio.Event) -> None:
        self.manager.start()
        try:
            while not stop.is_set():
                try:
                    report = await self.round()
                    for line in report.applied:
                        LOG.info("%s", line)
                except KubeError as err:
                    LOG.warning("round failed: %s", err)
                try:
                    await asyncio.wait_for(stop.wait(), timeout=interval)
                except TimeoutError:
                    continue
        finally:
            await self.manager.stop()

    def close(self) -> None:
        self.log.close()
        self.mirror.store.close()


def _stored(store: Any, resource: Any) -> dict[tuple[str, str], Obj]:
    items, _ = store.list_objects(HOST_CLUSTER, resource, None, shared=True)
    return {(i["metadata"].get("namespace", ""), i["metadata"]["name"]): i for i in items}


def _mirrored(obj: Obj) -> Obj:
    """What the mirror keeps: the object without the server's bookkeeping (the live uid and
    times are kept, so audit entries and alerts name the real objects)."""
    metadata = {
        k: v
        for k, v in obj["metadata"].items()
        if k not in ("resourceVersion", "managedFields", "generation")
    }
    return {**{k: v for k, v in obj.items() if k != "metadata"}, "metadata": metadata}


def metrics_app(controller: ClusterController, interval: float) -> Any:
    """The controller as an ASGI app: ``/metrics`` and ``/healthz``, rounds in the
    background from startup to shutdown."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from allot.ops.metrics import CONTENT_TYPE

    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []

    async def metrics(request: Any) -> Response:
        return Response(controller.metrics.render(), media_type=CONTENT_TYPE)

    async def health(request: Any) -> Response:
        return PlainTextResponse("ok")

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        tasks.append(asyncio.create_task(controller.run(interval, stop)))
        try:
            yield
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)

    return Starlette(
        routes=[Route("/metrics", metrics), Route("/healthz", health)], lifespan=lifespan
    )
