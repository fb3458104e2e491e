"""scheduling.k8s.io/v1 PriorityClass defaulting and validation, as upstream's
``SetDefaults_PriorityClass`` and ``pkg/apis/scheduling/validation``: reserved ``system-``
names, the highest user-definable value, the preemption policy, and what an update may not
change, with upstream's texts. Called through :mod:`allot.registry.kinds.priorityclasses`;
the one-default rule needs the cluster's classes and is the Priority admission plugin's
(:mod:`allot.registry.priority`)."""

from __future__ import annotations

from allot.api import scheduling_v1 as scheduling
from allot.validation.field import ErrorList, Path, forbidden, not_supported
from allot.validation.workloads import immutable


def default_priority_class(obj: scheduling.PriorityClass) -> None:
    """``preemptionPolicy`` defaults to ``PreemptLowerPriority``; ``value`` is written
    even when 0 (a Go int32 without ``omitempty``)."""
    if obj.preemption_policy is None:
        obj.preemption_policy = "PreemptLowerPriority"
    if obj.value is None:
        obj.value = 0


def _system_class_error(name: str, value: int, global_default: bool) -> str | None:
    """``IsKnownSystemPriorityClass``: why a ``system-`` class is not a known one."""
    known = scheduling.SYSTEM_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known[0]:
        return f"value of {name} PriorityClass must be {known[0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def validate_priority_class(obj: scheduling.PriorityClass) -> ErrorList:
    name, value = obj.metadata.name or "", obj.value or 0
    errors: ErrorList = []
    if name.startswith(scheduling.SYSTEM_PREFIX):
        problem = _system_class_error(name, value, bool(obj.global_default))
        if problem is not None:
            errors.append(
                forbidden(
                    Path("metadata").child("name"),
                    f"priority class names with '{scheduling.SYSTEM_PREFIX}' prefix are "
                    f"reserved for system use only. error: {problem}",
                )
            )
    elif value > scheduling.HIGHEST_USER_DEFINABLE_PRIORITY:
        errors.append(
            forbidden(
                Path("value"),
                "maximum allowed value of a user defined priority is "
                f"{scheduling.HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    policy = obj.preemption_policy
    if policy is not None and policy not in scheduling.PREEMPTION_POLICIES:
        errors.append(
            not_supported(Path("preemptionPolicy"), policy, scheduling.PREEMPTION_POLICIES)
        )
    return errors


def validate_priority_class_update(
    new: scheduling.PriorityClass, old: scheduling.PriorityClass
) -> ErrorList:
    """``value`` and ``preemptionPolicy`` are immutable."""
    errors: ErrorList = []
    if (new.value or 0) != (old.value or 0):
        errors.append(forbidden(Path("value"), "may not be changed in an update."))
    return errors + immutable(
        new.preemption_policy, old.preemption_policy, Path("preemptionPolicy")
    )
