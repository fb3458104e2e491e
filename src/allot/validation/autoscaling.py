"""autoscaling/v2 HorizontalPodAutoscaler defaulting and validation, as upstream's
``SetDefaults_HorizontalPodAutoscaler`` and ``pkg/apis/autoscaling/validation``: replica
bounds, the scale target reference, each metric's source and target, scaling behaviour,
and the status counts on ``/status`` writes, with upstream's texts and paths (feature
gates at their 1.36 defaults: HPAScaleToZero off, HPAContainerMetrics on). Called
through :mod:`allot.registry.kinds.horizontalpodautoscalers`."""

from __future__ import annotations

from allot.api import autoscaling_v2 as hpa
from allot.validation import names
from allot.validation.field import (
    ErrorList,
    Path,
    forbidden,
    invalid,
    not_supported,
    required,
)
from allot.validation.meta import validate_kind_and_name
from allot.validation.workloads import nonnegative

SPEC = Path("spec")
MAX_STABILIZATION_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800
TARGET_TYPES = ("Utilization", "Value", "AverageValue")
MIN_REPLICAS_LOWER_BOUND = 1  # 0 only with the alpha gate HPAScaleToZero


# -------------------------------------------------------------------------- defaulting
def _scale_up_rules() -> hpa.HPAScalingRules:
    return hpa.HPAScalingRules(
        stabilization_window_seconds=0,
        select_policy="Max",
        policies=[
            hpa.HPAScalingPolicy(type="Pods", value=4, period_seconds=15),
            hpa.HPAScalingPolicy(type="Percent", value=100, period_seconds=15),
        ],
    )


def _scale_down_rules() -> hpa.HPAScalingRules:
    """No stabilization window: the controller's command-line default applies."""
    return hpa.HPAScalingRules(
        select_policy="Max",
        policies=[hpa.HPAScalingPolicy(type="Percent", value=100, period_seconds=15)],
    )


def _filled(given: hpa.HPAScalingRules | None, rules: hpa.HPAScalingRules) -> hpa.HPAScalingRules:
    """``copyHPAScalingRules``: what was given wins, field by field."""
    if given is None:
        return rules
    for name in ("select_policy", "stabilization_window_seconds", "policies", "tolerance"):
        value = getattr(given, name)
        if value is not None:
            setattr(rules, name, value)
    return rules


def default_horizontal_pod_autoscaler(obj: hpa.HorizontalPodAutoscaler) -> None:
    """One replica at least; 80% average CPU when no metric is given; a behaviour that is
    given gets every unset rule of upstream's scale-up and scale-down defaults."""
    spec = obj.spec
    if spec.min_replicas is None:
        spec.min_replicas = 1
    if not spec.metrics:
        target = hpa.MetricTarget(
            type="Utilization", average_utilization=hpa.DEFAULT_CPU_UTILIZATION
        )
        spec.metrics = [
            hpa.MetricSpec(
                type="Resource", resource=hpa.ResourceMetricSource(name="cpu", target=target)
            )
        ]
    if spec.behavior is not None:
        spec.behavior.scale_up = _filled(spec.behavior.scale_up, _scale_up_rules())
        spec.behavior.scale_down = _filled(spec.behavior.scale_down, _scale_down_rules())


# -------------------------------------------------------------------------- validation
def validate_horizontal_pod_autoscaler(obj: hpa.HorizontalPodAutoscaler) -> ErrorList:
    spec = obj.spec
    errors: ErrorList = []
    minimum, maximum = spec.min_replicas, spec.max_replicas or 0
    if minimum is not None and minimum < MIN_REPLICAS_LOWER_BOUND:
        errors.append(
            invalid(
                SPEC.child("minReplicas"),
                minimum,
                f"must be greater than or equal to {MIN_REPLICAS_LOWER_BOUND}",
            )
        )
    if maximum < 1:
        errors.append(invalid(SPEC.child("maxReplicas"), maximum, "must be greater than 0"))
    if minimum is not None and maximum < minimum:
        errors.append(
            invalid(
                SPEC.child("maxReplicas"), maximum, "must be greater than or equal to `minReplicas`"
            )
        )
    errors += validate_reference(
        spec.scale_target_ref or hpa.CrossVersionObjectReference(), SPEC.child("scaleTargetRef")
    )
    for index, metric in enumerate(spec.metrics or []):
        errors += _validate_metric(metric, SPEC.child("metrics").index(index))
    if spec.behavior is not None:
        for name, rules in (
            ("scaleUp", spec.behavior.scale_up),
            ("scaleDown", spec.behavior.scale_down),
        ):
            if rules is not None:
                errors += _validate_rules(rules, SPEC.child("behavior", name))
    return errors


def validate_reference(ref: hpa.CrossVersionObjectReference, path: Path) -> ErrorList:
    """``ValidateCrossVersionObjectReference``."""
    return validate_kind_and_name(ref.kind, ref.name, path)


_SOURCES = (
    ("object", "Object"),
    ("external", "External"),
    ("pods", "Pods"),
    ("resource", "Resource"),
    ("containerResource", "ContainerResource"),
)


def _validate_metric(metric: hpa.MetricSpec, path: Path) -> ErrorList:
    errors: ErrorList = []
    if not metric.type:
        errors.append(required(path.child("type"), "must specify a metric source type"))
    if metric.type not in hpa.METRIC_SOURCE_TYPES:
        errors.append(not_supported(path.child("type"), metric.type or "", hpa.METRIC_SOURCE_TYPES))
    wire = metric.to_wire()
    present = [name for name, _ in _SOURCES if name in wire]
    if present:
        errors += _validate_source(metric, present[0], path.child(present[0]))
    expected = next((name for name, kind in _SOURCES if kind == metric.type), None)
    if expected is None:
        errors.append(not_supported(path.child("type"), metric.type or "", hpa.METRIC_SOURCE_TYPES))
    elif expected not in present:
        errors.append(
            required(path.child(expected), "must populate information for the given metric source")
        )
    if len(present) != 1:
        errors += [
            forbidden(path.child(name), "must populate the given metric source only")
            for name in sorted(set(present) - {expected})
        ]
    return errors


def _validate_source(metric: hpa.MetricSpec, name: str, path: Path) -> ErrorList:
    source = getattr(metric, {"containerResource": "container_resource"}.get(name, name))
    target = source.target or hpa.MetricTarget()
    target_path = path.child("target")
    errors: ErrorList = []
    if name == "object":
        errors += validate_reference(
            source.described_object or hpa.CrossVersionObjectReference(),
            path.child("describedObject"),
        )
    if name in ("object", "external", "pods"):
        errors += _validate_identifier(
            source.metric or hpa.MetricIdentifier(), path.child("metric")
        )
    if name in ("resource", "containerResource") and not source.name:
        errors.append(required(path.child("name"), "must specify a resource name"))
    if name == "containerResource":
        if not source.container:
            errors.append(required(path.child("container"), "must specify a container"))
        else:
            errors += [
                invalid(path.child("container"), source.container, m)
                for m in names.is_dns1123_label(source.container)
            ]
    errors += _validate_target(target, target_path)
    return errors + _target_choice(name, target, target_path)


def _target_choice(name: str, target: hpa.MetricTarget, path: Path) -> ErrorList:
    value, average, utilization = target.value, target.average_value, target.average_utilization
    if name == "object" and value is None and average is None:
        return [
            required(path.child("averageValue"), "must set either a target value or averageValue")
        ]
    if name == "external":
        if value is None and average is None:
            return [
                required(
                    path.child("averageValue"),
                    "must set either a target value for metric or a per-pod target",
                )
            ]
        if value is not None and average is not None:
            return [
                forbidden(
                    path.child("value"),
                    "may not set both a target value for metric and a per-pod target",
                )
            ]
    if name == "pods" and average is None:
        return [required(path.child("averageValue"), "must specify a positive target averageValue")]
    if name in ("resource", "containerResource"):
        if utilization is None and average is None:
            return [
                required(
                    path.child("averageUtilization"),
                    "must set either a target raw value or a target utilization",
                )
            ]
        if utilization is not None and average is not None:
            return [
                forbidden(
                    path.child("averageValue"),
                    "may not set both a target raw value and a target utilization",
                )
            ]
    return []


def _validate_target(target: hpa.MetricTarget, path: Path) -> ErrorList:
    errors: ErrorList = []
    if not target.type:
        errors.append(required(path.child("type"), "must specify a metric target type"))
    if target.type not in TARGET_TYPES:
        errors.append(
            invalid(
                path.child("type"),
                target.type or "",
                "must be either Utilization, Value, or AverageValue",
            )
        )
    for name, quantity in (("value", target.value), ("averageValue", target.average_value)):
        if quantity is not None and quantity.sign() != 1:
            errors.append(invalid(path.child(name), str(quantity), "must be positive"))
    if target.average_utilization is not None and target.average_utilization < 1:
        errors.append(
            invalid(
                path.child("averageUtilization"),
                target.average_utilization,
                "must be greater than 0",
            )
        )
    return errors


def _validate_identifier(identifier: hpa.MetricIdentifier, path: Path) -> ErrorList:
    if not identifier.name:
        return [required(path.child("name"), "must specify a metric name")]
    return [
        invalid(path.child("name"), identifier.name, m)
        for m in names.is_valid_path_segment_name(identifier.name)
    ]


def _validate_rules(rules: hpa.HPAScalingRules, path: Path) -> ErrorList:
    errors: ErrorList = []
    window = rules.stabilization_window_seconds
    if window is not None and window < 0:
        errors.append(
            invalid(
                path.child("stabilizationWindowSeconds"),
                window,
                "must be greater than or equal to zero",
            )
        )
    if window is not None and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errors.append(
            invalid(
                path.child("stabilizationWindowSeconds"),
                window,
                f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}",
            )
        )
    if rules.select_policy is not None and rules.select_policy not in hpa.SELECT_POLICIES:
        errors.append(
            not_supported(path.child("selectPolicy"), rules.select_policy, hpa.SELECT_POLICIES)
        )
    if not rules.policies:
        errors.append(required(path.child("policies"), "must specify at least one Policy"))
    for index, policy in enumerate(rules.policies or []):
        errors += _validate_policy(policy, path.child("policies").index(index))
    if rules.tolerance is not None and rules.tolerance.sign() < 0:
        errors.append(
            invalid(
                path.child("tolerance"), str(rules.tolerance), "must be greater than or equal to 0"
            )
        )
    return errors


def _validate_policy(policy: hpa.HPAScalingPolicy, path: Path) -> ErrorList:
    errors: ErrorList = []
    if policy.type not in hpa.SCALING_POLICY_TYPES:
        errors.append(
            not_supported(path.child("type"), policy.type or "", hpa.SCALING_POLICY_TYPES)
        )
    value, period = policy.value or 0, policy.period_seconds or 0
    if value <= 0:
        errors.append(invalid(path.child("value"), value, "must be greater than zero"))
    if period <= 0:
        errors.append(invalid(path.child("periodSeconds"), period, "must be greater than zero"))
    if period > MAX_PERIOD_SECONDS:
        errors.append(
            invalid(
                path.child("periodSeconds"),
                period,
                f"must be less than or equal to {MAX_PERIOD_SECONDS}",
            )
        )
    return errors


def validate_horizontal_pod_autoscaler_status(
    new: hpa.HorizontalPodAutoscaler, old: hpa.HorizontalPodAutoscaler
) -> ErrorList:
    """The replica counts are not negative."""
    status = new.status or hpa.HorizontalPodAutoscalerStatus()
    return nonnegative(status.current_replicas, Path("status").child("currentReplicas")) + (
        nonnegative(status.desired_replicas, Path("status").child("desiredReplicas"))
    )
