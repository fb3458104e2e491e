"""Which objects a scoped ResourceQuota covers (``spec.scopes``, ``spec.scopeSelector``).

Upstream's ``generic.Matches`` with the pod evaluator's ``podMatchesScopeFunc``: a quota
with scopes covers an object only when the object matches every scope; only pods have
scopes (``Terminating``, ``NotTerminating``, ``BestEffort``, ``NotBestEffort``,
``PriorityClass``, ``CrossNamespacePodAffinity``), so a scoped quota covers no other kind.
:mod:`allot.registry.quota` asks it, in admission and for ``status.used``.
"""

from __future__ import annotations

from allot.api.podresources import qos_class
from allot.types import Obj

PRIORITY_CLASS = "PriorityClass"


def scope_selectors(quota: Obj) -> list[Obj]:
    """``getScopeSelectorsFromQuota``: each of ``spec.scopes`` as an ``Exists`` selector,
    then ``spec.scopeSelector.matchExpressions``."""
    spec = quota.get("spec") or {}
    selectors = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    return selectors + list((spec.get("scopeSelector") or {}).get("matchExpressions") or [])


def covers(quota: Obj, is_pod: bool, obj: Obj) -> bool:
    """Whether ``quota`` covers ``obj`` (a pod or not) by its scopes."""
    selectors = scope_selectors(quota)
    if not selectors:
        return True
    return is_pod and all(pod_matches(selector, obj) for selector in selectors)


def pod_matches(selector: Obj, pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    match selector.get("scopeName"):
        case "Terminating":
            return is_terminating(spec)
        case "NotTerminating":
            return not is_terminating(spec)
        case "BestEffort":
            return is_best_effort(spec)
        case "NotBestEffort":
            return not is_best_effort(spec)
        case "PriorityClass":
            return _priority_class_matches(selector, spec.get("priorityClassName") or "")
        case "CrossNamespacePodAffinity":
            return uses_cross_namespace_affinity(spec)
    return False


def is_terminating(spec: Obj) -> bool:
    deadline = spec.get("activeDeadlineSeconds")
    return deadline is not None and int(deadline) >= 0


def is_best_effort(spec: Obj) -> bool:
    """The quota's ``BestEffort`` scope: the pod's QoS class (``ComputePodQOS``)."""
    return qos_class(spec) == "BestEffort"


def _priority_class_matches(selector: Obj, name: str) -> bool:
    """A label selector on ``{PriorityClass: <name>}`` (no label without a name)."""
    operator, values = selector.get("operator"), selector.get("values") or []
    if operator == "Exists":
        return bool(name)
    if operator == "DoesNotExist":
        return not name
    if operator == "In":
        return bool(name) and name in values
    if operator == "NotIn":
        return not name or name not in values
    return False


def uses_cross_namespace_affinity(spec: Obj) -> bool:
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = affinity.get(kind) or {}
        required = terms.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        preferred = [
            weighted.get("podAffinityTerm") or {}
            for weighted in terms.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        ]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in required):
            return True
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in preferred):
            return True
    return False
