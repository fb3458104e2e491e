"""This machine's own GPUs, for fleet pools with ``local: true``: can they be read?

The vendor-neutral callers (``allot up``, the platform) ask here rather than naming the
NVML binding: :func:`check_available` raises :class:`LocalGpusUnavailable` with an install
hint when the GPUs cannot be read, and :func:`device_nodes` resolves claimed devices to
this machine's device nodes.
"""

from __future__ import annotations

from allot.driver.devicenodes import DeviceNodes
from allot.driver.nvml import NvmlUnavailable as LocalGpusUnavailable
from allot.driver.nvml import check_available, mig_instance_ids

__all__ = ["LocalGpusUnavailable", "check_available", "device_nodes"]


def device_nodes() -> DeviceNodes:
    """The real GPUs' device nodes, MIG instances identified through NVML."""
    return DeviceNodes(mig_ids=mig_instance_ids)
