"""The ResourceSlices the NVIDIA DRA driver publishes for one node (``gpu.nvidia.com``).

Mirrors ``cmd/gpu-kubelet-plugin`` (nvidia-driver reference §1.3–§2): one pool per node named
after it, slices owned by the Node. Legacy mode (the default) publishes one slice holding
every whole GPU, or, for a GPU with MIG mode on, its live MIG devices (``memorySlice<N>``
capacities, no parent). Dynamic MIG (gate ``DynamicMIG``, Kubernetes ≥ 1.35 "split"
layout) publishes a slice of counter sets, then one slice per GPU with the full GPU and every
possible MIG device, each consuming counters. With ``PassthroughSupport`` each whole GPU
without MIG devices also has its VFIO twin ``gpu-vfio-<index>`` (PCI attributes, no NVML).
With ``--consumable-shares`` (gate ``ConsumableShares``) gpu and mig devices, never the VFIO
twins, allow multiple allocations by memory. Pure: returns wire dicts.
"""

from __future__ import annotations

import uuid as uuidlib

from allot.api.quantity import Quantity, QuantityFormat
from allot.driver.gpus import GiProfile, GpuInfo
from allot.types import Obj

DRIVER = "gpu.nvidia.com"
COUNTER_NAMES = {
    "multiprocessors": "multiprocessors",
    "copyEngines": "copy-engines",
    "decoders": "decoders",
    "encoders": "encoders",
    "jpegEngines": "jpeg-engines",
    "ofaEngines": "ofa-engines",
}


def _string(value: str) -> Obj:
    return {"string": value}


def _quantity(value: int) -> Obj:
    return {"value": str(value)}


def _mib(value: int) -> Obj:
    return {"value": Quantity(value * 2**20 * 10**9, QuantityFormat.BINARY_SI).canonical()}


def _common_attributes(gpu: GpuInfo) -> Obj:
    attributes: Obj = {
        "architecture": _string(gpu.architecture),
        "brand": _string(gpu.brand),
        "cudaComputeCapability": {"version": gpu.cuda_compute_capability},
        "cudaDriverVersion": {"version": gpu.cuda_driver_version},
        "driverVersion": {"version": gpu.driver_version},
        "productName": _string(gpu.product_name),
        "resource.kubernetes.io/pciBusID": _string(gpu.pci_bus_id),
    }
    if gpu.addressing_mode is not None:
        attributes["addressingMode"] = _string(gpu.addressing_mode)
    if gpu.pcie_root is not None:
        attributes["resource.kubernetes.io/pcieRoot"] = _string(gpu.pcie_root)
    if gpu.numa_node is not None and gpu.numa_node >= 0:
        attributes["resource.kubernetes.io/numaNode"] = {"int": gpu.numa_node}
    return attributes


def whole_gpu(gpu: GpuInfo) -> Obj:
    device: Obj = {
        "name": f"gpu-{gpu.minor}",
        "attributes": {
            **_common_attributes(gpu),
            "type": _string("gpu"),
            "uuid": _string(gpu.uuid),
        },
    }
    if gpu.memory_bytes is not None:
        device["capacity"] = {
            "memory": {
                "value": Quantity(gpu.memory_bytes * 10**9, QuantityFormat.BINARY_SI).canonical()
            }
        }
    return device


def _profile_capacity(profile: GiProfile) -> Obj:
    return {
        "copyEngines": _quantity(profile.copy_engines),
        "decoders": _quantity(profile.decoders),
        "encoders": _quantity(profile.encoders),
        "jpegEngines": _quantity(profile.jpeg_engines),
        "memory": _mib(profile.memory_mib),
        "multiprocessors": _quantity(profile.multiprocessors),
        "ofaEngines": _quantity(profile.ofa_engines),
    }


def mig_device(gpu: GpuInfo, profile: GiProfile, start: int, uuid: str | None) -> Obj:
    attributes = {
        **_common_attributes(gpu),
        "parentUUID": _string(gpu.uuid),
        "profile": _string(profile.name),
        "type": _string("mig"),
    }
    if uuid is not None:
        attributes["uuid"] = _string(uuid)
    return {
        "name": f"gpu-{gpu.minor}-mig-{profile.device_fragment}-{profile.id}-{start}",
        "attributes": attributes,
        "capacity": _profile_capacity(profile),
    }


def vfio_device(gpu: GpuInfo, index: int) -> Obj | None:
    """The GPU's VFIO twin (gate ``PassthroughSupport``), ``gpu-vfio-<index>`` where index
    is the GPU's place in the PCI scan of NVIDIA GPUs; None for a GPU whose PCI identity
    is unknown (this machine's real GPUs: allot never binds one to vfio-pci). The
    attributes come from the PCI bus, not NVML: the PCI database's name, a name-based UUID
    of the bus ID, no driver versions."""
    if gpu.pci is None:
        return None
    attributes: Obj = {
        "deviceID": _string(f"0x{gpu.pci.device_id:04x}"),
        "iommuFDEnabled": {"bool": False},
        "productName": _string(gpu.pci.name),
        "resource.kubernetes.io/pciBusID": _string(gpu.pci_bus_id),
        "type": _string("vfio"),
        "uuid": _string(str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, gpu.pci_bus_id))),
        "vendorID": _string(f"0x{gpu.pci.vendor_id:04x}"),
    }
    if gpu.pcie_root is not None:
        attributes["resource.kubernetes.io/pcieRoot"] = _string(gpu.pcie_root)
    if gpu.numa_node is not None and gpu.numa_node >= 0:
        attributes["resource.kubernetes.io/numaNode"] = {"int": gpu.numa_node}
    memory = Quantity(gpu.pci.addressable_memory_bytes * 10**9, QuantityFormat.BINARY_SI)
    return {
        "name": f"gpu-vfio-{index}",
        "attributes": attributes,
        "capacity": {"addressableMemory": {"value": memory.canonical()}},
    }


def _size(profile: GiProfile, start: int) -> int:
    return next(size for begin, size in profile.placements if begin == start)


def static_mig_devices(gpu: GpuInfo) -> list[Obj]:
    devices = []
    for instance in gpu.mig_instances:
        profile = gpu.profile(instance.profile_id)
        device = mig_device(gpu, profile, instance.start, instance.uuid)
        for memory_slice in range(instance.start, instance.start + _size(profile, instance.start)):
            device["capacity"][f"memorySlice{memory_slice}"] = _quantity(1)
        devices.append(device)
    return devices


def _counter_values(capacity: Obj, memory_slices: range) -> Obj:
    counters = {COUNTER_NAMES.get(name, name): dict(value) for name, value in capacity.items()}
    for memory_slice in memory_slices:
        counters[f"memory-slice-{memory_slice}"] = _quantity(1)
    return counters


def _full_gpu_maxima(gpu: GpuInfo) -> Obj:
    fields = (
        "copy_engines",
        "decoders",
        "encoders",
        "jpeg_engines",
        "ofa_engines",
        "multiprocessors",
    )
    maxima = {f: max(getattr(p, f) for p in gpu.profiles) for f in fields}
    return {
        "copyEngines": _quantity(maxima["copy_engines"]),
        "decoders": _quantity(maxima["decoders"]),
        "encoders": _quantity(maxima["encoders"]),
        "jpegEngines": _quantity(maxima["jpeg_engines"]),
        "memory": _mib(max(p.memory_mib for p in gpu.profiles)),
        "multiprocessors": _quantity(maxima["multiprocessors"]),
        "ofaEngines": _quantity(maxima["ofa_engines"]),
    }


def dynamic_devices(gpu: GpuInfo) -> tuple[Obj, list[Obj]]:
    """(counter set, devices) of one MIG-capable GPU in DynamicMIG mode."""
    set_name = f"gpu-{gpu.minor}-counter-set"
    full = whole_gpu(gpu)
    full["capacity"] = _full_gpu_maxima(gpu)
    slices = range(gpu.memory_slices)
    counter_set = {"name": set_name, "counters": _counter_values(full["capacity"], slices)}
    full["consumesCounters"] = [
        {"counterSet": set_name, "counters": _counter_values(full["capacity"], slices)}
    ]
    devices = [full]
    for profile in gpu.profiles:
        for start, size in profile.placements:
            device = mig_device(gpu, profile, start, None)
            device["consumesCounters"] = [
                {
                    "counterSet": set_name,
                    "counters": _counter_values(device["capacity"], range(start, start + size)),
                }
            ]
            devices.append(device)
    devices.sort(key=lambda d: str(d["name"]))
    return counter_set, devices


def driver_slice(
    node: str, node_uid: str, index: int, count: int, spec: Obj, driver: str = DRIVER
) -> Obj:
    """A slice of ``driver``'s pool for ``node``, owned by the Node, named as the 1.36
    libraries name them."""
    prefix = f"{index:05d}-{driver}-{node}-"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "generateName": prefix,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": node,
                    "uid": node_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"generation": 1, "name": node, "resourceSliceCount": count},
            **spec,
        },
    }


def consumable_shares(device: Obj, option: str) -> Obj:
    """A gpu or mig device as the driver's ``--consumable-shares`` publishes it (gate
    ``ConsumableShares``; KEP-5075): ``allowMultipleAllocations``, and ``memory`` rounded
    down to whole MiB with a request policy in 1Mi steps up to it: ``memory`` asks for
    the whole memory by default, from 1Mi; ``unlimited`` for none by default, from 0; a
    number N as ``unlimited`` plus a ``shares`` capacity of N (1 by default, 1 to N)."""
    kind = ((device.get("attributes") or {}).get("type") or {}).get("string")
    if option == "disabled" or kind not in ("gpu", "mig"):
        return device  # VFIO devices are never shared
    device["allowMultipleAllocations"] = True
    capacity = device.setdefault("capacity", {})
    if "memory" not in capacity:
        return device
    whole = Quantity.parse(str(capacity["memory"]["value"])).as_integer() // 2**20
    most, step = _mib(whole)["value"], "1Mi"
    memory_default = most if option == "memory" else "0"
    memory_min = step if option == "memory" else "0"
    capacity["memory"] = {
        "value": most,
        "requestPolicy": {
            "default": memory_default,
            "validRange": {"min": memory_min, "max": most, "step": step},
        },
    }
    if option not in ("memory", "unlimited"):
        capacity["shares"] = {
            "value": option,
            "requestPolicy": {
                "default": "1",
                "validRange": {"min": "1", "max": option, "step": "1"},
            },
        }
    return device


def node_slices(
    node: str,
    node_uid: str,
    gpus: list[GpuInfo],
    *,
    dynamic_mig: bool,
    passthrough: bool = False,
    shares: str = "disabled",
) -> list[Obj]:
    """Every slice the driver publishes for ``node``; with ``passthrough`` (the gate, never
    with DynamicMIG) each GPU without MIG devices also has its VFIO twin; ``shares`` is
    ``--consumable-shares``, applied to gpu and mig devices only (a VFIO twin is never shared)."""
    slices = _node_slices(node, node_uid, gpus, dynamic_mig=dynamic_mig, passthrough=passthrough)
    for slice_ in slices:
        for device in slice_["spec"].get("devices") or []:
            consumable_shares(device, shares)
    return slices


def _node_slices(
    node: str, node_uid: str, gpus: list[GpuInfo], *, dynamic_mig: bool, passthrough: bool
) -> list[Obj]:
    ordered = sorted(gpus, key=lambda g: g.pci_bus_id)
    if dynamic_mig and any(g.mig_capable for g in ordered):
        counter_sets, per_gpu = [], []
        for gpu in ordered:
            if gpu.mig_capable:
                counter_set, devices = dynamic_devices(gpu)
                counter_sets.append(counter_set)
                per_gpu.append(devices)
            else:
                per_gpu.append([whole_gpu(gpu)])
        count = len(per_gpu) + 1
        return [driver_slice(node, node_uid, 0, count, {"sharedCounters": counter_sets})] + [
            driver_slice(node, node_uid, i + 1, count, {"devices": devices})
            for i, devices in enumerate(per_gpu)
        ]
    legacy: list[Obj] = []
    for index, gpu in enumerate(ordered):
        legacy += static_mig_devices(gpu) if gpu.mig_enabled else [whole_gpu(gpu)]
        twin = vfio_device(gpu, index) if passthrough and not gpu.mig_instances else None
        if twin is not None:
            legacy.append(twin)
    return [driver_slice(node, node_uid, 0, 1, {"devices": legacy})]
