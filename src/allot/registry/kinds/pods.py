"""Pod: ``kubectl get pods`` columns, a new pod's status, upstream's pod defaulting.

A pod created with scheduling gates starts with ``PodScheduled=False`` reason
``SchedulingGated`` (the pod strategy's ``applySchedulingGatedCondition``), and the STATUS
column says ``SchedulingGated`` while that condition stands, as kubectl's printer does."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from allot.api.podresources import qos_class
from allot.registry.kinds import KindStrategy, Preparation, QuotaEvaluator, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import core, objects
from allot.validation.objects import KindRules

if TYPE_CHECKING:
    from allot.registry.quota import Charging, Usage

SCHEDULING_GATED = "SchedulingGated"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def _pod_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    reason = status.get("reason") or status.get("phase") or "Pending"
    if any(
        c.get("type") == "PodScheduled" and c.get("reason") == SCHEDULING_GATED
        for c in status.get("conditions") or []
    ):
        reason = SCHEDULING_GATED
    for container in statuses:
        state = container.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
    if obj["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [
        obj["metadata"]["name"],
        f"{ready}/{len(containers)}",
        reason,
        restarts,
        age(obj, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"{len(gates)}" if gates else "<none>",
    ]


def _service_account(obj: Obj, preparation: Preparation) -> None:
    """The ServiceAccount admission plugin's default: a new pod runs as its namespace's
    ``default`` account unless it names one (``serviceAccount`` is the deprecated alias,
    written back equal)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    if isinstance(name, str):
        spec["serviceAccountName"] = name
        spec["serviceAccount"] = name


def _pending(obj: Obj) -> None:
    """A client's status is dropped, as upstream's ``PrepareForCreate`` does; a gated pod
    says so in its ``PodScheduled`` condition (the handler dates it)."""
    spec = obj.get("spec")
    qos = qos_class(spec) if isinstance(spec, dict) else "BestEffort"
    obj["status"] = {"phase": "Pending", "qosClass": qos}
    if (obj.get("spec") or {}).get("schedulingGates"):
        obj["status"]["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": SCHEDULING_GATED,
                "message": GATED_MESSAGE,
            }
        ]


def _usage(obj: Obj, charging: Charging) -> Usage:
    from allot.registry import quota  # it reads the strategies: imported when charging

    return quota.pod_usage(obj, charging.now)


def _constraints(keys: set[str], obj: Obj) -> str | None:
    from allot.registry import quota

    return quota.pod_constraints(keys, obj)


def _charges(keys: set[str]) -> bool:
    from allot.registry import quota

    return any(quota.charges_pod_key(k) for k in keys)


QUOTA = QuotaEvaluator(usage=_usage, charges=_charges, constraints=_constraints)

STRATEGIES = (
    KindStrategy(
        "Pod",
        "pod",
        short_names=("po",),
        returns_deleted_object=True,  # upstream pods/storage: ReturnDeletedObject
        categories=("all",),
        subresources=("status", "log", "binding", "eviction"),
        rules=KindRules(
            defaults=objects.default_pod,
            validate=lambda obj, context: core.validate_pod(obj),
            validate_update=lambda new, old, context: core.validate_pod_update(new, old),
        ),
        initial_status=_pending,
        prepare_create=_service_account,
        quota=QUOTA,
        table=Table(
            [
                NAME,
                column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
                column("Status", "The aggregate status of the containers in this pod."),
                column(
                    "Restarts",
                    "The number of times the containers in this pod have been "
                    "restarted and when the last container in this pod has "
                    "restarted.",
                    kind="string",
                ),
                AGE,
                column("IP", "IP address allocated to the pod.", 1),
                column("Node", "Name of the Node this pod is assigned to.", 1),
                column("Nominated Node", "Name of the node this pod is nominated to run on.", 1),
                column("Readiness Gates", "Pod readiness gates.", 1),
            ],
            _pod_cells,
        ),
    ),
)
