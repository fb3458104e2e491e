"""Evicting a pod as kube-scheduler's preemption does: say why, then delete it gracefully.

Upstream's ``PreemptPod`` (``pkg/scheduler/framework/preemption``) first writes the
victim's ``DisruptionTarget`` condition (status True, a reason, a message) through the
``status`` subresource, then deletes the pod with default options (so its own
``terminationGracePeriodSeconds`` applies: the node agent stops it gracefully), then records
an Event on the victim (``Preempted``). The condition is what lets a Job's
``podFailurePolicy`` (``onPodConditions: [{type: DisruptionTarget}]``) tell a preemption
from a failure, and what a tenant sees on its own pod (the sync copies the twin's status
back, then makes the tenant pod ``Terminating``). Called by the fair-sharing admission
controller on host pods, through the client protocol; the preemptor's own Event
(``Preempting``) is the caller's.
"""

from __future__ import annotations

from allot.client.errors import Conflict, NotFound, status
from allot.client.protocol import Client
from allot.types import Obj, rfc3339

DISRUPTION_TARGET = "DisruptionTarget"
STATUS_ATTEMPTS = 3


def evict_pod(
    context: Client,
    namespace: str,
    name: str,
    *,
    reason: str,
    message: str,
    event_reason: str,
    event_message: str,
    component: str,
) -> bool:
    """Mark pod ``namespace/name`` of ``context``'s cluster as a disruption target
    (``reason``, ``message``), delete it gracefully, then record a Normal Event
    (``event_reason``, ``event_message``) from ``component``. False when the pod is gone or
    already terminating (nothing done), True when it was evicted."""
    pod = _with_condition(context, namespace, name, reason, message, component)
    if pod is None:
        return False
    options = {"preconditions": {"uid": pod["metadata"]["uid"]}}
    try:  # default options: the pod's own terminationGracePeriodSeconds
        context.delete("Pod", namespace, name, options=options)
    except (Conflict, NotFound):
        return False  # gone meanwhile, or a new pod of that name by now
    context.events().record(pod, "Normal", event_reason, event_message, component)
    return True


def _with_condition(
    context: Client, namespace: str, name: str, reason: str, message: str, manager: str
) -> Obj | None:
    """The pod with its ``DisruptionTarget`` condition written (re-read on a conflict);
    None when it is gone or already terminating."""
    for _ in range(STATUS_ATTEMPTS):
        pod = context.get("Pod", namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return None
        if not _set_disruption_target(pod, reason, message, rfc3339(context.now())):
            return pod
        try:
            return context.update(pod, field_manager=manager, subresource="status")
        except Conflict:
            continue
        except NotFound:
            return None
    message = f'Operation cannot be fulfilled on pods "{name}": kept changing'
    raise Conflict(status(409, "Conflict", message))


def _set_disruption_target(pod: Obj, reason: str, message: str, now: str) -> bool:
    """Put the condition in ``pod``'s status; False when it is there already, unchanged
    (``UpdatePodCondition``: the transition time moves only with the status)."""
    status = pod.setdefault("status", {})
    conditions = list(status.get("conditions") or [])
    condition: Obj = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }
    generation = pod["metadata"].get("generation")
    if generation is not None:
        condition["observedGeneration"] = generation
    for index, existing in enumerate(conditions):
        if existing.get("type") != DISRUPTION_TARGET:
            continue
        if existing.get("status") == "True":
            condition["lastTransitionTime"] = existing.get("lastTransitionTime", now)
        if existing == condition:
            return False
        conditions[index] = condition
        break
    else:
        conditions.append(condition)
    status["conditions"] = conditions
    return True
