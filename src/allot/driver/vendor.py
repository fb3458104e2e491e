"""The NVIDIA DRA driver's fact sheet for allot's vendor-neutral core (:mod:`allot.vendors`).

Driver ``gpu.nvidia.com`` publishes whole GPUs (``type`` ``gpu``, and ``vfio`` with
PassthroughSupport) and MIG devices (``type`` ``mig``, their ``profile`` attribute, named
``gpu-<parent minor>-mig-...``). A container given its devices sees them through the
claim's transient CDI spec ``k8s.gpu.nvidia.com-claim_<uid>``; allot's simulated runtime
lists them with ``nvidia-smi -L`` and names their UUIDs in ``CUDA_VISIBLE_DEVICES`` and
``NVIDIA_VISIBLE_DEVICES`` (the conformance ledger says how that differs from the real
driver). A DynamicMIG device gets its UUID when prepare creates it. Read by
:mod:`allot.vendors`; everything vendor-specific stays in this package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from allot.driver.catalog import created_mig_uuid
from allot.driver.publisher import device_classes
from allot.driver.slices import DRIVER
from allot.driver.smi import list_gpus, shim_script
from allot.vendorfacts import DriverFacts, SmiTool

GATES = (
    "TimeSlicingSettings",
    "MPSSupport",
    "PassthroughSupport",
    "DynamicMIG",
    "NVMLDeviceHealthCheck",
)


def _parent(name: str, attributes: Mapping[str, str]) -> str:
    return name.split("-mig-")[0] if "-mig-" in name else attributes.get("parentUUID", "")


def _prepared(name: str, attributes: dict[str, str]) -> dict[str, str]:
    """A DynamicMIG device is published without ``uuid``: NVML gives it one at prepare."""
    if attributes.get("type") == "mig" and not attributes.get("uuid"):
        return {**attributes, "uuid": created_mig_uuid(attributes.get("parentUUID", ""), name)}
    return attributes


def _environment(devices: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """The GPUs' UUIDs; a passthrough (``vfio``) device is no CUDA device, and a container
    with only those gets the driver's VFIO spec's ``NVIDIA_VISIBLE_DEVICES=void``."""
    gpus = [d for d in devices if d.get("type") != "vfio"]
    if not gpus:
        return {"NVIDIA_VISIBLE_DEVICES": "void"} if devices else {}
    joined = ",".join(d.get("uuid", "") for d in gpus)
    return {"CUDA_VISIBLE_DEVICES": joined, "NVIDIA_VISIBLE_DEVICES": joined}


def _listing(devices: Sequence[Mapping[str, str]]) -> str:
    return list_gpus([dict(d) for d in devices])


def _script(devices: Sequence[Mapping[str, str]]) -> str:
    return shim_script([dict(d) for d in devices])


GPU = DriverFacts(
    driver=DRIVER,
    vendor="NVIDIA",
    whole_types=frozenset({"gpu", "vfio"}),
    partition_types=frozenset({"mig"}),
    partition_word="MIG",
    profile_attribute="profile",
    parent=_parent,
    model_prefix="NVIDIA ",
    classes=tuple(device_classes(passthrough=True)),
    cdi_spec=lambda uid: f"k8s.{DRIVER}-claim_{uid}",
    environment=_environment,
    prepared=_prepared,
    smi=SmiTool("nvidia-smi", _script, _listing, "nvidia-smi -L"),
    gates=GATES,
)
FACTS: tuple[DriverFacts, ...] = (GPU,)
