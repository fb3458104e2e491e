"""``autoscaling/v1`` Scale: the body of the ``scale`` subresource of Deployments,
ReplicaSets and StatefulSets (``kubectl scale`` reads and patches it). Not a stored kind:
:mod:`allot.registry.scale` builds it from the object and writes its ``spec.replicas``
back."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel
from allot.api.kinds import KindInfo
from allot.api.meta import ObjectMeta


class ScaleSpec(ApiModel):
    replicas: int | None = None


class ScaleStatus(ApiModel):
    replicas: int | None = None
    selector: str | None = None


class Scale(ApiModel):
    api_version: Literal["autoscaling/v1"] = "autoscaling/v1"
    kind: Literal["Scale"] = "Scale"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ScaleSpec = Field(default_factory=ScaleSpec)
    status: ScaleStatus | None = None


SCALE_INFO = KindInfo("autoscaling", "v1", "Scale", "scale", True, "subdomain", Scale)
"""For Invalid messages (``Scale.autoscaling "web" is invalid: ...``); not served."""
