"""The simulated GPU models: what NVML would report for each, per the driver reference.

H100 80GB HBM3 and H200 profile numbers are exact NVML readings; A100-SXM4-40GB follows the
mock-NVML tables; A100-SXM4-80GB memory per profile and the L4 are best estimates (the
conformance ledger lists them as unconfirmed). The PCI identities (for VFIO twins) are the
PCI database's names and IDs; their addressable memory (the 64-bit BARs rounded up to a
power of two) follows each model's usual BAR1 size and is likewise unconfirmed. Identities
(UUIDs, bus IDs) are derived deterministically from the node name and GPU index, so a
fleet is reproducible. Used by the fleet to build each simulated node's :class:`GpuInfo`
list.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from allot.driver.gpus import GiProfile, GpuInfo, MigInstance, PciIdentity

NAMESPACE = uuid.UUID("7d0d3ad5-52f3-4b5b-9c41-0d1b1c3f2e11")
ONE_SLICE = tuple((s, 1) for s in range(7))
TWO_SLICES = ((0, 2), (2, 2), (4, 2), (6, 2))
TWO_G = ((0, 2), (2, 2), (4, 2))
THREE_G = ((0, 4), (4, 4))
FOUR_G = ((0, 4),)
SEVEN_G = ((0, 8),)


def _profiles(
    memory: dict[str, int],
    table: list[tuple[int, str, tuple[int, ...], tuple[tuple[int, int], ...]]],
) -> tuple[GiProfile, ...]:
    """(id, name, (sm, ce, dec, enc, jpeg, ofa), placements) rows -> profiles."""
    return tuple(
        GiProfile(
            id=pid,
            name=name,
            memory_mib=memory[name],
            multiprocessors=n[0],
            copy_engines=n[1],
            decoders=n[2],
            encoders=n[3],
            jpeg_engines=n[4],
            ofa_engines=n[5],
            placements=placements,
        )
        for pid, name, n, placements in table
    )


@dataclass(frozen=True)
class GpuModel:
    key: str
    product_name: str
    architecture: str
    compute_capability: str
    memory_bytes: int
    profiles: tuple[GiProfile, ...]
    addressing_mode: str | None
    pci: PciIdentity | None = None


def _hopper(names: tuple[str, ...], memory: tuple[int, ...]) -> tuple[GiProfile, ...]:
    one, one_me, one_double, two, three, four, seven = names
    return _profiles(
        dict(zip(names, memory, strict=True)),
        [
            (19, one, (16, 1, 1, 0, 1, 0), ONE_SLICE),
            (20, one_me, (16, 1, 1, 0, 1, 1), ONE_SLICE),
            (15, one_double, (26, 1, 1, 0, 1, 0), TWO_SLICES),
            (14, two, (32, 2, 2, 0, 2, 0), TWO_G),
            (9, three, (60, 3, 3, 0, 3, 0), THREE_G),
            (5, four, (64, 4, 4, 0, 4, 0), FOUR_G),
            (0, seven, (132, 8, 7, 0, 7, 1), SEVEN_G),
        ],
    )


def _ampere(names: tuple[str, ...], memory: tuple[int, ...]) -> tuple[GiProfile, ...]:
    one, one_me, one_double, two, three, four, seven = names
    return _profiles(
        dict(zip(names, memory, strict=True)),
        [
            (19, one, (14, 1, 0, 0, 0, 0), ONE_SLICE),
            (20, one_me, (14, 1, 1, 0, 1, 1), ONE_SLICE),
            (15, one_double, (14, 1, 1, 0, 0, 0), TWO_SLICES),
            (14, two, (28, 2, 1, 0, 0, 0), TWO_G),
            (9, three, (42, 3, 2, 0, 0, 0), THREE_G),
            (5, four, (56, 4, 2, 0, 0, 0), FOUR_G),
            (0, seven, (98, 7, 5, 0, 1, 1), SEVEN_G),
        ],
    )


MODELS: dict[str, GpuModel] = {
    model.key: model
    for model in (
        GpuModel(
            "A100-SXM4-40GB",
            "NVIDIA A100-SXM4-40GB",
            "Ampere",
            "8.0.0",
            40960 * 2**20,
            _ampere(
                ("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
                (4864, 4864, 9856, 9856, 19968, 19968, 40192),
            ),
            None,
            PciIdentity(0x20B0, "GA100 [A100 SXM4 40GB]", 128 * 2**30),
        ),
        GpuModel(
            "A100-SXM4-80GB",
            "NVIDIA A100-SXM4-80GB",
            "Ampere",
            "8.0.0",
            81920 * 2**20,
            _ampere(
                ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
                (9728, 9728, 19968, 19968, 40192, 40192, 81152),
            ),
            None,
            PciIdentity(0x20B2, "GA100 [A100 SXM4 80GB]", 256 * 2**30),
        ),
        GpuModel(
            "H100-80GB-HBM3",
            "NVIDIA H100 80GB HBM3",
            "Hopper",
            "9.0.0",
            85520809984,
            _hopper(
                ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
                (9984, 9984, 20096, 20096, 40448, 40448, 81152),
            ),
            "None",
            PciIdentity(0x2330, "GH100 [H100 SXM5 80GB]", 256 * 2**30),
        ),
        GpuModel(
            "H200",
            "NVIDIA H200",
            "Hopper",
            "9.0.0",
            150754820096,
            _hopper(
                ("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
                (16384, 16384, 33280, 33280, 71424, 71424, 143360),
            ),
            "None",
            PciIdentity(0x2335, "GH100 [H200 SXM 141GB]", 512 * 2**30),
        ),
        GpuModel(
            "L4",
            "NVIDIA L4",
            "Ada Lovelace",
            "8.9.0",
            23034 * 2**20,
            (),
            "None",
            PciIdentity(0x27B8, "AD104GL [L4]", 64 * 2**30),
        ),
    )
}
ALIASES = {
    "a100": "A100-SXM4-40GB",
    "a100-40gb": "A100-SXM4-40GB",
    "a100-80gb": "A100-SXM4-80GB",
    "h100": "H100-80GB-HBM3",
    "h200": "H200",
    "l4": "L4",
}


def lookup(name: str) -> GpuModel | None:
    return MODELS.get(name) or MODELS.get(ALIASES.get(name.lower(), ""))


def _uuid(prefix: str, *parts: object) -> str:
    return f"{prefix}-{uuid.uuid5(NAMESPACE, '/'.join(str(p) for p in parts))}"


def created_mig_uuid(parent_uuid: str, device: str) -> str:
    """The UUID of a MIG device the driver creates when it prepares it (DynamicMIG: the
    published device has none, NVML gives one once the GPU instance exists): ``MIG-``
    and a name-based UUID of the parent GPU's UUID and the device's name, which carries
    the profile and placement, so one placement on one GPU always gets the same UUID."""
    return _uuid("MIG", parent_uuid, device)


def simulated_gpus(
    model: GpuModel,
    node: str,
    count: int,
    *,
    driver_version: str,
    cuda_version: str,
    mig_profile: str | None = None,
) -> list[GpuInfo]:
    """The GPUs of one simulated node; ``mig_profile`` pre-partitions each (static MIG)."""
    gpus = []
    for index in range(count):
        gpu = GpuInfo(
            minor=index,
            uuid=_uuid("GPU", node, index),
            product_name=model.product_name,
            brand="Nvidia",
            architecture=model.architecture,
            cuda_compute_capability=model.compute_capability,
            driver_version=driver_version,
            cuda_driver_version=cuda_version,
            pci_bus_id=f"0000:{0x07 + 0x10 * index:02x}:00.0",
            pcie_root=f"pci0000:{0x00 + 0x10 * (index // 4):02x}",
            numa_node=index // 4,
            addressing_mode=model.addressing_mode,
            memory_bytes=model.memory_bytes,
            profiles=list(model.profiles),
            pci=model.pci,
        )
        if mig_profile is not None:
            profile = next((p for p in model.profiles if p.name == mig_profile), None)
            if profile is None:
                raise ValueError(
                    f"{model.key} has no MIG profile {mig_profile!r} (profiles: "
                    f"{', '.join(p.name for p in model.profiles) or 'none'})"
                )
            gpu.mig_enabled = True
            gpu.mig_instances = _partition(profile, node, index)
        gpus.append(gpu)
    return gpus


def _partition(profile: GiProfile, node: str, index: int) -> list[MigInstance]:
    """Fill the GPU with as many non-overlapping instances of ``profile`` as fit."""
    used: set[int] = set()
    instances = []
    for start, size in profile.placements:
        slices = set(range(start, start + size))
        if slices & used:
            continue
        used |= slices
        instances.append(MigInstance(profile.id, start, _uuid("MIG", node, index, start)))
        if "+me" in profile.name:
            break  # only one +me instance can exist at a time
    return instances
