"""``resource.k8s.io/v1`` as served by Kubernetes 1.36: the DRA kinds, field for field.

DeviceClass (the catalogue), ResourceSlice (what drivers publish), ResourceClaim and
ResourceClaimTemplate (what workloads ask for) with every 1.36 field: shared counters and
``consumesCounters``, consumable capacity with ``requestPolicy``, ``firstAvailable``
subrequests, tolerations, binding conditions, the full allocation result and device
status. Fields are declared in the Go struct order so the wire output reads like the API
server's. Every field is optional here; *required* is a validation rule
(``allot.validation``) so that a missing field gets Kubernetes' "Required value" error.
"""

# No ``from __future__ import annotations``: pydantic would compile every field's string
# annotation when the class is built; real ones cut a third of that (start-up, issue 15).

from typing import Any, Final, Literal

from pydantic import Field

from allot.api.base import ApiModel, SortedMap, Time
from allot.api.core_v1_nodes import NodeSelector
from allot.api.meta import Condition, ListMeta, ObjectMeta
from allot.api.quantity import Quantity

GROUP = "resource.k8s.io"
VERSION = "v1"
API_VERSION: Final = "resource.k8s.io/v1"

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
CONFIG_SOURCE_CLASS = "FromClass"
CONFIG_SOURCE_CLAIM = "FromClaim"
TOLERATION_OP_EXISTS = "Exists"
TOLERATION_OP_EQUAL = "Equal"
TAINT_EFFECTS = ("None", "NoSchedule", "NoExecute")


# --------------------------------------------------------------------- shared pieces
class CELDeviceSelector(ApiModel):
    expression: str | None = None


class DeviceSelector(ApiModel):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(ApiModel):
    driver: str | None = None
    parameters: Any = None


class DeviceConfiguration(ApiModel):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceToleration(ApiModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class CapacityRequirements(ApiModel):
    requests: SortedMap[Quantity] | None = None


# --------------------------------------------------------------------------- DeviceClass
class DeviceClassConfiguration(DeviceConfiguration):
    pass


class DeviceClassSpec(ApiModel):
    selectors: list[DeviceSelector] | None = None
    config: list[DeviceClassConfiguration] | None = None
    extended_resource_name: str | None = None


class DeviceClass(ApiModel):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["DeviceClass"] = "DeviceClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)


# ------------------------------------------------------------------------- ResourceSlice
class ResourcePool(ApiModel):
    name: str | None = None
    generation: int | None = None
    resource_slice_count: int | None = None


class Counter(ApiModel):
    value: Quantity | None = None


class CounterSet(ApiModel):
    name: str | None = None
    counters: SortedMap[Counter] | None = None


class DeviceAttribute(ApiModel):
    """Exactly one member must be set; the list members need DRAListTypeAttributes (alpha)."""

    int_: int | None = Field(default=None, alias="int")
    bool_: bool | None = Field(default=None, alias="bool")
    string: str | None = None
    version: str | None = None
    ints: list[int] | None = None
    bools: list[bool] | None = None
    strings: list[str] | None = None
    versions: list[str] | None = None


class CapacityRequestPolicyRange(ApiModel):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(ApiModel):
    default: Quantity | None = None
    valid_values: list[Quantity] | None = None
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(ApiModel):
    value: Quantity | None = None
    request_policy: CapacityRequestPolicy | None = None


class DeviceCounterConsumption(ApiModel):
    counter_set: str | None = None
    counters: SortedMap[Counter] | None = None


class DeviceTaint(ApiModel):
    key: str | None = None
    value: str | None = None
    effect: str | None = None
    time_added: Time | None = None


class Device(ApiModel):
    name: str | None = None
    attributes: SortedMap[DeviceAttribute] | None = None
    capacity: SortedMap[DeviceCapacity] | None = None
    consumes_counters: list[DeviceCounterConsumption] | None = None
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] | None = None
    binds_to_node: bool | None = None
    binding_conditions: list[str] | None = None
    binding_failure_conditions: list[str] | None = None
    allow_multiple_allocations: bool | None = None
    node_allocatable_resource_mappings: dict[str, Any] | None = None


class ResourceSliceSpec(ApiModel):
    driver: str | None = None
    pool: ResourcePool | None = None
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    devices: list[Device] | None = None
    per_device_node_selection: bool | None = None
    shared_counters: list[CounterSet] | None = None


class ResourceSlice(ApiModel):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["ResourceSlice"] = "ResourceSlice"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = Field(default_factory=ResourceSliceSpec)


# ------------------------------------------------------------------------- ResourceClaim
class ExactDeviceRequest(ApiModel):
    device_class_name: str | None = None
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str | None = None
    count: int | None = None
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(ApiModel):
    name: str | None = None
    device_class_name: str | None = None
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str | None = None
    count: int | None = None
    tolerations: list[DeviceToleration] | None = None
    capacity: CapacityRequirements | None = None


class DeviceRequest(ApiModel):
    name: str | None = None
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceConstraint(ApiModel):
    requests: list[str] | None = None
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(DeviceConfiguration):
    requests: list[str] | None = None


class DeviceClaim(ApiModel):
    requests: list[DeviceRequest] | None = None
    constraints: list[DeviceConstraint] | None = None
    config: list[DeviceClaimConfiguration] | None = None


class ResourceClaimSpec(ApiModel):
    devices: DeviceClaim | None = None


class DeviceRequestAllocationResult(ApiModel):
    request: str | None = None
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    binding_conditions: list[str] | None = None
    binding_failure_conditions: list[str] | None = None
    share_id: str | None = Field(default=None, alias="shareID")
    consumed_capacity: SortedMap[Quantity] | None = None


class DeviceAllocationConfiguration(DeviceConfiguration):
    source: str | None = None
    requests: list[str] | None = None


class DeviceAllocationResult(ApiModel):
    results: list[DeviceRequestAllocationResult] | None = None
    config: list[DeviceAllocationConfiguration] | None = None


class AllocationResult(ApiModel):
    devices: DeviceAllocationResult | None = None
    node_selector: NodeSelector | None = None
    allocation_timestamp: Time | None = None


class ResourceClaimConsumerReference(ApiModel):
    api_group: str | None = None
    resource: str | None = None
    name: str | None = None
    uid: str | None = None


class NetworkDeviceData(ApiModel):
    interface_name: str | None = None
    ips: list[str] | None = None
    hardware_address: str | None = None


class AllocatedDeviceStatus(ApiModel):
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    share_id: str | None = Field(default=None, alias="shareID")
    conditions: list[Condition] | None = None
    data: Any = None
    network_data: NetworkDeviceData | None = None


class ResourceClaimStatus(ApiModel):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] | None = None
    devices: list[AllocatedDeviceStatus] | None = None


class ResourceClaim(ApiModel):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["ResourceClaim"] = "ResourceClaim"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus | None = None


class ResourceClaimTemplateSpec(ApiModel):
    metadata: ObjectMeta | None = None
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(ApiModel):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["ResourceClaimTemplate"] = "ResourceClaimTemplate"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)


# ----------------------------------------------------------------------------- lists
class DeviceClassList(ApiModel):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["DeviceClassList"] = "DeviceClassList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[DeviceClass] = Field(default_factory=list)


class ResourceSliceList(ApiModel):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["ResourceSliceList"] = "ResourceSliceList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[ResourceSlice] = Field(default_factory=list)


class ResourceClaimList(ApiModel):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["ResourceClaimList"] = "ResourceClaimList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[ResourceClaim] = Field(default_factory=list)


class ResourceClaimTemplateList(ApiModel):
    api_version: Literal["resource.k8s.io/v1"] = API_VERSION
    kind: Literal["ResourceClaimTemplateList"] = "ResourceClaimTemplateList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[ResourceClaimTemplate] = Field(default_factory=list)


def apply_claim_defaults(spec: ResourceClaimSpec) -> None:
    """The API server's defaulting: ExactCount with count 1, tolerations ``Equal``."""
    for request in (spec.devices.requests or []) if spec.devices else []:
        targets: list[ExactDeviceRequest | DeviceSubRequest] = []
        if request.exactly is not None:
            targets.append(request.exactly)
        targets.extend(request.first_available or [])
        for target in targets:
            if not target.allocation_mode:
                target.allocation_mode = ALLOCATION_MODE_EXACT_COUNT
            if target.allocation_mode == ALLOCATION_MODE_EXACT_COUNT and not target.count:
                target.count = 1
            for toleration in target.tolerations or []:
                if not toleration.operator:
                    toleration.operator = TOLERATION_OP_EQUAL
