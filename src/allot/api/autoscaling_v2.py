"""``autoscaling/v2`` HorizontalPodAutoscaler, with every field Kubernetes 1.36 defines.

Served in every cluster (short name ``hpa``) so that Helm charts and ``kubectl
autoscale`` work; allot runs no horizontal pod autoscaler controller and no metrics
server, so nothing reads them and their status stays as created (the conformance ledger
says so). Served by :mod:`allot.registry.kinds.horizontalpodautoscalers`, defaulted and
validated by :mod:`allot.validation.autoscaling`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel, Time
from allot.api.meta import LabelSelector, ObjectMeta
from allot.api.quantity import Quantity

METRIC_SOURCE_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]
SELECT_POLICIES = ["Disabled", "Max", "Min"]
SCALING_POLICY_TYPES = ["Percent", "Pods"]
DEFAULT_CPU_UTILIZATION = 80


class CrossVersionObjectReference(ApiModel):
    kind: str | None = None
    name: str | None = None
    api_version: str | None = None


class MetricTarget(ApiModel):
    type: str | None = None
    value: Quantity | None = None
    average_value: Quantity | None = None
    average_utilization: int | None = None


class MetricIdentifier(ApiModel):
    name: str | None = None
    selector: LabelSelector | None = None


class ObjectMetricSource(ApiModel):
    described_object: CrossVersionObjectReference | None = None
    target: MetricTarget | None = None
    metric: MetricIdentifier | None = None


class PodsMetricSource(ApiModel):
    metric: MetricIdentifier | None = None
    target: MetricTarget | None = None


class ResourceMetricSource(ApiModel):
    name: str | None = None
    target: MetricTarget | None = None


class ContainerResourceMetricSource(ApiModel):
    name: str | None = None
    target: MetricTarget | None = None
    container: str | None = None


class ExternalMetricSource(ApiModel):
    metric: MetricIdentifier | None = None
    target: MetricTarget | None = None


class MetricSpec(ApiModel):
    type: str | None = None
    object: ObjectMetricSource | None = None
    pods: PodsMetricSource | None = None
    resource: ResourceMetricSource | None = None
    container_resource: ContainerResourceMetricSource | None = None
    external: ExternalMetricSource | None = None


class HPAScalingPolicy(ApiModel):
    type: str | None = None
    value: int | None = None
    period_seconds: int | None = None


class HPAScalingRules(ApiModel):
    stabilization_window_seconds: int | None = None
    select_policy: str | None = None
    policies: list[HPAScalingPolicy] | None = None
    tolerance: Quantity | None = None


class HorizontalPodAutoscalerBehavior(ApiModel):
    scale_up: HPAScalingRules | None = None
    scale_down: HPAScalingRules | None = None


class HorizontalPodAutoscalerSpec(ApiModel):
    scale_target_ref: CrossVersionObjectReference | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    metrics: list[MetricSpec] | None = None
    behavior: HorizontalPodAutoscalerBehavior | None = None


class MetricValueStatus(ApiModel):
    value: Quantity | None = None
    average_value: Quantity | None = None
    average_utilization: int | None = None


class ObjectMetricStatus(ApiModel):
    metric: MetricIdentifier | None = None
    current: MetricValueStatus | None = None
    described_object: CrossVersionObjectReference | None = None


class PodsMetricStatus(ApiModel):
    metric: MetricIdentifier | None = None
    current: MetricValueStatus | None = None


class ResourceMetricStatus(ApiModel):
    name: str | None = None
    current: MetricValueStatus | None = None


class ContainerResourceMetricStatus(ApiModel):
    name: str | None = None
    current: MetricValueStatus | None = None
    container: str | None = None


class ExternalMetricStatus(ApiModel):
    metric: MetricIdentifier | None = None
    current: MetricValueStatus | None = None


class MetricStatus(ApiModel):
    type: str | None = None
    object: ObjectMetricStatus | None = None
    pods: PodsMetricStatus | None = None
    resource: ResourceMetricStatus | None = None
    container_resource: ContainerResourceMetricStatus | None = None
    external: ExternalMetricStatus | None = None


class HorizontalPodAutoscalerCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class HorizontalPodAutoscalerStatus(ApiModel):
    observed_generation: int | None = None
    last_scale_time: Time | None = None
    current_replicas: int | None = None
    desired_replicas: int | None = None
    current_metrics: list[MetricStatus] | None = None
    conditions: list[HorizontalPodAutoscalerCondition] | None = None


class HorizontalPodAutoscaler(ApiModel):
    api_version: Literal["autoscaling/v2"] = "autoscaling/v2"
    kind: Literal["HorizontalPodAutoscaler"] = "HorizontalPodAutoscaler"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: HorizontalPodAutoscalerSpec = Field(default_factory=HorizontalPodAutoscalerSpec)
    status: HorizontalPodAutoscalerStatus | None = None
