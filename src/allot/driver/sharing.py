"""What the NVIDIA driver does with a claim's sharing configs at prepare: time-slicing, MPS.

The kubelet plugin applies each chosen ``GpuConfig``/``MigDeviceConfig`` ``sharing`` over
the devices that config covers (one group per config entry), as ``applySharingConfig``
does (nvidia-driver reference §3.3):

* **TimeSlicing** on full GPUs: the compute mode set to ``DEFAULT``, then ``nvidia-smi
  compute-policy -i <uuid> --set-timeslice <0..3>`` (Default, Short, Medium, Long) per GPU,
  sorted by UUID; MIG devices get nothing (the API has no interval for them).
* **MPS**: one control daemon per claim and config group, named
  ``mps-control-daemon-<claim uid>-<first 5 hex of sha256(the devices' sorted UUIDs)>``,
  started with ``nvidia-cuda-mps-control -d`` (``-M`` with ``multiUser``), then
  ``set_default_active_thread_percentage <p>`` and
  ``set_default_device_pinned_mem_limit <uuid> <MiB>M`` per device (the default limit for
  every device, then the per-device ones keyed by UUID or by index into the sorted UUIDs);
  containers get ``CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps`` with the daemon's pipe and
  shared-memory directories bound at ``/tmp/nvidia-mps`` and ``/dev/shm``.

Beyond the driver (docs/conformance.md): with consumable shares a device's memory is split
between claims, and an MPS config's pinned limit on a device defaults to (and is capped at)
the memory the claim consumed of it, so MPS enforces the share; the upstream driver refuses
MPS in that mode because its daemon makes the GPU ``EXCLUSIVE_PROCESS``, which allot never
does. Errors are the driver's texts (:class:`~allot.driver.configs.DriverConfigError`).
Pure: builds the plan; ``allot.controllers.sharing`` carries it out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from allot.api.errors import QuantityError
from allot.api.quantity import Quantity, QuantityFormat
from allot.driver.configs import ChosenConfig, DriverConfigError

INTERVALS = {"Default": 0, "Short": 1, "Medium": 2, "Long": 3}
MPS_PIPE = "/tmp/nvidia-mps"  # where a container finds its MPS daemon's pipes
SHM = "/dev/shm"
MIB = 2**20


@dataclass(frozen=True)
class TimeSlicing:
    """A time-slice interval for the full GPUs of one config group."""

    interval: str
    gpu_uuids: tuple[str, ...]

    @property
    def value(self) -> int:
        return INTERVALS[self.interval]

    def commands(self) -> list[list[str]]:
        """What the driver runs, in order: the compute mode, then the timeslice, per GPU."""
        modes = [["nvidia-smi", "-i", uuid, "-c", "DEFAULT"] for uuid in self.gpu_uuids]
        slices = [
            ["nvidia-smi", "compute-policy", "-i", uuid, "--set-timeslice", str(self.value)]
            for uuid in self.gpu_uuids
        ]
        return [*modes, *slices]


@dataclass(frozen=True)
class MpsDaemon:
    """One MPS control daemon: the devices it serves and the limits it sets."""

    id: str
    uuids: tuple[str, ...]  # sorted
    thread_percentage: int | None
    pinned_limits: tuple[tuple[str, str], ...]  # (uuid, "<MiB>M"), by uuid
    multi_user: bool
    gpus: tuple[str, ...] = ()  # the physical GPUs' UUIDs (a MIG device's parent), sorted

    @property
    def name(self) -> str:
        return f"mps-control-daemon-{self.id}"

    def start_argv(self, *, foreground: bool = False) -> list[str]:
        """``nvidia-cuda-mps-control -d`` (``-f``: in the foreground, for a supervisor)."""
        return ["nvidia-cuda-mps-control", "-f" if foreground else "-d"] + (
            ["-M"] if self.multi_user else []
        )

    def control_commands(self) -> list[str]:
        """The commands written to the daemon once it runs, in the driver's order."""
        commands = []
        if self.thread_percentage is not None:
            commands.append(f"set_default_active_thread_percentage {self.thread_percentage}")
        commands += [
            f"set_default_device_pinned_mem_limit {uuid} {limit}"
            for uuid, limit in self.pinned_limits
        ]
        return commands


@dataclass
class ClaimSharing:
    """Everything the claim's sharing configs ask for, and what each device shows."""

    time_slicing: list[TimeSlicing] = field(default_factory=list)
    daemons: list[MpsDaemon] = field(default_factory=list)
    shown: dict[str, dict[str, str]] = field(default_factory=dict)  # device -> attributes
    configs: dict[str, Any] = field(default_factory=dict)  # device -> normalized config

    def daemon_of(self, device_uuid: str) -> MpsDaemon | None:
        return next((d for d in self.daemons if device_uuid in d.uuids), None)


def plan(
    claim_uid: str,
    chosen: list[ChosenConfig],
    devices: Mapping[str, Mapping[str, str]],
    consumed: Mapping[str, int],
    dynamic: frozenset[str] = frozenset(),
) -> ClaimSharing:
    """The claim's sharing: ``devices`` maps each device name to its prepared attributes
    (``uuid``, ``type``), ``consumed`` to the memory its allocation consumed (consumable
    shares), ``dynamic`` names the DynamicMIG devices."""
    result = ClaimSharing(configs={c.device: normalized(c.parameters) for c in chosen})
    for parameters, names in _groups(chosen):
        sharing = parameters.get("sharing") or {}
        strategy = sharing.get("strategy")
        if strategy == "TimeSlicing":
            _time_slicing(result, sharing, names, devices)
        elif strategy == "MPS":
            if any(n in dynamic for n in names):
                raise DriverConfigError(
                    "error applying config: MPS is not yet supported when using "
                    "featureGates.DynamicMIG=true"
                )
            _mps(result, claim_uid, sharing.get("mpsConfig") or {}, names, devices, consumed)
    for name, amount in consumed.items():
        result.shown.setdefault(name, {})["memoryShare"] = str(
            Quantity.from_int(amount, QuantityFormat.BINARY_SI)
        )
    return result


def _groups(chosen: list[ChosenConfig]) -> list[tuple[Mapping[str, Any], list[str]]]:
    """The devices of each config entry, in the order the entries are first chosen."""
    groups: dict[int, tuple[Mapping[str, Any], list[str]]] = {}
    for config in chosen:
        if config.parameters is not None and config.parameters.get("sharing"):
            groups.setdefault(id(config.parameters), (config.parameters, []))[1].append(
                config.device
            )
    return list(groups.values())


def _time_slicing(
    result: ClaimSharing,
    sharing: Mapping[str, Any],
    names: list[str],
    devices: Mapping[str, Mapping[str, str]],
) -> None:
    interval = str((sharing.get("timeSlicingConfig") or {}).get("interval") or "Default")
    gpus = sorted(devices[n]["uuid"] for n in names if devices[n].get("type", "gpu") == "gpu")
    result.time_slicing.append(TimeSlicing(interval, tuple(gpus)))
    for name in names:
        shown = result.shown.setdefault(name, {"sharing": "TimeSlicing"})
        if devices[name].get("type", "gpu") == "gpu":
            shown["timeslice"] = interval


def _mps(
    result: ClaimSharing,
    claim_uid: str,
    mps: Mapping[str, Any],
    names: list[str],
    devices: Mapping[str, Mapping[str, str]],
    consumed: Mapping[str, int],
) -> None:
    uuids = sorted(devices[n]["uuid"] for n in names)
    digest = hashlib.sha256(",".join(uuids).encode()).hexdigest()[:5]
    limits = _pinned_limits(mps, uuids)
    for name in names:  # a consumed share caps the limit (and is it, where none is set)
        uuid, share = devices[name]["uuid"], consumed.get(name)
        if share is not None and share // MIB > 0:
            limits[uuid] = min(limits.get(uuid, share // MIB), share // MIB)
    percentage = mps.get("defaultActiveThreadPercentage")
    daemon = MpsDaemon(
        f"{claim_uid}-{digest}",
        tuple(uuids),
        None if percentage is None else int(percentage),
        tuple((uuid, f"{limits[uuid]}M") for uuid in sorted(limits)),
        bool(mps.get("multiUser")),
        tuple(sorted({devices[n].get("parentUUID") or devices[n]["uuid"] for n in names})),
    )
    result.daemons.append(daemon)
    for name in names:
        shown = {"sharing": "MPS", "mpsDaemon": daemon.name}
        if daemon.thread_percentage is not None:
            shown["activeThreadPercentage"] = str(daemon.thread_percentage)
        limit = dict(daemon.pinned_limits).get(devices[name]["uuid"])
        if limit is not None:
            shown["pinnedMemoryLimit"] = limit
        result.shown[name] = shown


def _pinned_limits(mps: Mapping[str, Any], uuids: list[str]) -> dict[str, int]:
    """MiB per device UUID: the default for every device, then the per-device entries
    (a UUID, or an index into the sorted UUIDs), as the driver normalizes them."""
    prefix = (
        "error applying config: error starting MPS control daemon: error transforming "
        "DefaultPerDevicePinnedMemoryLimit into string: "
    )
    limits: dict[str, int] = {}
    default = mps.get("defaultPinnedDeviceMemoryLimit")
    if default is not None and uuids:
        mib = _mib(default)
        if mib <= 0:
            raise DriverConfigError(f"{prefix}invalid limit: default value set too low: {default}")
        limits = dict.fromkeys(uuids, mib)
    for key, value in (mps.get("defaultPerDevicePinnedMemoryLimit") or {}).items():
        uuid = _device_key(str(key), uuids, prefix)
        mib = _mib(value)
        if mib <= 0:
            raise DriverConfigError(f"{prefix}invalid limit: value set too low: {key}: {value}")
        limits[uuid] = mib
    return limits


def _device_key(key: str, uuids: list[str], prefix: str) -> str:
    if key in uuids:
        return key
    try:
        index = int(key)
    except ValueError:
        raise DriverConfigError(
            f"{prefix}invalid device: unable to parse key as an integer: {key}"
        ) from None
    if not 0 <= index < len(uuids):
        raise DriverConfigError(f"{prefix}invalid device: invalid device index: {index}")
    return uuids[index]


def _mib(value: Any) -> int:
    """Whole MiB of a quantity, rounded down as the driver's ``Megabyte()``."""
    try:
        return Quantity.parse(str(value)).as_integer() // MIB
    except QuantityError as err:
        raise DriverConfigError(f"error decoding config: {err}") from None


def normalized(parameters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A config as the driver compares two claims' configs of one shared device: its
    sharing with the defaults filled in (None: no sharing, as the built-in default)."""
    if parameters is None:
        return None
    sharing = dict(parameters.get("sharing") or {})
    if sharing.get("strategy") == "TimeSlicing" and parameters.get("kind") == "GpuConfig":
        sharing["timeSlicingConfig"] = {
            "interval": (sharing.get("timeSlicingConfig") or {}).get("interval") or "Default"
        }
    if sharing.get("strategy") == "MPS":
        sharing["mpsConfig"] = dict(sharing.get("mpsConfig") or {})
    return sharing or None


def container_environment(devices: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """The variables a container of these devices (prepared attributes with their
    ``plan`` entries) gets for their sharing: ``CUDA_MPS_PIPE_DIRECTORY`` as the driver
    sets it for MPS, and allot's own ``ALLOT_GPU_SHARING`` (``<uuid>=<strategy>``),
    ``ALLOT_GPU_TIMESLICE``, ``ALLOT_MPS_ACTIVE_THREAD_PERCENTAGE``,
    ``ALLOT_MPS_PINNED_DEVICE_MEM_LIMIT`` and ``ALLOT_GPU_MEMORY_SHARE`` (each a
    comma-separated ``<uuid>=<value>`` list), so that a workload can see what it got."""
    keys = {
        "ALLOT_GPU_SHARING": "sharing",
        "ALLOT_GPU_TIMESLICE": "timeslice",
        "ALLOT_MPS_ACTIVE_THREAD_PERCENTAGE": "activeThreadPercentage",
        "ALLOT_MPS_PINNED_DEVICE_MEM_LIMIT": "pinnedMemoryLimit",
        "ALLOT_GPU_MEMORY_SHARE": "memoryShare",
    }
    environment = {}
    for variable, key in keys.items():
        values = [f"{d.get('uuid', '')}={d[key]}" for d in devices if d.get(key)]
        if values:
            environment[variable] = ",".join(values)
    if any(d.get("sharing") == "MPS" for d in devices):
        environment["CUDA_MPS_PIPE_DIRECTORY"] = MPS_PIPE
    return environment
