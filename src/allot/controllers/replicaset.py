"""The ReplicaSet controller: as many pods as ``spec.replicas``, made from the template.

Upstream's ``pkg/controller/replicaset``: the active pods the selector matches are claimed
(orphans adopted, pods no longer matching released); missing pods are created in slow-start
batches (1, 2, 4, ...; a refused creation ends the round with a ``FailedCreate`` Warning
Event ``Error creating: <the API error>`` and the ``ReplicaFailure`` condition); surplus
pods are deleted in upstream's order (:mod:`allot.controllers.podranking`). The status counts
replicas, fully labelled, ready, available (ready for ``minReadySeconds``) and terminating
pods. One
instance serves the host and every tenant cluster (:mod:`allot.controllers.workloads`).
Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Hashable

from allot.api.meta import selector_matches
from allot.api.pods import is_pod_active, is_pod_ready
from allot.controllers.adoption import (
    claim,
    in_namespace,
    is_pod_available,
    owner_keys,
    ready_since,
    typed,
)
from allot.controllers.context import ControllerContext
from allot.controllers.podranking import pods_to_delete
from allot.controllers.runtime import RetryLater
from allot.controllers.workloads import (
    ClusterContexts,
    WorkloadKey,
    controller_of,
    event_key,
    pod_from_template,
)
from allot.statuses import to_status
from allot.store import WatchEvent
from allot.types import Obj, rfc3339

MANAGER = "replicaset-controller"
BURST_REPLICAS = 500


class ReplicaSetController:
    name = "replicaset"
    watches = frozenset({"replicasets.apps", "pods"})  # the resources keys_for answers for

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts
        self.failures: Counter[WorkloadKey] = Counter()

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        if event.resource == "replicasets.apps":
            return [event_key(event)]
        if event.resource != "pods":
            return []
        return owner_keys(self.contexts, event, "ReplicaSet")

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("ReplicaSet")

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, "ReplicaSet")
        if found is None:
            self.failures.pop(key, None)
            return
        context, stored = found
        rs = typed(stored, "apps/v1", "ReplicaSet")
        candidates = context.owned_by("Pod", rs) + context.orphans("Pod", key.namespace)
        pods = claim(context, rs, "Pod", [p for p in candidates if is_pod_active(p)], MANAGER)
        error: tuple[str, str] | None = None
        if not rs["metadata"].get("deletionTimestamp"):
            error = self._manage(context, rs, pods)
        owned = context.owned_by("Pod", rs)  # after adoption, creation and deletion
        pods = [p for p in owned if is_pod_active(p) and _controlled(p, rs)]
        terminating = [p for p in owned if _terminating(p, rs)]
        self._write_status(context, rs, pods, len(terminating), error)
        if error is not None:
            self.failures[key] += 1
            raise RetryLater(min(60.0, 0.5 * 2 ** self.failures[key]))
        self.failures.pop(key, None)
        self._requeue_for_availability(context, rs, pods)

    # ------------------------------------------------------------ replicas
    def _manage(
        self, context: ControllerContext, rs: Obj, pods: list[Obj]
    ) -> tuple[str, str] | None:
        """Create or delete pods towards ``spec.replicas``; the failure condition's
        (reason, message) when a write was refused."""
        wanted = _replicas(rs)
        diff = len(pods) - wanted
        if diff < 0:
            return self._create(context, rs, min(-diff, BURST_REPLICAS))
        if diff > 0:
            return self._delete(context, rs, pods, min(diff, BURST_REPLICAS))
        return None

    def _create(self, context: ControllerContext, rs: Obj, count: int) -> tuple[str, str] | None:
        """Slow start: batches of 1, 2, 4, ... until one fails (upstream's
        ``slowStartBatch``)."""
        template = (rs.get("spec") or {}).get("template") or {}
        batch, remaining = 1, count
        while remaining > 0:
            size = min(batch, remaining)
            errors = [
                e for e in (self._create_one(context, rs, template) for _ in range(size)) if e
            ]
            if errors:
                return "FailedCreate", errors[0]
            remaining -= size
            batch *= 2
        return None

    def _create_one(self, context: ControllerContext, rs: Obj, template: Obj) -> str | None:
        pod = pod_from_template(rs, template)
        try:
            created = context.create("Pod", pod, MANAGER)
        except Exception as err:  # every refusal is reported, as upstream's pod control
            message = to_status(err).message or str(err)
            context.event(rs, "Warning", "FailedCreate", f"Error creating: {message}", MANAGER)
            return message
        context.event(
            rs, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}", MANAGER
        )
        return None

    def _delete(
        self, context: ControllerContext, rs: Obj, pods: list[Obj], count: int
    ) -> tuple[str, str] | None:
        related = _related_pods(context, rs) if controller_of(rs) else pods
        for pod in pods_to_delete(pods, count, context.clock(), related):
            name = pod["metadata"]["name"]
            try:
                context.delete("Pod", pod["metadata"].get("namespace") or "", name)
            except Exception as err:
                message = to_status(err).message or str(err)
                context.event(rs, "Warning", "FailedDelete", f"Error deleting: {message}", MANAGER)
                return "FailedDelete", message
            context.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name}", MANAGER)
        return None

    # -------------------------------------------------------------- status
    def _write_status(
        self,
        context: ControllerContext,
        rs: Obj,
        pods: list[Obj],
        terminating: int,
        error: tuple[str, str] | None,
    ) -> None:
        spec = rs.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = context.clock()
        old = rs.get("status") or {}
        status: Obj = {
            "replicas": len(pods),
            "fullyLabeledReplicas": sum(
                1
                for p in pods
                if all(
                    (p["metadata"].get("labels") or {}).get(k) == v
                    for k, v in template_labels.items()
                )
            ),
            "readyReplicas": sum(1 for p in pods if is_pod_ready(p)),
            "availableReplicas": sum(1 for p in pods if is_pod_available(p, min_ready, now)),
            "observedGeneration": rs["metadata"].get("generation"),
            "terminatingReplicas": terminating,
        }
        conditions = _failure_conditions(old.get("conditions") or [], error, now)
        if conditions:
            status["conditions"] = conditions
        status = _normalized(status)
        if status == _normalized(old):
            return
        latest = context.get(
            "ReplicaSet", rs["metadata"].get("namespace") or "", rs["metadata"]["name"]
        )
        if latest is None or latest["metadata"].get("uid") != rs["metadata"].get("uid"):
            return
        latest["status"] = status
        context.update_status("ReplicaSet", latest, MANAGER)

    def _requeue_for_availability(
        self, context: ControllerContext, rs: Obj, pods: list[Obj]
    ) -> None:
        """Look again when a ready pod will have been ready for ``minReadySeconds``."""
        min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready <= 0:
            return
        now = context.clock()
        waits = [
            (since + dt.timedelta(seconds=min_ready) - now).total_seconds()
            for p in pods
            if (since := ready_since(p)) is not None and not is_pod_available(p, min_ready, now)
        ]
        if waits:
            raise RetryLater(max(0.05, min(waits) + 0.01))


def _normalized(status: Obj) -> Obj:
    """A status as the wire has it: ``replicas`` always, ``terminatingReplicas`` when
    counted (a pointer upstream), other counts omitted when zero."""
    normalized: Obj = {"replicas": int(status.get("replicas") or 0)}
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if status.get(key):
            normalized[key] = status[key]
    for key in ("observedGeneration", "terminatingReplicas", "conditions"):
        if status.get(key) is not None and status.get(key) != []:
            normalized[key] = status[key]
    return normalized


def _failure_conditions(
    conditions: list[Obj], error: tuple[str, str] | None, now: dt.datetime
) -> list[Obj]:
    """The ``ReplicaFailure`` condition set while a write is refused and removed after
    (an existing one is kept as it was, as upstream's ``SetCondition`` does)."""
    current = next((c for c in conditions if c.get("type") == "ReplicaFailure"), None)
    if error is None:
        return [c for c in conditions if c.get("type") != "ReplicaFailure"]
    if current is not None:
        return conditions
    reason, message = error
    return [
        *conditions,
        {
            "type": "ReplicaFailure",
            "status": "True",
            "lastTransitionTime": rfc3339(now),
            "reason": reason,
            "message": message,
        },
    ]


def _related_pods(context: ControllerContext, rs: Obj) -> list[Obj]:
    """The active pods of every ReplicaSet with the same controller as ``rs`` (a
    Deployment's old and new sets), for the "doubled up" ranking."""
    owner = (controller_of(rs) or {}).get("uid")
    namespace = rs["metadata"].get("namespace") or ""
    siblings = {
        other["metadata"].get("uid")
        for other in in_namespace(context, "ReplicaSet", namespace)
        if (controller_of(other) or {}).get("uid") == owner
    }
    return [
        p
        for p in in_namespace(context, "Pod", namespace)
        if is_pod_active(p) and (controller_of(p) or {}).get("uid") in siblings
    ]


def _replicas(workload: Obj) -> int:
    replicas = (workload.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


def _terminating(pod: Obj, rs: Obj) -> bool:
    """Being deleted but not finished, controlled by ``rs`` and still selected (upstream's
    terminating pods of gate ``DeploymentReplicaSetTerminatingReplicas``, beta, on)."""
    phase = (pod.get("status") or {}).get("phase")
    return (
        bool(pod["metadata"].get("deletionTimestamp"))
        and phase not in ("Succeeded", "Failed")
        and _controlled(pod, rs)
        and selector_matches((rs.get("spec") or {}).get("selector"), pod["metadata"].get("labels"))
    )


def _controlled(pod: Obj, owner: Obj) -> bool:
    ref = controller_of(pod)
    return ref is not None and ref.get("uid") == owner["metadata"].get("uid")
