"""``core/v1`` Node and node selection (NodeSelector, Taint): the part of core/v1 that the
allocator reads, in a module of its own so that ``allot simulate``, ``doctor`` and the
allocator build a dozen models instead of core/v1's sixty (start-up, issue 15).
:mod:`allot.api.core_v1` re-exports every class, so ``corev1.Node`` is this ``Node``.
"""

# No ``from __future__ import annotations``: pydantic would compile every field's string
# annotation when the class is built; real ones cut a third of that (start-up, issue 15).

from typing import Any, Literal

from pydantic import Field

from allot.api.base import ApiModel, SortedMap, Time
from allot.api.meta import ListMeta, ObjectMeta
from allot.api.quantity import Quantity

JsonObject = dict[str, Any]


# ------------------------------------------------------------------ node selection
class NodeSelectorRequirement(ApiModel):
    key: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class NodeSelectorTerm(ApiModel):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(ApiModel):
    node_selector_terms: list[NodeSelectorTerm] | None = None


class Taint(ApiModel):
    key: str | None = None
    value: str | None = None
    effect: str | None = None
    time_added: Time | None = None


# ------------------------------------------------------------------------------ Node
class NodeAddress(ApiModel):
    type: str | None = None
    address: str | None = None


class NodeCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    last_heartbeat_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class NodeSystemInfo(ApiModel):
    machine_id: str | None = Field(default=None, alias="machineID")
    system_uuid: str | None = Field(default=None, alias="systemUUID")
    boot_id: str | None = Field(default=None, alias="bootID")
    kernel_version: str | None = None
    os_image: str | None = None
    container_runtime_version: str | None = None
    kubelet_version: str | None = None
    kube_proxy_version: str | None = None
    operating_system: str | None = None
    architecture: str | None = None
    swap: JsonObject | None = None


class NodeSpec(ApiModel):
    pod_cidr: str | None = Field(default=None, alias="podCIDR")
    pod_cidrs: list[str] | None = Field(default=None, alias="podCIDRs")
    provider_id: str | None = Field(default=None, alias="providerID")
    unschedulable: bool | None = None
    taints: list[Taint] | None = None


class NodeStatus(ApiModel):
    capacity: SortedMap[Quantity] | None = None
    allocatable: SortedMap[Quantity] | None = None
    phase: str | None = None
    conditions: list[NodeCondition] | None = None
    addresses: list[NodeAddress] | None = None
    daemon_endpoints: JsonObject | None = None
    node_info: NodeSystemInfo | None = None
    images: list[JsonObject] | None = None
    features: JsonObject | None = None
    runtime_handlers: list[JsonObject] | None = None


class Node(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["Node"] = "Node"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus | None = None


class NodeList(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["NodeList"] = "NodeList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Node] = Field(default_factory=list)
