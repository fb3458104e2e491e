"""The ReplicaSet controller: as many pods as ``spec.replicas``, made from the template.

Upstream's ``pkg/controller/replicaset``, which also runs ReplicationControllers (its
``replication`` package wraps the same manager with the older kind): one class here, given
the kind (:data:`REPLICA_SET` or :data:`REPLICATION_CONTROLLER`, whose selector is a plain
label map and whose status has no ``terminatingReplicas``). The active pods the selector
matches are claimed (orphans adopted, pods no longer matching released); missing pods are
created in slow-start batches (1, 2, 4, ...; a refused creation ends the round with a
``FailedCreate`` Warning Event ``Error creating: <the API error>`` and the
``ReplicaFailure`` condition: :mod:`allot.controllers.podcontrol`); surplus pods are
deleted in upstream's order (:mod:`allot.controllers.podranking`). The status counts
replicas, fully labelled, ready, available (ready for ``minReadySeconds``) and terminating
pods. One instance serves the host and every tenant cluster (:mod:`allot.controllers.workloads`).
Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass

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
from allot.controllers.podcontrol import create_pod, delete_pod, slow_start
from allot.controllers.podranking import pods_to_delete
from allot.controllers.runtime import RetryLater
from allot.controllers.workloads import (
    ClusterContexts,
    WorkloadKey,
    controller_of,
    event_key,
    pod_from_template,
)
from allot.store import WatchEvent
from allot.types import Obj, rfc3339

MANAGER = "replicaset-controller"
BURST_REPLICAS = 500


@dataclass(frozen=True)
class ReplicatedKind:
    """A kind the controller keeps replicas of: its name, API version, the store resource
    its events carry, the field manager of its writes, whether its ``spec.selector`` is a
    plain label map, and whether its status counts terminating pods."""

    kind: str
    api_version: str
    resource: str
    manager: str
    plain_selector: bool
    counts_terminating: bool

    def selector(self, obj: Obj) -> Obj | None:
        """The object's selector as a ``metav1.LabelSelector``."""
        selector = (obj.get("spec") or {}).get("selector")
        return {"matchLabels": selector or {}} if self.plain_selector else selector

    def view(self, obj: Obj) -> Obj:
        """``obj`` typed, its selector a ``metav1.LabelSelector`` (what adoption reads)."""
        typed_obj = typed(obj, self.api_version, self.kind)
        if not self.plain_selector:
            return typed_obj
        return {**typed_obj, "spec": {**(obj.get("spec") or {}), "selector": self.selector(obj)}}


REPLICA_SET = ReplicatedKind(
    "ReplicaSet", "apps/v1", "replicasets.apps", MANAGER, False, counts_terminating=True
)
REPLICATION_CONTROLLER = ReplicatedKind(
    "ReplicationController",
    "v1",
    "replicationcontrollers",
    "replication-controller",
    True,
    counts_terminating=False,
)


class ReplicaSetController:
    def __init__(self, contexts: ClusterContexts, kind: ReplicatedKind = REPLICA_SET) -> None:
        self.contexts = contexts
        self.kind = kind
        self.name = kind.kind.lower()
        self.watches = frozenset({kind.resource, "pods"})  # what keys_for answers for
        self.failures: Counter[WorkloadKey] = Counter()

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        if event.resource == self.kind.resource:
            return [event_key(event)]
        if event.resource != "pods":
            return []
        return owner_keys(self.contexts, event, self.kind.kind, self.kind.selector)

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys(self.kind.kind)

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, self.kind.kind)
        if found is None:
            self.failures.pop(key, None)
            return
        context, stored = found
        rs = self.kind.view(stored)
        candidates = context.owned_by("Pod", rs) + context.orphans("Pod", key.namespace)
        active = [p for p in candidates if is_pod_active(p)]
        pods = claim(context, rs, "Pod", active, self.kind.manager)
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
        error = slow_start(
            count,
            lambda _: create_pod(context, rs, pod_from_template(rs, template), self.kind.manager),
        )
        return None if error is None else ("FailedCreate", error)

    def _delete(
        self, context: ControllerContext, rs: Obj, pods: list[Obj], count: int
    ) -> tuple[str, str] | None:
        related = _related_pods(context, rs) if controller_of(rs) else pods  # a Deployment's
        for pod in pods_to_delete(pods, count, context.clock(), related):
            error = delete_pod(context, rs, pod, self.kind.manager)
            if error is not None:
                return "FailedDelete", error
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
        }
        if self.kind.counts_terminating:
            status["terminatingReplicas"] = terminating
        conditions = _failure_conditions(old.get("conditions") or [], error, now)
        if conditions:
            status["conditions"] = conditions
        status = _normalized(status)
        if status == _normalized(old):
            return
        latest = context.get(
            self.kind.kind, rs["metadata"].get("namespace") or "", rs["metadata"]["name"]
        )
        if latest is None or latest["metadata"].get("uid") != rs["metadata"].get("uid"):
            return
        latest["status"] = status
        context.update_status(self.kind.kind, latest, self.kind.manager)

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
    """The active pods of every object of ``rs``'s kind with the same controller as ``rs``
    (a Deployment's old and new sets), for the "doubled up" ranking."""
    owner = (controller_of(rs) or {}).get("uid")
    namespace = rs["metadata"].get("namespace") or ""
    siblings = {
        other["metadata"].get("uid")
        for other in in_namespace(context, rs["kind"], namespace)
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
