"""What the NVIDIA DRA driver knows about a GPU, whatever produced the knowledge.

A :class:`GpuInfo` carries the readings the real kubelet plugin takes from NVML and sysfs
(identity, versions, PCI location, memory, MIG profiles with their placements, MIG mode and
live MIG instances). The simulated catalogue (:mod:`allot.driver.catalog`) and real NVML
(:mod:`allot.driver.nvml`) both produce it; :mod:`allot.driver.slices` turns it into the
ResourceSlices the driver publishes. Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BRANDS = {
    0: "Unknown",
    1: "Quadro",
    2: "Tesla",
    3: "NVS",
    4: "Grid",
    5: "GeForce",
    6: "Titan",
    7: "NvidiaVApps",
    8: "NvidiaVPC",
    9: "NvidiaVCS",
    10: "NvidiaVWS",
    11: "NvidiaCloudGaming",
    12: "QuadroRTX",
    13: "NvidiaRTX",
    14: "Nvidia",
    15: "GeForceRTX",
    16: "TitanRTX",
}
ARCHITECTURES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
}
ADDRESSING_MODES = {0: "None", 1: "HMM", 2: "ATS"}


@dataclass(frozen=True)
class GiProfile:
    """A GPU-instance profile (``nvmlGpuInstanceProfileInfo``) and its possible placements."""

    id: int  # GI profile ID (19 = 1g, 20 = 1g+me, ...)
    name: str  # "1g.10gb", "1g.10gb+me"
    memory_mib: int
    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int
    placements: tuple[tuple[int, int], ...]  # (start, size) in memory slices

    @property
    def device_fragment(self) -> str:
        """The profile as it appears in device names: ``1g.10gb+me`` -> ``1g10gb-me``."""
        text = self.name.replace(".", "").lower()
        return "".join(c if c.isalnum() or c == "-" else "-" for c in text)


@dataclass(frozen=True)
class MigInstance:
    """A live MIG device (static MIG): its profile, placement and UUID."""

    profile_id: int
    start: int
    uuid: str


@dataclass(frozen=True)
class PciIdentity:
    """What the driver reads from the PCI bus (not NVML) for a GPU's VFIO twin (gate
    ``PassthroughSupport``): the PCI database's name of the device, its IDs and its
    BAR-addressable memory (the 64-bit windows, rounded up to a power of two)."""

    device_id: int  # 0x2330
    name: str  # "GH100 [H100 SXM5 80GB]"
    addressable_memory_bytes: int
    vendor_id: int = 0x10DE


@dataclass
class GpuInfo:
    minor: int
    uuid: str
    product_name: str
    brand: str
    architecture: str
    cuda_compute_capability: str  # "9.0.0"
    driver_version: str  # semver-normalised, "580.95.5"
    cuda_driver_version: str  # "13.0.0"
    pci_bus_id: str  # "0000:18:00.0"
    pcie_root: str | None
    numa_node: int | None
    addressing_mode: str | None
    memory_bytes: int | None
    profiles: list[GiProfile] = field(default_factory=list)
    mig_enabled: bool = False
    mig_instances: list[MigInstance] = field(default_factory=list)
    pci: PciIdentity | None = None  # None: no VFIO twin (allot never rebinds a real GPU)

    @property
    def mig_capable(self) -> bool:
        return bool(self.profiles)

    @property
    def memory_slices(self) -> int:
        return max((size for p in self.profiles for _, size in p.placements), default=0)

    def profile(self, profile_id: int) -> GiProfile:
        return next(p for p in self.profiles if p.id == profile_id)


def semver_driver_version(text: str) -> str:
    """``580.95.05`` -> ``580.95.5`` (the driver's normalisation)."""
    parts = [str(int(p)) for p in text.split(".") if p.isdigit()]
    return ".".join(([*parts, "0", "0", "0"])[:3])


def cuda_version(value: int) -> str:
    """``nvmlSystemGetCudaDriverVersion`` 12040 -> ``12.4.0``."""
    return f"{value // 1000}.{(value % 1000) // 10}.0"
