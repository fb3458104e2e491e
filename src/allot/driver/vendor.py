"""The NVIDIA DRA driver's fact sheet for allot's vendor-neutral core (:mod:`allot.vendors`).

Driver ``gpu.nvidia.com`` publishes whole GPUs (``type`` ``gpu``, and ``vfio`` with
PassthroughSupport) and MIG devices (``type`` ``mig``, their ``profile`` attribute, named
``gpu-<parent minor>-mig-...``). A container given its devices sees them through the
claim's transient CDI spec ``k8s.gpu.nvidia.com-claim_<uid>``; allot's simulated runtime
lists them with ``nvidia-smi -L`` and names their UUIDs in ``CUDA_VISIBLE_DEVICES`` and
``NVIDIA_VISIBLE_DEVICES`` (the conformance ledger says how that differs from the real
driver). A DynamicMIG device gets its UUID when prepare creates it. Its
ComputeDomain half, driver ``compute-domain.nvidia.com``, publishes a ``channel`` and a
``daemon`` device per node, which are no GPUs. Read by :mod:`allot.vendors`; everything
vendor-specific stays in this package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from allot.driver import computedomain, sharing
from allot.driver.catalog import created_mig_uuid
from allot.driver.gates import CONSUMABLE_SHARES, DYNAMIC_MIG, HEALTH_CHECK, PASSTHROUGH
from allot.driver.publisher import device_classes
from allot.driver.slices import DRIVER
from allot.driver.smi import has_sharing, list_gpus, query, shim_script
from allot.vendorfacts import DriverFacts, SmiTool

GATES = (
    "TimeSlicingSettings",
    "MPSSupport",
    PASSTHROUGH,
    DYNAMIC_MIG,
    HEALTH_CHECK,
    CONSUMABLE_SHARES,
)
"""The gates allot's driver acts on (``allot.driver.gates`` knows the driver's others)."""


def _parent(name: str, attributes: Mapping[str, str]) -> str:
    return name.split("-mig-")[0] if "-mig-" in name else attributes.get("parentUUID", "")


def _prepared(name: str, attributes: dict[str, str]) -> dict[str, str]:
    """A DynamicMIG device is published without ``uuid``: NVML gives it one at prepare."""
    if attributes.get("type") == "mig" and not attributes.get("uuid"):
        return {**attributes, "uuid": created_mig_uuid(attributes.get("parentUUID", ""), name)}
    return attributes


def _environment(devices: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """The GPUs' UUIDs; a passthrough (``vfio``) device is no CUDA device, and a container
    with only those gets the driver's VFIO spec's ``NVIDIA_VISIBLE_DEVICES=void``; then
    the variables of the devices' sharing (:func:`allot.driver.sharing.container_environment`)."""
    gpus = [d for d in devices if d.get("type") != "vfio"]
    joined = ",".join(d.get("uuid", "") for d in gpus)
    environment = (
        {"CUDA_VISIBLE_DEVICES": joined, "NVIDIA_VISIBLE_DEVICES": joined}
        if gpus
        else {"NVIDIA_VISIBLE_DEVICES": "void"}
        if devices
        else {}
    )
    return {**environment, **sharing.container_environment(devices)}


def _listing(devices: Sequence[Mapping[str, str]]) -> str:
    return list_gpus([dict(d) for d in devices])


def _sharing(devices: Sequence[Mapping[str, str]], environment: Mapping[str, str]) -> str:
    """Shared devices' sharing as ``nvidia-smi -q`` shows it, and the variables it gives
    the container (as set in ``environment``, where it has them)."""
    own = [dict(d) for d in devices]
    if not has_sharing(own):
        return ""
    variables = sharing.container_environment(own)
    return (
        f"[allot] their sharing, as nvidia-smi -q shows it:\n{query(own)}"
        "[allot] its sharing variables:\n"
        + "".join(f"{k}={environment.get(k, v)}\n" for k, v in variables.items())
    )


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
    smi=SmiTool("nvidia-smi", _script, _listing, "nvidia-smi -L", _sharing),
    gates=GATES,
)
COMPUTE_DOMAIN = DriverFacts(
    driver=computedomain.DRIVER,
    vendor="NVIDIA",
    other_types=frozenset({"channel", "daemon"}),
    classes=tuple(computedomain.device_classes()),
)
"""The driver's ComputeDomain half: an IMEX channel and a daemon per node, no GPU."""
FACTS: tuple[DriverFacts, ...] = (GPU, COMPUTE_DOMAIN)
