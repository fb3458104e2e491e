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
    """kubectl's pod row (the printer's ``printPod``): READY counts the ready app
    containers and started sidecars, STATUS tells an init container's progress or
    failure (``Init:1/2``, ``Init:Error``, ``Init:CrashLoopBackOff``) until the pod is
    initialized, then the first app container's waiting or terminated reason."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Pending"
    if any(
        c.get("type") == "PodScheduled" and c.get("reason") == SCHEDULING_GATED
        for c in status.get("conditions") or []
    ):
        reason = SCHEDULING_GATED
    total = len(spec.get("containers") or [])
    ready = restarts = 0
    if spec.get("initContainers"):
        init_reason, ready, restarts, init_restarts, sidecars = _init_progress(spec, status)
        total += sidecars
        reason = init_reason or reason
        initialized = any(
            c.get("type") == "Initialized" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        if init_reason is not None and not initialized:
            return _pod_row(obj, spec, status, now, f"{ready}/{total}", reason, init_restarts)
    app_reason, app_ready, app_restarts = _app_progress(status, reason)
    return _pod_row(
        obj, spec, status, now, f"{ready + app_ready}/{total}", app_reason, restarts + app_restarts
    )


def _init_progress(spec: Obj, status: Obj) -> tuple[str | None, int, int, int, int]:
    """The STATUS an unfinished initialization shows (None: none to show), the ready
    sidecars, the sidecars' restarts, every init container's restarts up to the
    unfinished one, and the number of sidecars."""
    sidecar_names = {
        c.get("name") for c in spec["initContainers"] if c.get("restartPolicy") == "Always"
    }
    ready = restarts = every_restart = 0
    reason: str | None = None
    for position, entry in enumerate(status.get("initContainerStatuses") or []):
        sidecar = entry.get("name") in sidecar_names
        every_restart += int(entry.get("restartCount") or 0)
        if sidecar:
            restarts += int(entry.get("restartCount") or 0)
        state = entry.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting") or {}
        if terminated is not None and terminated.get("exitCode") == 0:
            continue
        if sidecar and entry.get("started"):
            ready += 1 if entry.get("ready") else 0
            continue
        if terminated is not None:
            reason = "Init:" + str(
                terminated.get("reason") or f"ExitCode:{terminated.get('exitCode')}"
            )
        elif waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{position}/{len(spec['initContainers'])}"
        break
    return reason, ready, restarts, every_restart, len(sidecar_names)


def _app_progress(status: Obj, reason: str) -> tuple[str, int, int]:
    """The STATUS the app containers give (the first one's waiting or terminated reason
    wins), how many are ready and their restarts."""
    ready = restarts = 0
    running = False
    for entry in reversed(status.get("containerStatuses") or []):
        restarts += int(entry.get("restartCount") or 0)
        state = entry.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            terminated = state["terminated"] or {}
            reason = str(terminated.get("reason") or f"ExitCode:{terminated.get('exitCode')}")
        elif entry.get("ready") and "running" in state:
            running = True
            ready += 1
    if reason == "Completed" and running:
        pod_ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        reason = "Running" if pod_ready else "NotReady"
    return reason, ready, restarts


def _pod_row(
    obj: Obj, spec: Obj, status: Obj, now: dt.datetime, ready: str, reason: str, restarts: int
) -> list[Any]:
    if obj["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [
        obj["metadata"]["name"],
        ready,
        reason,
        str(restarts),  # a string column upstream ("2 (5m ago)")
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
