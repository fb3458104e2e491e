"""Upstream's ``podutil`` questions about a pod, asked of its wire form: is it ready, is it
active. The workload controllers (``allot.controllers``) and the eviction's disruption
budgets (``allot.registry.disruption``) ask them the same way. Pure."""

from __future__ import annotations

from allot.types import Obj


def is_pod_active(pod: Obj) -> bool:
    """Neither finished nor being deleted (upstream's ``IsPodActive``)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def is_pod_ready(pod: Obj) -> bool:
    """The pod's ``Ready`` condition is ``True``."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False
