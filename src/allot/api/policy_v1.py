"""``policy/v1`` PodDisruptionBudget, with every field Kubernetes 1.36 defines.

Stored and served in every cluster (short name ``pdb``); the eviction subresource
(:mod:`allot.registry.disruption`) refuses an eviction that would break a budget. No
disruption controller writes its ``status`` (the conformance ledger says so). Served by
:mod:`allot.registry.kinds.poddisruptionbudgets`, validated by
:mod:`allot.validation.policy`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel, SortedMap, Time
from allot.api.core_v1 import IntOrString
from allot.api.meta import Condition, LabelSelector, ObjectMeta

UNHEALTHY_POD_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]


class PodDisruptionBudgetSpec(ApiModel):
    min_available: IntOrString | None = None
    selector: LabelSelector | None = None
    max_unavailable: IntOrString | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(ApiModel):
    observed_generation: int | None = None
    disrupted_pods: SortedMap[Time] | None = None
    disruptions_allowed: int | None = None
    current_healthy: int | None = None
    desired_healthy: int | None = None
    expected_pods: int | None = None
    conditions: list[Condition] | None = None


class PodDisruptionBudget(ApiModel):
    api_version: Literal["policy/v1"] = "policy/v1"
    kind: Literal["PodDisruptionBudget"] = "PodDisruptionBudget"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus | None = None
