"""The ResourceSlice the AMD GPU DRA driver publishes for one node (``gpu.amd.com``).

As ``k8s-gpu-dra-driver`` v1.0 does: one pool per node named after it, one slice owned by
the Node with every device. A whole GPU is ``type: amdgpu`` with ``pciAddr``,
``deviceID``; a partition is ``type: amdgpu-partition`` with its parent's address and ID as
``parentPciAddr`` and ``parentDeviceID`` (so ``matchAttribute: gpu.amd.com/parentDeviceID``
keeps partitions on one GPU). Both carry ``uuid``, ``cardIndex``, ``renderIndex``,
``family``, ``productName``, ``driverVersion``, ``driverSrcVersion``,
``partitionProfile`` and the standard ``resource.kubernetes.io/pcieRoot``, and capacities
``memory``, ``computeUnits`` and ``simdUnits``. Pure: returns wire dicts.
"""

from __future__ import annotations

from allot.amdgpu.catalog import DRIVER_SRC_VERSION, DRIVER_VERSION, AmdDevice
from allot.api.quantity import Quantity, QuantityFormat
from allot.types import Obj
from allot.vendorfacts import node_slice

DRIVER = "gpu.amd.com"
WHOLE, PARTITION = "amdgpu", "amdgpu-partition"


def _string(value: str) -> Obj:
    return {"string": value}


def _count(value: int) -> Obj:
    return {"value": str(value)}


def device(found: AmdDevice) -> Obj:
    """One published device."""
    if found.partitioned:
        identity = {
            "type": _string(PARTITION),
            "parentPciAddr": _string(found.pci_address),
            "parentDeviceID": _string(found.device_id),
        }
    else:
        identity = {
            "type": _string(WHOLE),
            "pciAddr": _string(found.pci_address),
            "deviceID": _string(found.device_id),
        }
    memory = Quantity(found.memory_mib * 2**20 * 10**9, QuantityFormat.BINARY_SI).canonical()
    return {
        "name": found.name,
        "attributes": {
            **identity,
            "uuid": _string(found.uuid),
            "cardIndex": {"int": found.card},
            "renderIndex": {"int": found.render},
            "family": _string(found.model.family),
            "productName": _string(found.model.product_name),
            "driverVersion": {"version": DRIVER_VERSION},
            "driverSrcVersion": _string(DRIVER_SRC_VERSION),
            "partitionProfile": _string(found.profile),
            "resource.kubernetes.io/pcieRoot": _string(found.pcie_root),
        },
        "capacity": {
            "memory": {"value": memory},
            "computeUnits": _count(found.compute_units),
            "simdUnits": _count(found.compute_units * found.model.simds_per_cu),
        },
    }


def node_slices(node: str, node_uid: str, devices: list[AmdDevice]) -> list[Obj]:
    """The driver's one slice for ``node`` (none without AMD GPUs)."""
    if not devices:
        return []
    spec = {"devices": [device(d) for d in devices]}
    return [node_slice(DRIVER, node, node_uid, f"{node}-{DRIVER}-", 1, spec)]


def device_classes() -> list[Obj]:
    """The chart's class, with ``amd.com/gpu`` as its extended resource (allot's addition:
    the chart names none, so pods could only ask through the implicit
    ``deviceclass.resource.kubernetes.io/gpu.amd.com``)."""
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {
                "selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}],
                "extendedResourceName": "amd.com/gpu",
            },
        }
    ]
