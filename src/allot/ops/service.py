"""The operations side of one platform: capacity, audit, alerts, metrics, their endpoints.

:class:`Operations` owns the capacity view, the audit log and its recorder, the alert
manager and the metrics registry, and serves, for the host's token only: ``/metrics``
(Prometheus text), ``/allot/v1/capacity`` (pools, what can still be allocated per class
and MIG profile, tenants, the GPU tree, pending claims, alerts, fair sharing: what
``allot top`` and the dashboard show),
``/allot/v1/audit`` and ``/allot/v1/usage`` (the audit queries). Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from allot.api import claims as claims_api
from allot.api.tenancy import TenantSpec
from allot.controllers.claims import FAILED_CREATION
from allot.controllers.context import ControllerContext
from allot.dra import DraIndex
from allot.fairshare.report import SharingSummary
from allot.ops import audit, views
from allot.ops.alerts import AlertManager, pod_name, tenant_quotas
from allot.ops.audit import AuditLog, AuditRecorder
from allot.ops.capacity import CapacityView, Snapshot
from allot.ops.durations import parse_since
from allot.ops.metrics import CONTENT_TYPE, MetricSources, PlatformMetrics
from allot.ops.rules import AlertSettings
from allot.registry.clusters import Registry
from allot.registry.errors import BadRequest
from allot.tenancy import names
from allot.tenancy.directory import TenantDirectory
from allot.tenancy.explain import explain_twin
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
            "allocatable": views.allocatable(snapshot),
            "tenants": views.tenants(snapshot, self.tenant_specs(), self.tenant_quotas()),
            "nodes": views.gpu_tree(snapshot),
            "pending": views.pending(snapshot, reasons),
            "alerts": views.alerts(self.alerts.current()),
            "sharing": views.sharing(self.sharing()),
        }

    def node_document(self, node: str) -> Obj | None:
        """The dashboard's page of a node (:func:`views.node_view`); None if unknown."""
        return views.node_view(self.snapshot(), node, self.host.get("Node", "", node))

    def tenant_document(self, tenant: str) -> Obj | None:
        """A tenant's page (``host`` for the host's own claims): its quota and GPU memory,
        claims, devices per class now, and device-hours per class over the last day (from
        the audit log); None for a tenant that does not exist."""
        specs = self.tenant_specs()
        if tenant not in specs and tenant != audit.HOST_TENANT:
            return None
        snapshot = self.snapshot()
        document = views.tenant_view(snapshot, tenant)
        document["summary"] = (
            views.tenants(snapshot, {tenant: specs[tenant]}, self.tenant_quotas())[0]
            if tenant in specs
            else None
        )
        mine = [e for e in self.log.entries() if (e.tenant or audit.HOST_TENANT) == tenant]
        day = snapshot.now - dt.timedelta(hours=24)
        usage = audit.usage(mine, since=day, until=snapshot.now, by=audit.GROUPINGS["class"])
        document["usage"] = [row.document("class") for row in usage]
        return document

    def claim_document(self, namespace: str, name: str) -> Obj | None:
        """A claim's page (host namespace and name): :func:`views.claim_view`, and while it
        is pending, why: ``allot explain``'s answer for each pod that uses it
        (:func:`allot.tenancy.explain.explain_twin`), or that no pod does."""
        snapshot = self.snapshot()
        document = views.claim_view(snapshot, namespace, name)
        if document is None:
            return None
        claim = next(c for c in snapshot.claims if (c.namespace, c.name) == (namespace, name))
        stored = self.host.get("ResourceClaim", namespace, name) or {}
        document["requests"] = [_request_row(r) for r in claims_api.requests(stored)]
        document["reason"] = self.alerts.pending_reason(claim) if not claim.allocated else ""
        document["explanation"] = self._explanations(namespace, name) if not claim.allocated else []
        return document

    def _explanations(self, namespace: str, claim: str) -> list[str]:
        pods = [
            p for p in self.host.list("Pod", namespace) if claim in claims_api.referenced_claims(p)
        ]
        if not pods:
            return []
        neighbours = [
            p
            for p in self.host.list("Pod")
            if names.tenant_of_namespace(p["metadata"].get("namespace", ""))
        ]
        events = [
            e for e in self.host.list("Event", namespace) if e.get("reason") == FAILED_CREATION
        ]
        return [explain_twin(pod, neighbours, events).text(f"pod {pod_name(pod)}") for pod in pods]

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


def _request_row(request: Obj) -> Obj:
    """A claim's request as its page lists it: each alternative (``exactly`` is one) with
    its class, how many devices it asks for and its selectors."""
    alternatives = [request["exactly"]] if request.get("exactly") else []
    alternatives += request.get("firstAvailable") or []
    return {
        "name": request.get("name", ""),
        "alternatives": [
            {
                "name": a.get("name", ""),
                "class": a.get("deviceClassName", ""),
                "count": "all" if a.get("allocationMode") == "All" else str(a.get("count", 1)),
                "selectors": [
                    (s.get("cel") or {}).get("expression", "") for s in a.get("selectors") or []
                ],
            }
            for a in alternatives
        ],
    }


def _since(text: str | None, now: dt.datetime) -> dt.datetime | None:
    if not text:
        return None
    try:
        return parse_since(text, now)
    except ValueError as err:
        raise BadRequest(f"since {err}") from None
