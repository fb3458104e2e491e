"""Every ResourceSlice the fleet's drivers publish for one node, whatever their vendor.

A fleet node may carry GPUs of the NVIDIA driver (``gpu.nvidia.com``) or of the AMD driver
(``gpu.amd.com``, :mod:`allot.amdgpu`). Callers that need a node's slices or a fleet's
DeviceClasses beyond the NVIDIA chart's (the publisher, the trace simulator's inventory)
ask here, so which drivers a node runs is decided in one place. Pure.
"""

from __future__ import annotations

from allot.amdgpu import slices as amd_slices
from allot.driver.fleet import Fleet, NodeSpec
from allot.driver.slices import node_slices
from allot.types import Obj


def published_slices(spec: NodeSpec, node_uid: str, *, passthrough: bool = False) -> list[Obj]:
    """The slices of every driver plugin running on ``spec``'s node (none without GPUs);
    ``passthrough``: the NVIDIA driver's PassthroughSupport gate is on."""
    found: list[Obj] = []
    if spec.gpus:
        found += node_slices(
            spec.name,
            node_uid,
            spec.gpus,
            dynamic_mig=spec.dynamic_mig,
            passthrough=passthrough,
            shares=spec.shares,
        )
    found += amd_slices.node_slices(spec.name, node_uid, spec.amd_devices)
    return found


def fleet_classes(fleet: Fleet) -> list[Obj]:
    """The DeviceClasses of the other drivers the fleet's pools run (their charts')."""
    classes: list[Obj] = []
    if any(pool.amd_profile is not None for pool in fleet.pools):
        classes += amd_slices.device_classes()
    return classes
