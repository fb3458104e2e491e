"""The devices of a fleet by class, and a device-count placement of pods onto its nodes.

The trace simulator places thousands of pods on 100 nodes many times over; the full
allocator (one search per pod and node) would make a day's trace take hours. So this
module judges each device of the fleet's real ResourceSlices (:mod:`allot.driver.slices`)
once against every DeviceClass's CEL selectors, and then places a pod by picking, on the
first node (in name order) with enough of them, free devices its classes select: a device
matching fewer classes first, so a narrow request does not take what a broad one could
not do without. That is exact for the fleets it accepts (whole GPUs and static MIG: every
device independent, no shared counters); fleets with DynamicMIG or local GPUs are
refused. Pure; used by :mod:`allot.simulation.traces`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from allot import cel
from allot.api import resource_v1 as resourceapi
from allot.api.quantity import NANO
from allot.driver.fleet import Fleet, expand
from allot.driver.nodeslices import published_slices
from allot.simulation.trace import TraceWorkload


class InventoryError(Exception):
    """The fleet cannot be simulated by device counts; the message says why."""


@dataclass(frozen=True)
class FleetDevice:
    node: int
    name: str
    memory: int
    """Bytes of GPU memory (capacity ``memory``), 0 when the device publishes none."""
    classes: frozenset[str]


class Inventory:
    """Every device of the fleet and the classes that select it."""

    def __init__(self, fleet: Fleet, classes: Sequence[resourceapi.DeviceClass]) -> None:
        self.nodes: list[str] = []
        self.devices: list[FleetDevice] = []
        compiler = cel.SelectorCompiler()
        self._selectors = {
            c.metadata.name or "": [compiler.compile(e) for e in _expressions(c)] for c in classes
        }
        for spec in expand(fleet):
            pool = fleet.pool(spec.pool)
            if pool.local or pool.shares_counters:
                raise InventoryError(
                    f"pool {pool.name}: the trace simulator counts independent devices; "
                    "local GPUs and DynamicMIG (shared counters) are not supported"
                )
            self.nodes.append(spec.name)
            for raw in published_slices(spec, f"uid-{spec.name}"):
                for device in raw["spec"].get("devices", []):
                    self._add(
                        len(self.nodes) - 1,
                        raw["spec"]["driver"],
                        resourceapi.Device.model_validate(device),
                    )
        self.capacity: Counter[str] = Counter()
        for device in self.devices:
            self.capacity.update(device.classes)
        self.class_memory = {
            name: max((d.memory for d in self.devices if name in d.classes), default=0)
            for name in self._selectors
        }

    def _add(self, node: int, driver: str, device: resourceapi.Device) -> None:
        view = cel.DeviceView(driver, device)
        matched = frozenset(
            name
            for name, compiled in self._selectors.items()
            if all(s.matches(view) for s in compiled)
        )
        memory = (device.capacity or {}).get("memory")
        size = memory.value.nanos // NANO if memory is not None and memory.value else 0
        self.devices.append(FleetDevice(node, device.name or "", size, matched))

    def memory_of(self, workload: TraceWorkload) -> int:
        """Bytes of GPU memory one pod counts against a ``gpuMemory`` share: what it
        names, or the largest device each of its classes selects."""
        if workload.gpu_memory is not None:
            return workload.gpu_memory
        return sum(self.class_memory.get(name, 0) * count for name, count in workload.devices)


def _expressions(device_class: resourceapi.DeviceClass) -> list[str]:
    selectors = device_class.spec.selectors if device_class.spec else None
    return [s.cel.expression or "" for s in selectors or [] if s.cel is not None]


class Placer:
    """Which devices are free, and taking or giving back the devices of whole gangs."""

    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory
        self.free: list[list[int]] = [[] for _ in inventory.nodes]
        for index, device in enumerate(inventory.devices):
            self.free[device.node].append(index)
        self.free_by_class: list[Counter[str]] = [Counter() for _ in inventory.nodes]
        self.total_free: Counter[str] = Counter()
        for device in inventory.devices:
            self.free_by_class[device.node].update(device.classes)
            self.total_free.update(device.classes)
        self.in_use = 0

    def place(self, workload: TraceWorkload) -> list[int] | None:
        """Devices for every pod of the gang, or ``None`` (and nothing taken)."""
        need = Counter({name: n * workload.pods for name, n in workload.devices})
        if any(self.total_free[name] < n for name, n in need.items()):
            return None
        taken: list[int] = []
        for _ in range(workload.pods):
            pod = self._place_pod(workload)
            if pod is None:
                self.release(taken)
                return None
            taken += pod
        return taken

    def _place_pod(self, workload: TraceWorkload) -> list[int] | None:
        for node, free in enumerate(self.free):
            counts = self.free_by_class[node]
            if any(counts[name] < n for name, n in workload.devices):
                continue
            picked = self._pick(free, workload)
            if picked is not None:
                self._take(node, picked)
                return picked
        return None

    def _pick(self, free: list[int], workload: TraceWorkload) -> list[int] | None:
        devices = self.inventory.devices
        picked: list[int] = []
        for name, count in workload.devices:
            matching = sorted(
                (i for i in free if name in devices[i].classes and i not in picked),
                key=lambda i: (len(devices[i].classes), i),
            )
            if len(matching) < count:
                return None
            picked += matching[:count]
        if not workload.devices and workload.gpu_memory is not None:
            large = sorted(
                (i for i in free if devices[i].memory >= workload.gpu_memory),
                key=lambda i: (devices[i].memory, i),
            )
            if not large:
                return None
            picked.append(large[0])
        return picked

    def _take(self, node: int, picked: list[int]) -> None:
        taken = set(picked)
        self.free[node] = [i for i in self.free[node] if i not in taken]
        for index in picked:
            classes = self.inventory.devices[index].classes
            self.free_by_class[node].subtract(classes)
            self.total_free.subtract(classes)
        self.in_use += len(picked)

    def release(self, devices: list[int]) -> None:
        for index in devices:
            device = self.inventory.devices[index]
            self.free[device.node].append(index)
            self.free_by_class[device.node].update(device.classes)
            self.total_free.update(device.classes)
        for node in {self.inventory.devices[i].node for i in devices}:
            self.free[node].sort()
        self.in_use -= len(devices)
