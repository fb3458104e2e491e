"""Which ``/dev`` nodes a container needs for its claimed GPUs, as the driver's CDI specs say.

The NVIDIA DRA driver's CDI spec for a claimed whole GPU adds its ``/dev/nvidia<minor>``
and the common nodes (``/dev/nvidiactl``, ``/dev/nvidia-uvm``, ``/dev/nvidia-uvm-tools``,
``/dev/nvidia-modeset``); for a MIG device, its parent GPU's node plus the
``/dev/nvidia-caps/nvidia-cap<N>`` nodes that grant access to its GPU and compute
instances, ``N`` read from ``/proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<G>
[/ci<C>]/access``. The process runtime's sandbox binds exactly these, so other GPUs do
not exist inside it.

Devices are found by UUID in ``/proc/driver/nvidia/gpus/*/information``: a simulated
device's UUID matches no real GPU and gets no node (its ``nvidia-smi`` shim stays). The
GPU and compute instance IDs of a MIG device come from NVML, through a callable, so tests
can give a recorded tree. Called by ``allot.controllers.runtimes``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

COMMON_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
MigIds = Callable[[str], "tuple[int, int] | None"]  # MIG UUID -> (GPU instance, compute instance)


def _no_mig_ids(uuid: str) -> tuple[int, int] | None:
    return None


@dataclass
class GpuNode:
    """One real GPU as ``/proc/driver/nvidia/gpus/<bus>/information`` describes it."""

    uuid: str
    minor: int
    bus: str


@dataclass
class DeviceNodes:
    """Resolves published device attributes to the device nodes of this machine."""

    proc: Path = Path("/proc/driver/nvidia")
    dev: Path = Path("/dev")
    mig_ids: MigIds = _no_mig_ids
    _gpus: dict[str, GpuNode] | None = field(default=None, repr=False)

    def gpus(self) -> dict[str, GpuNode]:
        """This machine's GPUs by UUID (read once; empty without the NVIDIA driver)."""
        if self._gpus is None:
            self._gpus = {}
            for info in sorted((self.proc / "gpus").glob("*/information")):
                node = _parse_information(info.read_text(errors="replace"), info.parent.name)
                if node is not None:
                    self._gpus[node.uuid] = node
        return self._gpus

    def for_devices(self, devices: list[dict[str, str]]) -> list[Path]:
        """The nodes for these devices (published string attributes), common ones included
        when any device is real; empty for simulated devices."""
        nodes: list[Path] = []
        for attributes in devices:
            for node in self._nodes_of(attributes):
                if node not in nodes:
                    nodes.append(node)
        if nodes:
            nodes += [self.dev / n for n in COMMON_NODES if (self.dev / n).exists()]
        return nodes

    def buses(self, devices: list[dict[str, str]]) -> list[str]:
        """The PCI bus IDs of the real GPUs behind these devices (MIG: the parent's)."""
        found = []
        for attributes in devices:
            gpu = self.gpus().get(_gpu_uuid(attributes))
            if gpu is not None and gpu.bus not in found:
                found.append(gpu.bus)
        return found

    def _nodes_of(self, attributes: dict[str, str]) -> list[Path]:
        gpu = self.gpus().get(_gpu_uuid(attributes))
        if gpu is None:
            return []
        nodes = [self.dev / f"nvidia{gpu.minor}"]
        if attributes.get("type") == "mig":
            nodes += self._mig_caps(gpu.minor, attributes.get("uuid", ""))
        return nodes

    def _mig_caps(self, minor: int, uuid: str) -> list[Path]:
        ids = self.mig_ids(uuid) if uuid else None
        if ids is None:
            return []
        instance = self.proc / "capabilities" / f"gpu{minor}" / "mig" / f"gi{ids[0]}"
        caps = []
        for access in (instance / "access", instance / f"ci{ids[1]}" / "access"):
            number = _file_minor(access)
            if number is not None:
                caps.append(self.dev / "nvidia-caps" / f"nvidia-cap{number}")
        return caps


def _gpu_uuid(attributes: dict[str, str]) -> str:
    if attributes.get("type") == "mig":
        return attributes.get("parentUUID", "")
    return attributes.get("uuid", "")


def _parse_information(text: str, bus: str) -> GpuNode | None:
    uuid = re.search(r"^GPU UUID:\s*(\S+)", text, re.MULTILINE)
    minor = re.search(r"^Device Minor:\s*(\d+)", text, re.MULTILINE)
    if uuid is None or minor is None:
        return None
    return GpuNode(uuid.group(1), int(minor.group(1)), bus)


def _file_minor(access: Path) -> int | None:
    try:
        found = re.search(r"DeviceFileMinor:\s*(\d+)", access.read_text())
    except OSError:
        return None
    return int(found.group(1)) if found else None
