"""Whether a pod fits a node by the node's own facts: ``nodeName``, ``nodeSelector`` and
required node affinity, taints against tolerations, and the unschedulable mark.

kube-scheduler's node-level filter plugins (NodeUnschedulable, TaintToleration,
NodeAffinity) and the daemon set controller's simulation of them
(``NodeShouldRunDaemonPod``) ask the same questions; both use this module: the scheduler
(:mod:`allot.controllers.scheduler`) for a pod's reason per node, the daemon set controller
(:mod:`allot.controllers.daemonset`) for where its pods should run and keep running.
"""

from __future__ import annotations

from allot.allocator.nodes import node_selector_matches
from allot.api import core_v1 as corev1
from allot.types import Obj

BLOCKING = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = corev1.Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
"""The taint a cordoned node counts as (upstream's NodeUnschedulable plugin asks whether a
pod tolerates it)."""
UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
"""TaintToleration's reason in 1.36 (the taint itself is only in kube-scheduler's log)."""


class NodeFilter:
    """A pod's node-level checks, parsed once and then applied to each node in turn, in
    kube-scheduler's plugin order (the first failing check names the node's reason)."""

    def __init__(self, pod: Obj) -> None:
        spec = pod.get("spec") or {}
        self.tolerations = [
            corev1.Toleration.model_validate(t) for t in spec.get("tolerations") or []
        ]
        self.selector: dict[str, str] = spec.get("nodeSelector") or {}
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        self.required = corev1.NodeSelector.model_validate(required) if required else None
        self.plain = not (self.tolerations or self.selector or self.required)

    def problem(self, node: corev1.Node) -> str | None:
        if node.spec.unschedulable and not self.tolerates(UNSCHEDULABLE_TAINT):
            return "node(s) were unschedulable"
        if self.untolerated(node, BLOCKING) is not None:
            return UNTOLERATED_TAINT
        if not self.matches_affinity(node):
            return "node(s) didn't match Pod's node affinity/selector"
        return None

    def matches_affinity(self, node: corev1.Node) -> bool:
        """``nodeSelector`` and required node affinity (``GetRequiredNodeAffinity``)."""
        labels = node.metadata.labels or {}
        if any(labels.get(k) != v for k, v in self.selector.items()):
            return False
        return self.required is None or node_selector_matches(self.required, node)

    def untolerated(self, node: corev1.Node, effects: tuple[str, ...]) -> corev1.Taint | None:
        """The node's first taint of one of ``effects`` the pod does not tolerate."""
        for taint in node.spec.taints or []:
            if taint.effect in effects and not self.tolerates(taint):
                return taint
        return None

    def tolerates(self, taint: corev1.Taint) -> bool:
        return any(_tolerates(t, taint) for t in self.tolerations)


def _tolerates(toleration: corev1.Toleration, taint: corev1.Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    return toleration.key == taint.key and (toleration.value or "") == (taint.value or "")
