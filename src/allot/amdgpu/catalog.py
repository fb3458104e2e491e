"""The simulated AMD Instinct models and the partitions each makes, as the AMD driver sees them.

The AMD GPU DRA driver (ROCm ``k8s-gpu-dra-driver`` v1.0) reads each GPU from sysfs and
KFD: ``product_name`` (spaces turned to ``_``, parentheses dropped), the DRM card and
render node indices, the KFD unique ID (``deviceID``), the amdgpu module's version and
source version, and ``current_compute_partition`` / ``current_memory_partition``. A GPU
in SPX mode, or one without partition support, is one ``amdgpu`` device; a partitioned GPU
is only its partitions (``amdgpu-partition``), each its own DRM node, the GPU itself not
published. Partitions are made outside the driver (the GPU Operator's DCM); the driver
does not partition on demand.

MI300X (8 XCDs of 38 CUs, 192 GB HBM3) partitions its compute SPX, DPX, QPX or CPX (1, 2, 4
or 8 partitions) and its memory NPS1 or NPS4; NPS4 needs CPX, per AMD's compatibility
matrix. MI250 shows each of its two GCDs as a GPU and does not partition. Numbers that AMD
does not document per partition (memory of a partition, MI250's per-GCD memory) are the
even share; the conformance ledger lists them as unverified. Identities are derived from
the node name and index, so a fleet is reproducible. Pure; used by the fleet.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

NAMESPACE = uuid.UUID("3f0c1d2e-8a4b-4c5d-9e6f-7a8b9c0d1e2f")
COMPUTE_MODES = {"SPX": 1, "DPX": 2, "QPX": 4, "CPX": 8}
MEMORY_MODES = ("NPS1", "NPS4")
DRIVER_VERSION = "6.12.12"
DRIVER_SRC_VERSION = "7AA72EC2C8F513519BE86FD"
FIRST_RENDER_NODE = 128  # renderD128 is the first DRM render node


class PartitionError(ValueError):
    """A model cannot be partitioned so; the message says what it makes."""


@dataclass(frozen=True)
class AmdModel:
    key: str
    product_name: str  # as the driver publishes it (normalised sysfs product_name)
    family: str  # the amdgpu family of libdrm (AI: gfx9, CDNA)
    memory_mib: int
    compute_units: int
    simds_per_cu: int
    partitions: tuple[str, ...]  # the compute_memory profiles it makes ("" if none)

    def makes(self) -> str:
        """What partitions the model makes, for error messages."""
        if not self.partitions:
            return f"{self.key} is not partitioned (its GPUs are whole)"
        modes = (p.upper().replace("_", "/") for p in self.partitions)
        return f"{self.key} makes {', '.join(modes)} (compute/memory partition modes)"


def _profile(compute: str, memory: str) -> str:
    return f"{compute.lower()}_{memory.lower()}"


MI300X_PROFILES = tuple(
    _profile(c, m) for c in COMPUTE_MODES for m in MEMORY_MODES if m == "NPS1" or c == "CPX"
)
MODELS: dict[str, AmdModel] = {
    model.key: model
    for model in (
        AmdModel("MI300X", "AMD_Instinct_MI300X_OAM", "AI", 196592, 304, 4, MI300X_PROFILES),
        AmdModel("MI250", "AMD_INSTINCT_MI250_MCM_OAM_AC_MBA", "AI", 65536, 104, 4, ()),
    )
}
ALIASES = {"mi300x": "MI300X", "mi250": "MI250"}


def lookup(name: str) -> AmdModel | None:
    return MODELS.get(name) or MODELS.get(ALIASES.get(name.lower(), ""))


def partition_profile(model: AmdModel, compute: str, memory: str) -> str:
    """The ``partitionProfile`` of a pool's partition mode, if the model makes it."""
    profile = _profile(compute, memory)
    if profile not in model.partitions:
        raise PartitionError(
            f"{model.key} has no partition mode {compute}/{memory}: {model.makes()}"
        )
    return profile


@dataclass(frozen=True)
class AmdDevice:
    """One device the driver publishes: a whole GPU, or one partition of a GPU."""

    card: int
    render: int
    uuid: str
    model: AmdModel
    pci_address: str  # the GPU's (a partition's parent's)
    pcie_root: str
    device_id: str  # the KFD unique ID of the GPU (shared by its partitions)
    profile: str  # partitionProfile: "spx_nps1", "cpx_nps4", "" (no partition support)
    partitioned: bool
    memory_mib: int
    compute_units: int

    @property
    def name(self) -> str:
        return f"gpu-{self.card}-{self.render}"


def _ident(*parts: object) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, "/".join(str(p) for p in parts))


def simulated_devices(model: AmdModel, node: str, count: int, profile: str) -> list[AmdDevice]:
    """The devices of a node of ``count`` GPUs of ``model`` in partition mode ``profile``
    (``""``: SPX where the model partitions, else unpartitioned)."""
    if not profile and model.partitions:
        profile = model.partitions[0]
    parts = COMPUTE_MODES[profile.split("_")[0].upper()] if profile else 1
    devices: list[AmdDevice] = []
    for index in range(count):
        bus = f"0000:{0x0C + 0x10 * index:02x}:00.0"
        root = f"pci0000:{0x00 + 0x10 * (index // 4):02x}"
        kfd_id = str(_ident(node, index).int >> 65)
        for part in range(parts):
            number = len(devices)
            devices.append(
                AmdDevice(
                    card=number,
                    render=FIRST_RENDER_NODE + number,
                    uuid=str(_ident(node, index, part)),
                    model=model,
                    pci_address=bus,
                    pcie_root=root,
                    device_id=kfd_id,
                    profile=profile,
                    partitioned=parts > 1,
                    memory_mib=model.memory_mib // parts,
                    compute_units=model.compute_units // parts,
                )
            )
    return devices
