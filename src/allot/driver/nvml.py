"""Real GPUs: NVML readings turned into :class:`GpuInfo`, exactly as the driver maps them.

``probe_document`` reads this machine's GPUs with ``nvidia-ml-py`` (the optional extra
``allot[gpu]``) into a plain JSON document, read-only (MIG mode is never changed);
``gpus_from_probe`` maps such a document to :class:`GpuInfo` with the driver's transforms
(nvidia-driver reference §7): minor numbers for names, semver-normalised versions,
lower-case bus IDs, pcieRoot from the sysfs link, numaNode only when ≥ 0, profile placements
for dynamic MIG. The mapping is pure and tested on recorded probes of an H100 and an H200;
the probe needs a GPU.
"""

from __future__ import annotations

import os
from typing import Any

from allot.driver.gpus import (
    ADDRESSING_MODES,
    ARCHITECTURES,
    BRANDS,
    GiProfile,
    GpuInfo,
    MigInstance,
    cuda_version,
    semver_driver_version,
)

GI_PROFILE_ENUMS = range(17)  # go-nvml's GPU_INSTANCE_PROFILE_COUNT


INSTALL_HINT = "pip install nvidia-ml-py (in a clone of allot: pip install -e '.[gpu]')"
"""How to get NVML's Python binding: by its own name, since ``allot`` on PyPI is another
project's; the ``gpu`` extra of a clone installs the same package."""


class NvmlUnavailable(Exception):
    """No NVML here (no driver, no GPU, or nvidia-ml-py not installed)."""


def _bus_id(raw: str) -> str:
    text = raw.lower()
    return text[4:] if len(text) == 16 and text.startswith("0000") else text


def _pcie_root(link: str | None) -> str | None:
    if not link:
        return None
    parts = link.split("/")
    if "devices" not in parts:
        return None
    following = parts[parts.index("devices") + 1 :]
    return following[0] if following else None


def _profile_name(raw: str) -> str:
    return raw.removeprefix("MIG ").strip()


def gpus_from_probe(document: dict[str, Any]) -> list[GpuInfo]:
    driver = semver_driver_version(str(document["driver"]))
    cuda = cuda_version(int(document["cuda"]))
    gpus = []
    for device in document["devices"]:
        numa = device.get("sys_numa")
        profiles = [
            GiProfile(
                id=int(p["id"]),
                name=_profile_name(str(p["name"])),
                memory_mib=int(p["memMB"]),
                multiprocessors=int(p["sm"]),
                copy_engines=int(p["ce"]),
                decoders=int(p["dec"]),
                encoders=int(p["enc"]),
                jpeg_engines=int(p["jpeg"]),
                ofa_engines=int(p["ofa"]),
                placements=tuple((int(a), int(b)) for a, b in p.get("placements", [])),
            )
            for p in device.get("giProfiles", [])
        ]
        mig_mode = device.get("migMode") or [0, 0]
        gpus.append(
            GpuInfo(
                minor=int(device["minor"]),
                uuid=str(device["uuid"]),
                product_name=str(device["name"]),
                brand=BRANDS.get(int(device["brand"]), "Unknown"),
                architecture=ARCHITECTURES.get(int(device["arch"]), "Unknown"),
                cuda_compute_capability=f"{device['cc'][0]}.{device['cc'][1]}.0",
                driver_version=driver,
                cuda_driver_version=cuda,
                pci_bus_id=_bus_id(str(device["busId"])),
                pcie_root=_pcie_root(device.get("sys_link")),
                numa_node=int(numa) if numa not in (None, "") else None,
                addressing_mode=ADDRESSING_MODES.get(int(device["addressingMode"]))
                if device.get("addressingMode") is not None
                else None,
                memory_bytes=int(device["mem_total_v1"]) if device.get("mem_total_v1") else None,
                profiles=profiles,
                mig_enabled=int(mig_mode[0]) == 1,
                mig_instances=[
                    MigInstance(int(i["profileId"]), int(i["start"]), str(i["uuid"]))
                    for i in device.get("migDevices", [])
                ],
            )
        )
    return gpus


def check_available() -> None:
    """Raise ``NvmlUnavailable`` unless NVML can be loaded and initialised here.

    ``allot up`` calls it before it binds or writes anything when a fleet asks for this
    machine's GPUs, so a missing ``allot[gpu]`` extra or driver is one line, not a failure
    in the publishing thread of a half-started server."""
    try:
        import pynvml
    except ImportError as err:
        raise NvmlUnavailable(
            f"this fleet publishes this machine's GPUs, which needs nvidia-ml-py: {INSTALL_HINT}"
        ) from err
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        raise NvmlUnavailable(f"this fleet publishes this machine's GPUs, but NVML: {err}") from err
    pynvml.nvmlShutdown()


def probe_document() -> dict[str, Any]:  # pragma: no cover - needs a GPU (device machine)
    """Read this machine's GPUs through NVML (read-only)."""
    try:
        import pynvml
    except ImportError as err:
        raise NvmlUnavailable(f"nvidia-ml-py is not installed ({INSTALL_HINT})") from err
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        raise NvmlUnavailable(f"NVML is not available: {err}") from err
    try:
        return {
            "driver": pynvml.nvmlSystemGetDriverVersion(),
            "cuda": pynvml.nvmlSystemGetCudaDriverVersion(),
            "devices": [_probe_device(pynvml, i) for i in range(pynvml.nvmlDeviceGetCount())],
        }
    finally:
        pynvml.nvmlShutdown()


def mig_instance_ids(uuid: str) -> tuple[int, int] | None:  # pragma: no cover - MIG GPU
    """The GPU and compute instance IDs of a MIG device, for its ``/dev/nvidia-caps``
    nodes; None where NVML cannot tell (no NVML, not a MIG device)."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
        return (
            int(pynvml.nvmlDeviceGetGpuInstanceId(handle)),
            int(pynvml.nvmlDeviceGetComputeInstanceId(handle)),
        )
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()


def _optional(call: Any, *args: Any) -> Any:  # pragma: no cover - needs a GPU
    try:
        return call(*args)
    except Exception:
        return None


def _probe_device(nvml: Any, index: int) -> dict[str, Any]:  # pragma: no cover - needs a GPU
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    bus = nvml.nvmlDeviceGetPciInfo(handle).busId
    bus = bus.decode() if isinstance(bus, bytes) else bus
    bdf = _bus_id(bus)
    sys_path = f"/sys/bus/pci/devices/{bdf}"
    numa = None
    try:
        with open(f"{sys_path}/numa_node") as handle_file:
            numa = handle_file.read().strip()
    except OSError:
        pass
    link = _optional(os.readlink, sys_path)
    mig_mode = _optional(nvml.nvmlDeviceGetMigMode, handle) or [0, 0]
    return {
        "minor": nvml.nvmlDeviceGetMinorNumber(handle),
        "uuid": nvml.nvmlDeviceGetUUID(handle),
        "name": nvml.nvmlDeviceGetName(handle),
        "brand": nvml.nvmlDeviceGetBrand(handle),
        "arch": nvml.nvmlDeviceGetArchitecture(handle),
        "cc": list(nvml.nvmlDeviceGetCudaComputeCapability(handle)),
        "busId": bus,
        "mem_total_v1": nvml.nvmlDeviceGetMemoryInfo(handle).total,
        "migMode": list(mig_mode),
        "addressingMode": _optional(
            getattr(nvml, "nvmlDeviceGetAddressingMode", None) or (lambda h: None), handle
        ),
        "sys_numa": numa if numa not in (None, "-1") else None,
        "sys_link": link,
        "giProfiles": _profiles(nvml, handle),
    }


def _profiles(nvml: Any, handle: Any) -> list[dict[str, Any]]:  # pragma: no cover - GPU
    import ctypes

    profiles = []
    for enum in GI_PROFILE_ENUMS:
        info = _optional(nvml.nvmlDeviceGetGpuInstanceProfileInfo, handle, enum)
        if info is None:
            continue
        count = ctypes.c_uint(0)
        placements: list[list[int]] = []
        try:
            nvml.nvmlDeviceGetGpuInstancePossiblePlacements(
                handle, info.id, None, ctypes.byref(count)
            )
            array = (nvml.c_nvmlGpuInstancePlacement_t * count.value)()
            nvml.nvmlDeviceGetGpuInstancePossiblePlacements(
                handle, info.id, array, ctypes.byref(count)
            )
            placements = [[p.start, p.size] for p in array]
        except Exception:
            placements = []
        name = getattr(info, "name", b"")
        name = name.decode() if isinstance(name, bytes) else str(name)
        profiles.append(
            {
                "enum": enum,
                "id": info.id,
                "sm": info.multiprocessorCount,
                "ce": info.copyEngineCount,
                "dec": info.decoderCount,
                "enc": info.encoderCount,
                "jpeg": info.jpegCount,
                "ofa": info.ofaCount,
                "memMB": info.memorySizeMB,
                "name": name,
                "placements": placements,
            }
        )
    return profiles
