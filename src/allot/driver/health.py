"""The driver's device health check (gate ``NVMLDeviceHealthCheck``): events to device taints.

The NVIDIA driver's kubelet plugin watches NVML for XID critical errors and lost GPUs and
writes DRA device taints into the devices of its published slice (KEP-5055), one key per
kind of trouble, in the ``gpu.nvidia.com`` domain:

- ``gpu.nvidia.com/xid=<XID>``: ``NoSchedule``, or ``None`` for the XIDs it treats as the
  application's fault (13, 31, 43, 45, 68, 109, and those added with
  ``ADDITIONAL_XIDS_TO_IGNORE``);
- ``gpu.nvidia.com/gpu-lost``: ``NoSchedule``, for every device when NVML says a GPU is
  lost;
- ``gpu.nvidia.com/unmonitored``: ``None``, for the devices of a GPU whose events cannot
  be registered.

A later event of the same key replaces the taint's value and effect (its ``timeAdded``
left for the API server to set); the same taint again changes nothing. The scheduler keeps
untolerated ``NoSchedule`` devices out of new allocations; ``None`` only informs. Pure:
:func:`taint_for` and :func:`tainted` are shared by the simulated fleet's ``allot fleet
inject-xid`` and the NVML event loop of :mod:`allot.driver.nvmlhealth`.
"""

from __future__ import annotations

from dataclasses import dataclass

from allot.driver.slices import DRIVER
from allot.types import Obj

XID = "xid"
GPU_LOST = "gpu-lost"
UNMONITORED = "unmonitored"
KINDS = (XID, GPU_LOST, UNMONITORED)
TAINT_KEYS = {kind: f"{DRIVER}/{kind}" for kind in KINDS}
IGNORED_XIDS = frozenset({13, 31, 43, 45, 68, 109})
"""Application errors (graphics engine exception, memory page fault, GPU stopped
processing, preemptive clean-up, video processor exception, context switch timeout): the
GPU is still healthy, so the taint informs (``None``) and does not keep pods away."""
IGNORE_ENV = "ADDITIONAL_XIDS_TO_IGNORE"


@dataclass(frozen=True)
class HealthEvent:
    """One health notification for some of a node's devices (a lost GPU: all of them)."""

    kind: str  # xid, gpu-lost, unmonitored
    devices: tuple[str, ...]
    xid: int | None = None


def xids_to_skip(additional: str = "") -> frozenset[int]:
    """The ignored XIDs plus a comma-separated list (malformed entries dropped, as the
    driver drops them)."""
    extra = set()
    for entry in additional.split(","):
        text = entry.strip()
        if text.isdigit():
            extra.add(int(text))
    return IGNORED_XIDS | extra


def taint_for(event: HealthEvent, skipped: frozenset[int] = IGNORED_XIDS) -> Obj:
    """The device taint the driver writes for ``event`` (wire form)."""
    if event.kind == XID:
        effect = "None" if event.xid in skipped else "NoSchedule"
        return {"key": TAINT_KEYS[XID], "value": str(event.xid), "effect": effect}
    if event.kind == GPU_LOST:
        return {"key": TAINT_KEYS[GPU_LOST], "effect": "NoSchedule"}
    return {"key": TAINT_KEYS[UNMONITORED], "effect": "None"}


def tainted(spec: Obj, devices: set[str], taint: Obj) -> Obj | None:
    """The slice spec with ``taint`` added to (or updated on) ``devices``; None when no
    device of the spec changes (the driver then does not republish)."""
    changed = False
    edited = []
    for device in spec.get("devices") or []:
        if device.get("name") in devices:
            taints, updated = _add_or_update(list(device.get("taints") or []), taint)
            if updated:
                device = {**device, "taints": taints}
                changed = True
        edited.append(device)
    return {**spec, "devices": edited} if changed else None


def _add_or_update(taints: list[Obj], taint: Obj) -> tuple[list[Obj], bool]:
    for index, existing in enumerate(taints):
        if existing.get("key") == taint["key"]:
            if (
                existing.get("value") == taint.get("value")
                and existing.get("effect") == taint["effect"]
            ):
                return taints, False
            taints[index] = dict(taint)  # value and effect replaced, timeAdded reset
            return taints, True
    return [*taints, dict(taint)], True


def device_taints(slices: list[Obj]) -> list[tuple[str, str, Obj]]:
    """(node, device, taint) of every health taint of the driver in ``slices``."""
    keys = set(TAINT_KEYS.values())
    found = []
    for slice_ in slices:
        spec = slice_.get("spec") or {}
        if spec.get("driver") != DRIVER:
            continue
        for device in spec.get("devices") or []:
            for taint in device.get("taints") or []:
                if taint.get("key") in keys:
                    found.append((str(spec.get("nodeName")), str(device.get("name")), taint))
    return found
