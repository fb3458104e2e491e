"""The alert controller: evaluates the rules on a timer and raises and clears alerts.

Every ``interval_seconds`` (and on demand, for tests with a fake clock) it takes a capacity
snapshot, evaluates :mod:`allot.ops.rules`, and compares with what fires already. A new
alert becomes an ``Alert`` object on the host (``kubectl get alerts``, ``allot alerts``),
a series in ``/metrics`` and, for a pending claim, a Warning Event on the host claim with
the reason it is pending (the tenant sync relays it to the tenant's claim). An alert that
keeps firing while its message changes (more devices, another reason) has its object's
message rewritten. When the condition ends the Alert object is deleted and a Normal Event
says so. Alerts found in the store at start keep their ``activeSince``; a claim's pending
time counts from its last release, which the audit log remembers across restarts. The
timed evaluation runs on the server's event loop in steps (a changed slice summarised,
an alert raised or cleared) and gives the loop back every few milliseconds, so that a
fleet's worth of new alerts does not stall requests and watch streams. It reads and writes
through the client protocol only (:class:`allot.client.protocol.Client`), so the same
manager runs in the embedded platform (started by :mod:`allot.platform`) and in ``allot
controller`` against a real cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from allot.api import claims as claims_api
from allot.api.tenancy import TenantSpec
from allot.client.errors import NotFound
from allot.client.protocol import Client
from allot.fairshare.report import SharingSummary
from allot.ops.capacity import CapacityView, ClaimInfo, Snapshot
from allot.ops.rules import SETTLING, AlertSettings, Firing, RuleInputs, evaluate
from allot.tenancy import entitlement, names
from allot.types import Obj, rfc3339

LOG = logging.getLogger("allot.alerts")
MANAGER = "allot-alerts"
HOLD_SECONDS = 0.005  # the longest the alert loop holds the event loop between yields


class AlertManager:
    def __init__(
        self,
        host: Client,
        capacity: CapacityView,
        tenants: Callable[[], Mapping[str, TenantSpec]],
        sync_errors: Callable[[], Mapping[tuple[str, str, str, str], str]],
        settings: AlertSettings,
        sharing: Callable[[], SharingSummary] = SharingSummary,
        releases: Callable[[], Mapping[str, dt.datetime]] = dict,
    ) -> None:
        """``releases``: claim uid -> when it last released its devices, read once at
        start (the audit log's), so a claim released before a restart keeps waiting from
        its release."""
        self.host = host
        self.releases = releases
        self._released_before: Mapping[str, dt.datetime] = {}
        self.sharing = sharing
        self.capacity = capacity
        self.tenants = tenants
        self.sync_errors = sync_errors
        self.settings = settings
        self.firing: dict[str, Firing] = {}
        self._allocated_before: set[tuple[str, str]] = set()
        self._pending_since: dict[tuple[str, str], dt.datetime] = {}
        self._ended_since: dict[str, dt.datetime] = {}
        self._loaded = False
        self._under_way: Iterator[None] | None = None

    def current(self) -> list[Firing]:
        return sorted(self.firing.values(), key=lambda f: f.name)

    def pending_since(self) -> dict[tuple[str, str], dt.datetime]:
        """Since when each claim seen allocated before has been pending again (as of the
        last evaluation), by (namespace, name): what ``/metrics`` measures waits from."""
        return dict(self._pending_since)

    def evaluate_now(self) -> list[Firing]:
        """One evaluation: raise the new alerts, clear the ended ones; returns what fires.
        An evaluation the loop has under way (``run``) is finished first."""
        if self._under_way is not None:
            for _ in self._under_way:
                pass
        for _ in self._evaluation():
            pass
        return self.current()

    async def evaluate(self) -> list[Firing]:
        """``evaluate_now`` that gives the event loop back every :data:`HOLD_SECONDS`, for
        as long: a fleet's worth of new slices or alerts (a store write each) would otherwise
        hold the loop, and every request and watch stream with it, for a second or more."""
        self._under_way = steps = self._evaluation()
        try:
            until = time.perf_counter() + HOLD_SECONDS
            for _ in steps:
                if time.perf_counter() >= until:
                    await asyncio.sleep(HOLD_SECONDS)  # as long again for everything else
                    until = time.perf_counter() + HOLD_SECONDS
        finally:
            if self._under_way is steps:
                self._under_way = None
        return self.current()

    async def run(self) -> None:
        while True:
            try:
                await self.evaluate()
            except Exception:
                LOG.exception("evaluating the alert rules failed")
            await asyncio.sleep(self.settings.interval_seconds)

    def _evaluation(self) -> Iterator[None]:
        """The steps of one evaluation: each changed slice summarised, each alert raised or
        cleared (``firing`` follows each step, so a step is never done twice)."""
        if not self._loaded:
            self._load()
        yield from self.capacity.summarise_changed()
        yield
        now = self.host.now()
        snapshot = self.capacity.snapshot(now)
        found = {f.name: f for f in evaluate(self._inputs(snapshot), self.settings)}
        reported = set(found)
        stamp = rfc3339(now)
        for name, firing in found.items():
            if name not in self.firing:
                self._raise(firing, stamp)
                self.firing[name] = firing
                yield
            elif firing.message != self.firing[name].message:
                self._restate(firing)
                self.firing[name] = firing
                yield
        for name in [n for n in self.firing if n not in found]:
            if not self._settled(self.firing[name], now):
                found[name] = self.firing[name]  # still firing, for as long as it settles
                continue
            self._clear(self.firing[name])
            del self.firing[name]
            yield
        for name in [n for n in self._ended_since if n in reported]:  # back before it settled
            del self._ended_since[name]
        self.firing = found

    def _settled(self, firing: Firing, now: dt.datetime) -> bool:
        """Whether an alert whose condition is gone now ends: at once, or for a
        :data:`SETTLING` rule once the condition has stayed gone for ``settle_seconds``."""
        if firing.rule not in SETTLING:
            return True
        since = self._ended_since.setdefault(firing.name, now)
        if (now - since).total_seconds() < self.settings.settle_seconds:
            return False
        del self._ended_since[firing.name]
        return True

    # --------------------------------------------------------------- inputs
    def _released(self, snapshot: Snapshot) -> dict[tuple[str, str], dt.datetime]:
        """Since when each pending claim seen allocated before has been pending again: a
        claim's pending time counts from its release, not its creation."""
        seen = set()
        for claim in snapshot.claims:
            key = (claim.namespace, claim.name)
            seen.add(key)
            if claim.allocated:
                self._allocated_before.add(key)
                self._pending_since.pop(key, None)
            elif key in self._allocated_before:
                self._pending_since.setdefault(key, snapshot.now)
            elif claim.uid in self._released_before:  # released before the platform started
                self._pending_since.setdefault(key, self._released_before[claim.uid])
        self._allocated_before &= seen
        for key in [k for k in self._pending_since if k not in seen]:
            del self._pending_since[key]
        return dict(self._pending_since)

    def _inputs(self, snapshot: Snapshot) -> RuleInputs:
        quotas = tenant_quotas(self.host)
        nodes = {n["metadata"]["name"] for n in self.host.list("Node")}
        return RuleInputs(
            snapshot,
            self.tenants(),
            quotas,
            nodes,
            self.sync_errors(),
            self.pending_reason,
            tenant_entitlements(self.host),
            self.sharing().tenants,
            self._released(snapshot),
        )

    def pending_reason(self, claim: ClaimInfo) -> str:
        """Why a claim is pending: its pod's place in the fair-sharing queue, else the
        scheduler's words for the pod that uses it."""
        pods = sorted(self.host.list("Pod", claim.namespace), key=lambda p: p["metadata"]["name"])
        for pod in pods:
            if claim.name not in claims_api.referenced_claims(pod):
                continue
            conditions = {
                c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or []
            }
            for kind in ("QuotaReserved", "PodScheduled"):  # fair sharing's queue first
                condition = conditions.get(kind) or {}
                if condition.get("status") == "False":
                    return f"{condition.get('message')} (pod {pod_name(pod)})"
            return f"pod {pod_name(pod)} is waiting to be scheduled"
        return "no pod uses it yet (DRA allocates a claim when a pod that uses it is scheduled)"

    # ------------------------------------------------------- raising, clearing
    def _alerts(self) -> list[Obj]:
        """The Alert objects; none where the cluster does not serve the kind (a real
        cluster: the series and Events carry the alerts there)."""
        try:
            return self.host.list("Alert")
        except NotFound:
            return []

    def _load(self) -> None:
        for obj in self._alerts():
            spec = obj.get("spec") or {}
            subject = spec.get("subject") or {}
            firing = Firing(
                spec.get("rule", ""),
                spec.get("severity", ""),
                spec.get("tenant", ""),
                subject.get("kind", ""),
                subject.get("namespace", ""),
                subject.get("name", ""),
                spec.get("message", ""),
            )
            self.firing[firing.name] = firing
        self._released_before = self.releases()
        self._loaded = True

    def _raise(self, firing: Firing, stamp: str) -> None:
        LOG.warning("alert %s: %s", firing.rule, firing.message)
        alert = {
            "apiVersion": "allot.dev/v1alpha1",
            "kind": "Alert",
            "metadata": {"name": firing.name, "labels": {"allot.dev/rule": firing.rule}},
            "spec": {
                "rule": firing.rule,
                "severity": firing.severity,
                "tenant": firing.tenant or None,
                "subject": {
                    "kind": firing.subject_kind,
                    "namespace": firing.subject_namespace or None,
                    "name": firing.subject_name,
                },
                "message": firing.message,
            },
        }
        with contextlib.suppress(NotFound):  # Alerts not served: series and Event carry it
            if self.host.peek("Alert", "", firing.name) is None:
                created = self.host.create(_without_none(alert), field_manager=MANAGER)
                created["status"] = {"state": "Firing", "activeSince": stamp}
                self.host.update(created, field_manager=MANAGER, subresource="status")
        self._claim_events(firing, "Warning", firing.rule, firing.message)

    def _restate(self, firing: Firing) -> None:
        """A firing alert whose facts changed (a class grew, a quota filled further, a pending
        claim's reason moved on): its object says so too, so ``allot alerts`` and ``kubectl
        get alerts`` agree with the dashboard. No new Event: the condition did not restart."""
        alert = self.host.get("Alert", "", firing.name)
        if alert is None:
            return
        alert["spec"]["message"] = firing.message
        self.host.update(alert, field_manager=MANAGER)

    def _clear(self, firing: Firing) -> None:
        with contextlib.suppress(NotFound):  # deleted by someone else: still told below
            self.host.delete("Alert", "", firing.name)
        self._claim_events(firing, "Normal", f"{firing.rule}Resolved", "the condition has ended")

    def _claim_events(self, firing: Firing, kind: str, reason: str, message: str) -> None:
        """An Event on the host claim; the tenant sync relays it to the tenant's claim."""
        if firing.subject_kind != "ResourceClaim":
            return
        claim = self.host.peek("ResourceClaim", firing.subject_namespace, firing.subject_name)
        if claim is not None:
            self.host.events().record(claim, kind, reason, message, MANAGER)


def tenant_quotas(client: Client) -> list[Obj]:
    """The ResourceQuotas of tenant host namespaces (what quota alerts and metrics read),
    by namespace and name."""
    quotas = [
        q
        for q in client.list("ResourceQuota")
        if names.tenant_of_namespace(q["metadata"].get("namespace", ""))
    ]
    return sorted(quotas, key=lambda q: (q["metadata"].get("namespace"), q["metadata"]["name"]))


def tenant_entitlements(client: Client) -> dict[str, list[str]]:
    """Tenant -> the classes its params ConfigMap entitles it to (what the policies read)."""
    found = {}
    for params in client.list("ConfigMap", names.PLATFORM_NAMESPACE):
        tenant = (params["metadata"].get("labels") or {}).get(names.TENANT_LABEL)
        if tenant and params["metadata"]["name"] == entitlement.params_name(tenant):
            found[tenant] = entitlement.entitled_in_params(params)
    return found


def pod_name(pod: Obj) -> str:
    """A host pod by the name its tenant knows it by (a host pod's own name)."""
    annotations = pod["metadata"].get("annotations") or {}
    return str(annotations.get(names.NAME_ANNOTATION, pod["metadata"]["name"]))


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value
