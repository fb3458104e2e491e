"""The operations side of one platform: capacity, audit, alerts, metrics, their endpoints.

:class:`Operations` owns the capacity view, the audit log and its recorder, the alert
manager and the metrics registry, and serves, for the host's token only:
``/metrics`` (Prometheus text), ``/allot/v1/capacity`` (pools, tenants, the GPU tree,
pending claims, alerts, fair sharing: what ``allot top`` and the dashboard show),
``/allot/v1/audit`` and ``/allot/v1/usage`` (the audit queries). Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from allot.api.tenancy import TenantSpec
from allot.controllers.context import ControllerContext
from allot.dra import DraIndex
from allot.fairshare.report import SharingSummary
from allot.ops import audit, views
from allot.ops.alerts import AlertManager, tenant_quotas
from allot.ops.audit import AuditLog, AuditRecorder
from allot.ops.capacity import CapacityView, Snapshot
from allot.ops.durations import parse_since
from allot.ops.metrics import CONTENT_TYPE, MetricSources, PlatformMetrics
from allot.ops.rules import AlertSettings
from allot.registry.clusters import Registry
from allot.registry.errors import BadRequest
from allot.tenancy.directory import TenantDirectory
from allot.tenancy.sync import TenantSync
from allot.types import Obj


class Operations:
    def __init__(
        self,
        registry: Registry,
        host: ControllerContext,
        directory: TenantDirectory,
        sync: TenantSync,
        settings: AlertSettings,
        index: DraIndex,
        sharing: Callable[[], SharingSummary] = SharingSummary,
    ) -> None:
        """``index``: the host's DRA index, read by the capacity view and the audit;
        ``sharing``: the fair-sharing figures of the last admission pass."""
        self.registry = registry
        self.sharing = sharing
        self.host = host
        self.directory = directory
        self.capacity = CapacityView(registry.store, index=index)
        self.log = AuditLog(registry.data_dir / "audit.db")
        self.recorder = AuditRecorder(host.client, self.log, index=index)
        self.alerts = AlertManager(
            host.client,
            self.capacity,
            self.tenant_specs,
            lambda: sync.errors,
            settings,
            sharing,
            lambda: audit.last_releases(self.log.entries()),
        )
        self.metrics = PlatformMetrics(
            MetricSources(
                self.snapshot,
                self.tenant_quotas,
                self.alerts.current,
                lambda: sync.errors,
                sharing,
                self.alerts.pending_since,
            )
        )
        self.recorder.on_entries = self.metrics.count

    def endpoints(self) -> dict[str, Callable[[Request], Awaitable[Response]]]:
        """The host's GET endpoints beside the Kubernetes API, by path below the cluster."""
        return {
            "metrics": self._metrics,
            "allot/v1/capacity": self._capacity,
            "allot/v1/audit": self._audit,
            "allot/v1/usage": self._usage,
        }

    def snapshot(self) -> Snapshot:
        return self.capacity.snapshot(self.registry.clock())

    def tenant_specs(self) -> Mapping[str, TenantSpec]:
        return {name: entry.tenant.spec for name, entry in self.directory.entries.items()}

    def tenant_quotas(self) -> list[Obj]:
        return tenant_quotas(self.host.client)

    def capacity_document(self) -> Obj:
        snapshot = self.snapshot()
        reasons = {(c.namespace, c.name): self.alerts.pending_reason(c) for c in snapshot.pending()}
        return {
            "time": views.stamp(snapshot.now),
            "pools": views.pools(snapshot),
            "tenants": views.tenants(snapshot, self.tenant_specs(), self.tenant_quotas()),
            "nodes": views.gpu_tree(snapshot),
            "pending": views.pending(snapshot, reasons),
            "alerts": views.alerts(self.alerts.current()),
            "sharing": views.sharing(self.sharing()),
        }

    def close(self) -> None:
        self.log.close()

    # -------------------------------------------------------------- endpoints
    async def _metrics(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=CONTENT_TYPE)

    async def _capacity(self, request: Request) -> Response:
        return JSONResponse(self.capacity_document())

    async def _audit(self, request: Request) -> Response:
        query = request.query_params
        entries = audit.query(
            self.log.entries(),
            tenant=query.get("tenant"),
            device=query.get("device"),
            since=_since(query.get("since"), self.registry.clock()),
        )
        return JSONResponse([e.__dict__ for e in entries])

    async def _usage(self, request: Request) -> Response:
        query = request.query_params
        now = self.registry.clock()
        since = _since(query.get("since"), now) or dt.datetime.min.replace(tzinfo=dt.UTC)
        by = query.get("by", "tenant")
        if by not in ("tenant", "class"):
            raise BadRequest(f"by must be tenant or class, not {by!r}")
        rows = audit.usage(self.log.entries(), since=since, until=now, by=audit.GROUPINGS[by])
        return JSONResponse([r.document(by) for r in rows])


def _since(text: str | None, now: dt.datetime) -> dt.datetime | None:
    if not text:
        return None
    try:
        return parse_since(text, now)
    except ValueError as err:
        raise BadRequest(f"since {err}") from None
