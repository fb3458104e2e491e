"""Every ResourceSlice the fleet's drivers publish for one node, whatever their vendor.

A fleet node may carry GPUs of the NVIDIA driver (``gpu.nvidia.com``). Callers that only
need a node's slices (the publisher, the trace simulator's inventory) ask here, so the
list of drivers a node can have is kept in one place. Pure.
"""

from __future__ import annotations

from allot.driver.fleet import NodeSpec
from allot.driver.slices import node_slices
from allot.types import Obj


def published_slices(spec: NodeSpec, node_uid: str) -> list[Obj]:
    """The slices of every driver plugin running on ``spec``'s node (none without GPUs)."""
    if not spec.gpus:
        return []
    return node_slices(spec.name, node_uid, spec.gpus, dynamic_mig=spec.dynamic_mig)
