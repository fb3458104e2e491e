"""This machine's GPUs watched through NVML events, as the driver's health check does.

With the gate ``NVMLDeviceHealthCheck`` on and a fleet publishing local GPUs, ``allot up``
runs :func:`watch` in a thread: it registers every GPU for XID critical errors (and the
ECC events NVML reports beside them) in one NVML event set, waits for events five seconds
at a time and turns each into a :class:`~allot.driver.health.HealthEvent`, as the driver
decides:

- a GPU whose events cannot be registered (no handle, no supported events, too old):
  ``unmonitored`` for its devices, once at start;
- ``NVML_ERROR_GPU_IS_LOST`` from the wait, or an event whose GPU cannot be named:
  ``gpu-lost`` for every device;
- an XID critical error on a full GPU (GPU and compute instance ``0xFFFFFFFF``) or on a
  static MIG device (its GPU and compute instance IDs): ``xid`` for that device; other
  event types, and events for devices not published, are ignored.

Read-only: it only registers for events (nothing about a GPU is changed). The NVML module
is passed in, so the decisions are tested with a fake one; the live loop needs a GPU.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from allot.driver.gpus import GpuInfo
from allot.driver.health import GPU_LOST, UNMONITORED, XID, HealthEvent

FULL_GPU = 0xFFFFFFFF
WAIT_MS = 5000
Placement = tuple[str, int, int]  # the GPU's UUID, GPU instance ID, compute instance ID


def placements(
    gpus: list[GpuInfo], mig_ids: Callable[[str], tuple[int, int] | None]
) -> dict[Placement, str]:
    """Where NVML's events name each published device: a full GPU by its UUID, a static
    MIG device by its GPU's UUID and its instance IDs (``mig_ids`` of its MIG UUID)."""
    found: dict[Placement, str] = {}
    for gpu in gpus:
        if not gpu.mig_enabled:
            found[(gpu.uuid, FULL_GPU, FULL_GPU)] = f"gpu-{gpu.minor}"
            continue
        for instance in gpu.mig_instances:
            ids = mig_ids(instance.uuid)
            if ids is not None:
                profile = gpu.profile(instance.profile_id)
                name = f"gpu-{gpu.minor}-mig-{profile.device_fragment}-{profile.id}"
                found[(gpu.uuid, ids[0], ids[1])] = f"{name}-{instance.start}"
    return found


class HealthMonitor:
    """One NVML event set for the published devices' GPUs, and the driver's decisions."""

    def __init__(self, nvml: Any, devices: dict[Placement, str]) -> None:
        self.nvml = nvml
        self.devices = devices
        self.event_set: Any = None

    def start(self) -> list[HealthEvent]:
        """Initialise NVML and register each GPU; the ``unmonitored`` events of the GPUs
        that cannot be watched."""
        nvml = self.nvml
        nvml.nvmlInit()
        self.event_set = nvml.nvmlEventSetCreate()
        wanted = (
            nvml.nvmlEventTypeXidCriticalError
            | nvml.nvmlEventTypeDoubleBitEccError
            | nvml.nvmlEventTypeSingleBitEccError
        )
        events = []
        for uuid in sorted({placement[0] for placement in self.devices}):
            try:
                handle = nvml.nvmlDeviceGetHandleByUUID(uuid)
                supported = nvml.nvmlDeviceGetSupportedEventTypes(handle)
                nvml.nvmlDeviceRegisterEvents(handle, wanted & supported, self.event_set)
            except nvml.NVMLError:
                events.append(HealthEvent(UNMONITORED, self._of_gpu(uuid)))
        return events

    def _of_gpu(self, uuid: str) -> tuple[str, ...]:
        return tuple(sorted(name for (gpu, _, _), name in self.devices.items() if gpu == uuid))

    def _every_device(self) -> tuple[str, ...]:
        return tuple(sorted(self.devices.values()))

    def next_event(self, timeout_ms: int = WAIT_MS) -> HealthEvent | None:
        """Wait for one NVML event: the health event it means, or None."""
        nvml = self.nvml
        try:
            data = nvml.nvmlEventSetWait_v2(self.event_set, timeout_ms)
        except nvml.NVMLError as err:
            if getattr(err, "value", None) == nvml.NVML_ERROR_GPU_IS_LOST:
                return HealthEvent(GPU_LOST, self._every_device())
            return None  # a timeout, or an error the driver only retries
        if data.eventType != nvml.nvmlEventTypeXidCriticalError:
            return None
        try:
            uuid = nvml.nvmlDeviceGetUUID(data.device)
        except nvml.NVMLError:
            return HealthEvent(GPU_LOST, self._every_device())
        uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
        device = self.devices.get((uuid, int(data.gpuInstanceId), int(data.computeInstanceId)))
        if device is None:
            return None
        return HealthEvent(XID, (device,), int(data.eventData))

    def stop(self) -> None:
        nvml = self.nvml
        try:
            if self.event_set is not None:
                nvml.nvmlEventSetFree(self.event_set)
        finally:
            nvml.nvmlShutdown()


def watch(
    monitor: HealthMonitor,
    publish: Callable[[HealthEvent], None],
    stop: threading.Event,
    timeout_ms: int = WAIT_MS,
) -> None:
    """Publish the monitor's events until ``stop`` is set."""
    try:
        for unmonitored in monitor.start():
            publish(unmonitored)
        while not stop.is_set():
            event = monitor.next_event(timeout_ms)
            if event is not None:
                publish(event)
    finally:
        monitor.stop()
