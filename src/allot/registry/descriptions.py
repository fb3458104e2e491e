"""Descriptions for ``kubectl explain``, written for allot (not copied from upstream).

Keyed by (model name, wire field name); the OpenAPI generator adds them to the schemas of
the DRA kinds, where users most often need to know what a field does.
"""

from __future__ import annotations

FIELD_DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("ResourceClaim", "spec"): "What the claim asks for. Immutable after creation.",
    ("ResourceClaim", "status"): "What was allocated, and which consumers hold the claim.",
    ("ResourceClaimSpec", "devices"): "The devices requested, the constraints between them "
    "and configuration handed to their drivers.",
    ("DeviceClaim", "requests"): "One entry per group of devices; each names a DeviceClass "
    "under 'exactly' or lists ordered alternatives under "
    "'firstAvailable'. At most 32.",
    ("DeviceClaim", "constraints"): "Rules across the devices of this claim, such as "
    "matchAttribute (all share a value) or distinctAttribute.",
    ("DeviceClaim", "config"): "Opaque configuration passed to the drivers of the allocated "
    "devices, for all requests or the listed ones.",
    ("DeviceRequest", "name"): "The request's name; containers refer to it in "
    "resources.claims[].request.",
    ("DeviceRequest", "exactly"): "One kind of device, from one DeviceClass. Exactly one of "
    "'exactly' and 'firstAvailable' must be set.",
    ("DeviceRequest", "firstAvailable"): "Alternatives in order of preference; the first "
    "that can be satisfied is allocated (at most 8).",
    ("ExactDeviceRequest", "deviceClassName"): "The DeviceClass whose selectors and "
    "configuration apply. Required.",
    ("ExactDeviceRequest", "selectors"): "CEL expressions that every device must satisfy, "
    "in addition to the class's selectors.",
    ("ExactDeviceRequest", "allocationMode"): "ExactCount (the default, with 'count') or All "
    "(every matching device on the node).",
    ("ExactDeviceRequest", "count"): "How many devices with ExactCount; defaults to 1.",
    ("ExactDeviceRequest", "adminAccess"): "Access devices in use by others, for monitoring; "
    "needs the namespace label "
    "resource.kubernetes.io/admin-access=true.",
    ("ExactDeviceRequest", "tolerations"): "Device taints this request tolerates.",
    ("ExactDeviceRequest", "capacity"): "Amounts of a shareable device's capacity to consume.",
    ("DeviceClass", "spec"): "How devices are selected and configured for claims using this class.",
    ("DeviceClassSpec", "selectors"): "CEL expressions that every device of this class must "
    "satisfy.",
    ("DeviceClassSpec", "config"): "Opaque driver configuration for devices of this class.",
    ("DeviceClassSpec", "extendedResourceName"): "Lets pods request this class through "
    "resources.requests with this name.",
    ("ResourceSlice", "spec"): "Devices (or shared counters) a driver publishes for a pool.",
    ("ResourceSliceSpec", "driver"): "The DRA driver publishing these devices.",
    ("ResourceSliceSpec", "pool"): "The pool the slice belongs to, with its generation and "
    "slice count.",
    ("ResourceSliceSpec", "nodeName"): "The node whose devices these are.",
    ("ResourceSliceSpec", "devices"): "The devices, with attributes and capacities.",
    ("ResourceSliceSpec", "sharedCounters"): "Counter sets consumed by partitionable devices "
    "(for example MIG memory slices).",
    ("Device", "attributes"): "Typed properties selectors can test "
    "(device.attributes[domain].name).",
    ("Device", "capacity"): "Quantities such as memory (device.capacity[domain].name).",
    ("Device", "consumesCounters"): "Shared counters this device uses when allocated.",
    ("ResourceClaimStatus", "allocation"): "The devices chosen by the scheduler, and where "
    "the claim can be used.",
    ("ResourceClaimStatus", "reservedFor"): "The consumers (pods) currently using the claim.",
}
