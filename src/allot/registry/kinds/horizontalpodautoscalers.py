"""HorizontalPodAutoscaler (autoscaling/v2): serving details (short name ``hpa``, category
``all``, ``/status``), the status a new autoscaler starts with, defaulting, validation and
``kubectl get hpa`` columns (NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE, the
targets as upstream's ``formatHPAMetrics`` writes them). No controller acts on them."""

from __future__ import annotations

from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import autoscaling
from allot.validation.objects import KindRules

UNKNOWN = "<unknown>"
SHOWN_METRICS = 2


def _empty_status(obj: Obj) -> None:
    """``PrepareForCreate`` resets the status; Go writes its ``desiredReplicas`` as 0."""
    obj["status"] = {"desiredReplicas": 0}


def _status_of(statuses: list[Obj], index: int, source: str) -> Obj | None:
    """The metric's status from the same position, if it has this source."""
    return statuses[index].get(source) if index < len(statuses) else None


def _quantity(current: Obj, name: str) -> str:
    """A status quantity as Go prints a nil ``*Quantity`` when it is missing."""
    value = current.get(name)
    return "<nil>" if value is None else str(value)


def _object_or_external(spec: Obj, status: Obj | None) -> str:
    target, current = spec.get("target") or {}, (status or {}).get("current") or {}
    if target.get("averageValue") is not None:
        now = UNKNOWN if status is None else _quantity(current, "averageValue")
        return f"{now}/{target['averageValue']} (avg)"
    now = UNKNOWN if status is None else _quantity(current, "value")
    return f"{now}/{target.get('value', '<nil>')}"


def _resource(spec: Obj, status: Obj | None) -> str:
    target, current = spec.get("target") or {}, (status or {}).get("current") or {}
    name = spec.get("name") or ""
    if target.get("averageValue") is not None:
        now = UNKNOWN if status is None else _quantity(current, "averageValue")
        return f"{name}: {now}/{target['averageValue']}"
    used = current.get("averageUtilization")
    now = UNKNOWN if status is None or used is None else f"{used}%"
    goal = target.get("averageUtilization")
    return f"{name}: {now}/{'<auto>' if goal is None else f'{goal}%'}"


def _metric(spec: Obj, statuses: list[Obj], index: int) -> str:
    kind = spec.get("type")
    source = {
        "External": "external",
        "Object": "object",
        "Pods": "pods",
        "Resource": "resource",
        "ContainerResource": "containerResource",
    }.get(str(kind))
    if source is None:
        return "<unknown type>"
    status = _status_of(statuses, index, source)
    if source == "pods":
        now = UNKNOWN if status is None else _quantity(status.get("current") or {}, "averageValue")
        target = ((spec.get("pods") or {}).get("target") or {}).get("averageValue", "<nil>")
        return f"{now}/{target}"
    if source in ("external", "object"):
        return _object_or_external(spec.get(source) or {}, status)
    return _resource(spec.get(source) or {}, status)


def targets(obj: Obj) -> str:
    """``formatHPAMetrics``: the first two metrics, ``<none>`` without any."""
    specs = (obj.get("spec") or {}).get("metrics") or []
    if not specs:
        return "<none>"
    statuses = (obj.get("status") or {}).get("currentMetrics") or []
    shown = [_metric(spec, statuses, index) for index, spec in enumerate(specs)]
    text = ", ".join(shown[:SHOWN_METRICS])
    if len(shown) > SHOWN_METRICS:
        return f"{text} + {len(shown) - SHOWN_METRICS} more..."
    return text


def _cells(obj: Obj, now: Any) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    minimum = spec.get("minReplicas")
    return [
        obj["metadata"]["name"],
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        targets(obj),
        "<unset>" if minimum is None else str(minimum),
        spec.get("maxReplicas") or 0,
        status.get("currentReplicas") or 0,
        age(obj, now),
    ]


STRATEGIES = (
    KindStrategy(
        "HorizontalPodAutoscaler",
        "horizontalpodautoscaler",
        short_names=("hpa",),
        categories=("all",),
        subresources=("status",),
        rules=KindRules(
            defaults=autoscaling.default_horizontal_pod_autoscaler,
            validate=lambda obj, context: autoscaling.validate_horizontal_pod_autoscaler(obj),
            validate_status=lambda new, old, context: (
                autoscaling.validate_horizontal_pod_autoscaler_status(new, old)
            ),
        ),
        initial_status=_empty_status,
        table=Table(
            [
                NAME,
                column(
                    "Reference",
                    "scaleTargetRef points to the target resource to scale, and is used to "
                    "the pods for which metrics should be collected, as well as to actually "
                    "change the replica count.",
                ),
                column(
                    "Targets",
                    "metrics contains the specifications for which to use to calculate the "
                    "desired replica count (the maximum replica count across all metrics "
                    "will be used).",
                ),
                column("MinPods", "minReplicas is the lower limit for the number of replicas."),
                column("MaxPods", "maxReplicas is the upper limit for the number of replicas."),
                column(
                    "Replicas",
                    "currentReplicas is current number of replicas of pods managed by this "
                    "autoscaler, as last seen by the autoscaler.",
                ),
                AGE,
            ],
            _cells,
        ),
    ),
)
