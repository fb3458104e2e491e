"""``scheduling.k8s.io/v1`` PriorityClass, with every field Kubernetes 1.36 defines, and
the two system classes every cluster has.

Served in every cluster (short name ``pc``); the Priority admission plugin
(:mod:`allot.registry.priority`) resolves a new pod's ``priorityClassName`` into its
``priority`` and ``preemptionPolicy``. allot's scheduler does not preempt by pod priority
(the conformance ledger says so). Served by :mod:`allot.registry.kinds.priorityclasses`,
defaulted and validated by :mod:`allot.validation.scheduling`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from allot.api.base import ApiModel
from allot.api.meta import ObjectMeta

PREEMPTION_POLICIES = ["Never", "PreemptLowerPriority"]
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PREFIX = "system-"
SYSTEM_CLASSES = {
    "system-node-critical": (
        SYSTEM_CRITICAL_PRIORITY + 1000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    "system-cluster-critical": (
        SYSTEM_CRITICAL_PRIORITY,
        "Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.",
    ),
}
"""Name: (value, description) of the classes the API server creates at start-up."""


class PriorityClass(ApiModel):
    api_version: Literal["scheduling.k8s.io/v1"] = "scheduling.k8s.io/v1"
    kind: Literal["PriorityClass"] = "PriorityClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    value: int | None = None
    global_default: bool | None = None
    description: str | None = None
    preemption_policy: str | None = None


def system_classes() -> list[dict[str, Any]]:
    """The wire form of the system classes, as the API server's start-up hook writes them."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": description,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        for name, (value, description) in SYSTEM_CLASSES.items()
    ]
