"""policy/v1 PodDisruptionBudget validation, as upstream's ``pkg/apis/policy/validation``:
``minAvailable``/``maxUnavailable`` (not both; a non-negative number or a percentage up to
100%), the label selector, the unhealthy pod eviction policy, and the status counts on
``/status`` writes, with upstream's texts and paths. Called through
:mod:`allot.registry.kinds.poddisruptionbudgets`."""

from __future__ import annotations

from allot.api import policy_v1 as policy
from allot.validation.field import ErrorList, Path, invalid, not_supported
from allot.validation.workloads import (
    nonnegative,
    not_over_100_percent,
    validate_int_or_percent,
    validate_label_selector,
)

SPEC = Path("spec")
STATUS_COUNTS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def validate_pod_disruption_budget(obj: policy.PodDisruptionBudget) -> ErrorList:
    spec = obj.spec
    errors: ErrorList = []
    if spec.min_available is not None and spec.max_unavailable is not None:
        errors.append(
            invalid(SPEC, spec.to_wire(), "minAvailable and maxUnavailable cannot be both set")
        )
    for name, value in (
        ("minAvailable", spec.min_available),
        ("maxUnavailable", spec.max_unavailable),
    ):
        if value is not None:
            errors += validate_int_or_percent(value, SPEC.child(name))
            errors += not_over_100_percent(value, SPEC.child(name))
    if spec.selector is not None:
        errors += validate_label_selector(spec.selector, SPEC.child("selector"))
    policy_name = spec.unhealthy_pod_eviction_policy
    if policy_name is not None and policy_name not in policy.UNHEALTHY_POD_EVICTION_POLICIES:
        errors.append(
            not_supported(
                SPEC.child("unhealthyPodEvictionPolicy"),
                policy_name,
                policy.UNHEALTHY_POD_EVICTION_POLICIES,
            )
        )
    return errors


def validate_pod_disruption_budget_status(
    new: policy.PodDisruptionBudget, old: policy.PodDisruptionBudget
) -> ErrorList:
    """``ValidatePodDisruptionBudgetStatusUpdate`` (policy/v1): the counts are not negative."""
    wire = (new.status or policy.PodDisruptionBudgetStatus()).to_wire()
    errors: ErrorList = []
    for name in STATUS_COUNTS:
        errors += nonnegative(wire.get(name), Path("status").child(name))
    return errors
