"""PodDisruptionBudgets: the figures of a budget's status, and may this pod be evicted now?

kube-controller-manager's disruption controller keeps a budget's ``status`` current; here
:func:`budget_status` works those figures out from the pods, as that controller does, for
both its callers: allot's disruption controller (:mod:`allot.controllers.disruption`),
which writes them, and the eviction subresource (:meth:`allot.registry.handlers.Handlers.
evict`), which works them out at the time of the request instead of reading the status.
The figures: the pods the budget selects, the expected count (the pods themselves for a
number ``minAvailable``; otherwise the sum of their controllers' ``spec.replicas``: a
ReplicaSet, the Deployment of a ReplicaSet, a StatefulSet; pods no controller reference
names are left out of it, as upstream leaves "unmanaged" pods out since 1.22), the desired
healthy count (``minAvailable``, or expected minus ``maxUnavailable``, percentages rounded
up) and the healthy pods (Ready and not being deleted). A pod being deleted no longer
counts, so evictions one after the other see each other, as the ``disruptedPods`` map
makes them upstream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from allot.api.meta import StatusCause, StatusDetails, selector_matches
from allot.api.pods import is_pod_ready
from allot.registry.errors import InternalError, TooManyRequests
from allot.types import Obj
from allot.validation.workloads import int_or_percent

VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
Find = Callable[[str, str], Obj | None]
"""A kind and a name -> that object in the pod's namespace (ReplicaSet, Deployment,
StatefulSet), or None."""


@dataclass(frozen=True)
class Budget:
    """What the disruption controller would write in a budget's status; ``failure`` says
    why the expected count could not be worked out (then no disruption is allowed)."""

    name: str
    expected: int
    desired: int
    healthy: int
    failure: str | None = None
    unmanaged: tuple[str, ...] = ()  # selected pods no controller reference names

    @property
    def allowed(self) -> int:
        if self.failure is not None or self.expected <= 0:
            return 0
        return max(self.healthy - self.desired, 0)


def budgets_of(pod: Obj, budgets: list[Obj]) -> list[Obj]:
    """The budgets whose selector selects the pod (a missing selector selects nothing)."""
    labels = pod["metadata"].get("labels") or {}
    return [b for b in budgets if selector_matches((b.get("spec") or {}).get("selector"), labels)]


def may_ignore_budgets(pod: Obj) -> bool:
    """``canIgnorePDB``: a pod that is not running or is already being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(
        pod["metadata"].get("deletionTimestamp")
    )


def budget_status(budget: Obj, pods: list[Obj], find: Find) -> Budget:
    spec = budget.get("spec") or {}
    selected = pods_of(budget, pods)
    healthy = sum(
        1 for p in selected if not p["metadata"].get("deletionTimestamp") and is_pod_ready(p)
    )
    name = budget["metadata"]["name"]
    minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
    if maximum is None and (minimum is None or isinstance(minimum, int)):
        return Budget(name, len(selected), minimum or 0, healthy)
    expected, unmanaged, failure = expected_scale(selected, find)
    if failure is not None:
        return Budget(name, 0, 0, healthy, failure, unmanaged)
    if maximum is not None:
        desired = max(expected - int_or_percent(maximum, expected, round_up=True), 0)
    else:
        desired = int_or_percent(minimum, expected, round_up=True)
    return Budget(name, expected, desired, healthy, None, unmanaged)


def pods_of(budget: Obj, pods: list[Obj]) -> list[Obj]:
    selector = (budget.get("spec") or {}).get("selector")
    return [p for p in pods if selector_matches(selector, p["metadata"].get("labels"))]


def expected_scale(pods: list[Obj], find: Find) -> tuple[int, tuple[str, ...], str | None]:
    """``getExpectedScale``: the replicas of the pods' controllers, each counted once; the
    names of the pods without a controller reference (left out); why it cannot be worked
    out (a pod's controller is of a kind without replicas, or gone), or None."""
    scales: dict[str, int] = {}
    unmanaged: list[str] = []
    for pod in pods:
        ref = _controller_of(pod)
        if ref is None:
            unmanaged.append(pod["metadata"]["name"])
            continue
        if ref.get("uid") in scales:
            continue
        found = _controller_scale(ref, find)
        if found is None:
            return 0, tuple(unmanaged), f'found no controllers for pod "{pod["metadata"]["name"]}"'
        uid, replicas = found
        scales[uid] = replicas  # a Deployment's ReplicaSets all lead to its uid: once
    return sum(scales.values()), tuple(unmanaged), None


def _controller_of(obj: Obj) -> dict[str, Any] | None:
    refs = obj["metadata"].get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


def _controller_scale(ref: dict[str, Any], find: Find) -> tuple[str, int] | None:
    """The uid and ``spec.replicas`` of the workload a pod's controller reference leads to:
    a StatefulSet, a ReplicaSet, or the Deployment that controls the ReplicaSet."""
    kind, group = ref.get("kind"), str(ref.get("apiVersion", "")).partition("/")[0]
    if kind not in ("ReplicaSet", "StatefulSet") or group not in ("apps", "extensions"):
        return None
    owner = find(kind, ref.get("name") or "")
    if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
        return None
    above = _controller_of(owner) if kind == "ReplicaSet" else None
    if above is not None and above.get("kind") == "Deployment":
        deployment = find("Deployment", above.get("name") or "")
        if deployment is None or deployment["metadata"].get("uid") != above.get("uid"):
            return None
        owner = deployment
    return owner["metadata"]["uid"], int((owner.get("spec") or {}).get("replicas", 1))


def check_eviction(pod: Obj, budgets: list[Obj], pods: list[Obj], find: Find) -> None:
    """Raise what upstream's eviction answers when the pod may not be evicted now."""
    if may_ignore_budgets(pod):
        return
    matching = budgets_of(pod, budgets)
    if len(matching) > 1:
        raise InternalError(
            "Internal error occurred: This pod has more than one PodDisruptionBudget, which "
            "the eviction subresource does not support."
        )
    if not matching:
        return
    budget_obj = matching[0]
    budget = budget_status(budget_obj, pods, find)
    if not is_pod_ready(pod):
        policy = (budget_obj.get("spec") or {}).get("unhealthyPodEvictionPolicy")
        if policy == "AlwaysAllow" or budget.healthy >= budget.desired > 0:
            return
    if budget.allowed == 0:
        raise _violation(budget)


def _violation(budget: Budget) -> TooManyRequests:
    if budget.failure is not None:
        message = f"The disruption budget {budget.name} cannot be computed: {budget.failure}"
    else:
        message = (
            f"The disruption budget {budget.name} needs {budget.desired} healthy pods and "
            f"has {budget.healthy} currently"
        )
    error = TooManyRequests(VIOLATION)
    error.details = StatusDetails(
        causes=[StatusCause(reason=DISRUPTION_BUDGET_CAUSE, message=message)]
    )
    return error
