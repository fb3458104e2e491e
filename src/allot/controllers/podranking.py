"""Which of a ReplicaSet's pods to delete first when it scales down.

Upstream's ``ActivePodsWithRanks`` with its 1.36 defaults (``PodDeletionCost`` and
``LogarithmicScaleDown`` on): unassigned before assigned; Pending before Unknown before
Running; not ready before ready; lower ``controller.kubernetes.io/pod-deletion-cost``
first; more related pods on the same node first (doubled up); ready for less time first;
more container restarts first; newer first. Ready and creation times are compared in
powers of two of their age, ties broken by UID, so pods of about the same age go in a
random but stable order. Used by :mod:`allot.controllers.replicaset`.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections import Counter

from allot.api.pods import is_pod_active, is_pod_ready
from allot.controllers.adoption import ready_since
from allot.types import Obj

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def pods_to_delete(
    pods: list[Obj], count: int, now: dt.datetime, related: list[Obj] | None = None
) -> list[Obj]:
    """The ``count`` pods to delete first; ``related`` are the pods of every ReplicaSet
    of the same owner (for "doubled up"), ``pods`` themselves when not given."""
    if count >= len(pods):
        return list(pods)
    return ranked(pods, now, related)[:count]


def ranked(pods: list[Obj], now: dt.datetime, related: list[Obj] | None = None) -> list[Obj]:
    """``pods`` in deletion order."""
    per_node = Counter(
        (p.get("spec") or {}).get("nodeName") or ""
        for p in (pods if related is None else related)
        if is_pod_active(p)
    )

    def compare(first: Obj, second: Obj) -> int:
        if _less(first, second, per_node, now):
            return -1
        if _less(second, first, per_node, now):
            return 1
        return 0

    return sorted(pods, key=functools.cmp_to_key(compare))


def _less(first: Obj, second: Obj, per_node: Counter[str], now: dt.datetime) -> bool:
    """Whether ``first`` goes before ``second`` (upstream's ``Less``)."""
    node_a, node_b = _node(first), _node(second)
    if node_a != node_b and (not node_a or not node_b):
        return not node_a
    phase_a, phase_b = _phase(first), _phase(second)
    if phase_a != phase_b:
        return phase_a < phase_b
    if is_pod_ready(first) != is_pod_ready(second):
        return not is_pod_ready(first)
    cost_a, cost_b = _deletion_cost(first), _deletion_cost(second)
    if cost_a != cost_b:
        return cost_a < cost_b
    if per_node[node_a] != per_node[node_b]:
        return per_node[node_a] > per_node[node_b]
    if is_pod_ready(first) and is_pod_ready(second):
        verdict = _younger(_ready_time(first), _ready_time(second), first, second, now)
        if verdict is not None:
            return verdict
    restarts_a, restarts_b = _restarts(first), _restarts(second)
    if restarts_a != restarts_b:
        return restarts_a > restarts_b
    verdict = _younger(_created(first), _created(second), first, second, now)
    return bool(verdict)


def _younger(
    time_a: dt.datetime | None,
    time_b: dt.datetime | None,
    first: Obj,
    second: Obj,
    now: dt.datetime,
) -> bool | None:
    """Whether the first time is more recent, by powers of two of age (None: the same)."""
    if time_a == time_b:
        return None
    if time_a is None or time_b is None:
        return time_a is None
    difference = _age_rank(time_a, now) - _age_rank(time_b, now)
    if difference == 0:
        return str(first["metadata"].get("uid", "")) < str(second["metadata"].get("uid", ""))
    return difference < 0


def _age_rank(time: dt.datetime, now: dt.datetime) -> int:
    nanoseconds = (now - time) / dt.timedelta(microseconds=1) * 1000
    return int(math.log2(nanoseconds)) if nanoseconds > 0 else -1


def _ready_time(pod: Obj) -> dt.datetime | None:
    """When a ready pod became ready; None when its condition has no time."""
    since = ready_since(pod)
    return None if since is None or since.year == 1 else since


def _node(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _phase(pod: Obj) -> int:
    return PHASE_ORDER.get((pod.get("status") or {}).get("phase") or "", 0)


def _restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return max((int(c.get("restartCount") or 0) for c in statuses), default=0)


def _created(pod: Obj) -> dt.datetime | None:
    stamp = pod["metadata"].get("creationTimestamp")
    return dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) if stamp else None


def _deletion_cost(pod: Obj) -> int:
    try:
        return int((pod["metadata"].get("annotations") or {}).get(DELETION_COST, 0))
    except ValueError:
        return 0
