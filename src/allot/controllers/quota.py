"""The ResourceQuota status controller: ``status.hard`` and ``status.used`` kept current.

Like kube-controller-manager's resourcequota controller, it recomputes a namespace's
usage (with the same evaluators as admission, :mod:`allot.registry.quota`) whenever an
object in a namespace with quotas changes, so ``kubectl describe quota`` shows used/hard.
Enforcement is admission's; this is the report. Runs for every cluster.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.controllers.context import ControllerContext
from allot.registry.quota import (
    ZERO,
    Charging,
    extended_resource_names,
    hard_limits,
    namespace_usage,
)
from allot.registry.resources import by_kind
from allot.store import WatchEvent
from allot.store.errors import Conflict, NotFound

MANAGER = "resourcequota-controller"
QUOTAS = "resourcequotas"


class QuotaStatus:
    name = "resourcequota"

    def __init__(self, context: ControllerContext) -> None:
        self.context = context
        self._quota = by_kind("ResourceQuota").store

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        namespace = event.object["metadata"].get("namespace")
        if not namespace or event.resource == "events":
            return []
        if event.resource != QUOTAS:
            quotas, _ = self.context.store.list_objects(
                event.cluster, self._quota, namespace, shared=True
            )
            if not quotas:
                return []
        return [(event.cluster, namespace)]

    def initial_keys(self) -> list[Hashable]:
        keys: list[Hashable] = []
        for cluster in self.context.store.clusters():
            quotas, _ = self.context.store.list_objects(cluster, self._quota, None, shared=True)
            keys += sorted({(cluster, q["metadata"]["namespace"]) for q in quotas})
        return keys

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        cluster, namespace = key
        ctx = ControllerContext(
            cluster, self.context.store, self.context.handlers, self.context.clock
        )
        quotas = ctx.list("ResourceQuota", namespace)
        if not quotas:
            return
        extended = extended_resource_names(self.context.store, cluster)
        charging = Charging(self.context.store, cluster, extended, self.context.clock())
        for quota in quotas:
            hard = hard_limits(quota)
            used = namespace_usage(
                self.context.store, cluster, namespace, hard, charging, quota=quota
            )
            status = {
                "hard": {k: str(v) for k, v in sorted(hard.items())},
                "used": {k: str(used.get(k, ZERO)) for k in sorted(hard)},
            }
            if quota.get("status") == status:
                continue
            try:
                ctx.update_status("ResourceQuota", {**quota, "status": status}, MANAGER)
            except (NotFound, Conflict):
                continue
