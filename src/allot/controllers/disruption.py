"""The disruption controller: keeps every PodDisruptionBudget's ``status`` current.

As kube-controller-manager 1.36's ``disruption`` controller (``pkg/controller/disruption``):
a budget is synced when it changes and when a pod of its namespace that it selects (now or
before the change) does. The figures come from :func:`allot.registry.disruption.
budget_status`, the same the eviction subresource works out: ``expectedPods``,
``desiredHealthy``, ``currentHealthy``, ``disruptionsAllowed`` (0 unless pods are expected
and more are healthy than desired), ``observedGeneration`` and the ``DisruptionAllowed``
condition (``SufficientPods`` / ``InsufficientPods``). The status is written only when a
figure changed. When the expected count cannot be worked out (a selected pod's controller
has no replicas, or is gone) the controller fails safe as upstream's does: no disruption
allowed, the condition ``False`` with reason ``SyncFailed`` and the error as message, the
other figures kept. Its Events are upstream's: ``NoPods``, ``UnmanagedPods``,
``CalculateExpectedPodCountFailed``. It runs in the host and in every tenant cluster, as
each tenant's own kube-controller-manager would. Built by :mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.api.meta import selector_matches
from allot.controllers.workloads import ClusterContexts, WorkloadKey, event_key
from allot.registry import disruption
from allot.store import WatchEvent
from allot.types import Obj, rfc3339

BUDGETS = "poddisruptionbudgets.policy"
MANAGER = "disruption-controller"
CONDITION = "DisruptionAllowed"
UNMANAGED_MESSAGE = (
    "Pods selected by this PodDisruptionBudget (selector: {selector}) were found to be "
    "unmanaged. As a result, the status of the PDB cannot be calculated correctly, which "
    'may result in undefined behavior. To account for these pods please set ".spec.'
    'minAvailable" field of the PDB to an integer value.'
)


class DisruptionController:
    name = "disruption"
    watches = frozenset({BUDGETS, "pods"})  # the resources keys_for answers for

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        if event.resource == BUDGETS:
            return [] if event.type == "DELETED" else [event_key(event)]
        namespace = event.object["metadata"].get("namespace") or ""
        budgets = self.contexts(event.cluster).scan_namespace("PodDisruptionBudget", namespace)
        if not budgets:
            return []
        label_sets = [event.object["metadata"].get("labels")]
        if event.previous is not None:  # a pod that left a budget's selector counts there too
            label_sets.append(event.previous["metadata"].get("labels"))
        return [
            WorkloadKey(event.cluster, namespace, budget["metadata"]["name"])
            for budget in budgets
            if any(
                selector_matches((budget.get("spec") or {}).get("selector"), labels)
                for labels in label_sets
            )
        ]

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("PodDisruptionBudget")

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, "PodDisruptionBudget")
        if found is None:
            return
        context, budget = found
        pods = context.scan_namespace("Pod", key.namespace)

        def find(kind: str, name: str) -> Obj | None:
            return context.peek(kind, key.namespace, name)

        if not disruption.pods_of(budget, pods):
            context.event(budget, "Normal", "NoPods", "No matching pods found", MANAGER)
        figures = disruption.budget_status(budget, pods, find)
        if figures.failure is not None:
            context.event(
                budget,
                "Warning",
                "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {figures.failure}",
                MANAGER,
            )
        elif figures.unmanaged:
            selector = go_label_selector((budget.get("spec") or {}).get("selector"))
            message = UNMANAGED_MESSAGE.format(selector=selector)
            context.event(budget, "Warning", "UnmanagedPods", message, MANAGER)
        status = budget_status(budget, figures, rfc3339(context.clock()))
        if status != budget.get("status"):
            budget["status"] = status
            context.write_status("PodDisruptionBudget", budget, MANAGER)


def budget_status(budget: Obj, figures: disruption.Budget, now: str) -> Obj:
    """The status the controller writes for ``budget`` (``updatePdbStatus``, or
    ``failSafe`` when the figures could not be worked out)."""
    current: Obj = dict(budget.get("status") or {})
    if figures.failure is not None:
        status = {**current, "disruptionsAllowed": 0}
        condition = _condition("False", "SyncFailed", figures.failure)
        generation = current.get("observedGeneration")
    else:
        generation = budget["metadata"].get("generation")
        status = {
            "currentHealthy": figures.healthy,
            "desiredHealthy": figures.desired,
            "disruptionsAllowed": figures.allowed,
            "expectedPods": figures.expected,
        }
        if generation is not None:
            status["observedGeneration"] = generation
        allowed = figures.allowed > 0
        reason = "SufficientPods" if allowed else "InsufficientPods"
        condition = _condition("True" if allowed else "False", reason, "")
    if generation is not None:
        condition["observedGeneration"] = generation
    status["conditions"] = _with_condition(current.get("conditions") or [], condition, now)
    return status


def _condition(status: str, reason: str, message: str) -> Obj:
    return {"type": CONDITION, "status": status, "reason": reason, "message": message}


def _with_condition(conditions: list[Obj], condition: Obj, now: str) -> list[Obj]:
    """``meta.SetStatusCondition``: the condition replaces the one of its type, keeping its
    transition time unless the status changed."""
    kept = [c for c in conditions if c.get("type") != condition["type"]]
    previous = next((c for c in conditions if c.get("type") == condition["type"]), None)
    same = previous is not None and previous.get("status") == condition["status"]
    stamp = previous.get("lastTransitionTime") if same and previous else None
    return [*kept, {**condition, "lastTransitionTime": stamp or now}]


def go_label_selector(selector: Obj | None) -> str:
    """A label selector as Go's ``%v`` prints a ``*metav1.LabelSelector`` (what the
    ``UnmanagedPods`` Event shows), e.g. ``&LabelSelector{MatchLabels:map[string]string{app:
    web,},MatchExpressions:[]LabelSelectorRequirement{},}``."""
    if selector is None:
        return "nil"
    labels = "".join(f"{k}: {v}," for k, v in sorted((selector.get("matchLabels") or {}).items()))
    expressions = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or []
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
