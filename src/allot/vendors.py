"""The device drivers allot knows, read vendor-neutrally: one fact sheet per DRA driver.

allot's core (lint, metrics, the dashboard, doctor, the node agent, the scheduler's hints)
never names a vendor: what a driver's devices mean comes from its :class:`DriverFacts`,
written once in that vendor's own package (the NVIDIA driver in :mod:`allot.driver`, the
AMD driver in :mod:`allot.amdgpu`) and collected here. A fact sheet says which ``type``
attribute values are whole GPUs and which are partitions (NVIDIA's MIG devices, AMD's
compute partitions), which attribute names a partition's profile and its parent GPU, the
DeviceClasses the driver's chart installs, and what a container given its devices sees
(environment, CDI spec name, the vendor's ``-smi`` tool). Every GPU driver publishes its
model as ``productName`` and its memory as the ``memory`` capacity, so those need no
entry. A driver no sheet describes is treated as whole devices of unknown kind. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from allot.amdgpu import vendor as amdgpu_vendor
from allot.driver import vendor as gpu_vendor
from allot.types import Obj
from allot.vendorfacts import DRIVER_KEY, Devices, DriverFacts, SmiTool

KNOWN: dict[str, DriverFacts] = {
    facts.driver: facts for facts in (*gpu_vendor.FACTS, *amdgpu_vendor.FACTS)
}
UNKNOWN = DriverFacts(driver="", vendor="")
__all__ = ["DRIVER_KEY", "KNOWN", "DriverFacts", "SmiTool"]


def facts_for(driver: str) -> DriverFacts:
    return KNOWN.get(driver) or UNKNOWN


def gpu_drivers() -> list[DriverFacts]:
    """The drivers that publish GPUs (whole or partitioned), in a stable order."""
    return [f for f in KNOWN.values() if f.whole_types or f.partition_types]


def device_classes() -> list[Obj]:
    """Every DeviceClass the known drivers' charts install."""
    return [c for facts in KNOWN.values() for c in facts.classes]


def short_model(driver: str, product: str) -> str:
    """``productName`` without the vendor's prefix (``H100 80GB HBM3``)."""
    prefix = facts_for(driver).model_prefix
    return (product.removeprefix(prefix) if prefix else product).strip()


def partition_word(driver: str) -> str:
    return facts_for(driver).partition_word or "partition"


def profile_of(driver: str, attributes: Mapping[str, str]) -> str:
    """A partition's profile (``1g.10gb``, ``cpx_nps4``); "" for a whole GPU, even where its
    driver names the GPU's mode in the same attribute (an SPX MI300X's ``spx_nps1``)."""
    facts = facts_for(driver)
    if facts.kind(attributes.get("type", "")) != "partition":
        return ""
    return attributes.get(facts.profile_attribute, "")


def parent_of(driver: str, device: str, attributes: Mapping[str, str]) -> str:
    facts = facts_for(driver)
    if facts.kind(attributes.get("type", "")) != "partition":
        return ""
    return facts.parent(device, attributes)


def cdi_spec_name(drivers: Sequence[str], claim_uid: str) -> str:
    """The name of the claim's transient CDI spec (the first driver's naming)."""
    for driver in drivers:
        name = facts_for(driver).cdi_spec(claim_uid)
        if name:
            return name
    return f"k8s.{drivers[0] if drivers else 'allot.dev'}-claim_{claim_uid}"


def prepared(driver: str, device: str, attributes: dict[str, str]) -> dict[str, str]:
    """A device's attributes as its container sees them, tagged with its driver."""
    return {**facts_for(driver).prepared(device, attributes), DRIVER_KEY: driver}


def by_driver(devices: Devices) -> dict[str, list[Mapping[str, str]]]:
    grouped: dict[str, list[Mapping[str, str]]] = {}
    for device in devices:
        grouped.setdefault(device.get(DRIVER_KEY, ""), []).append(device)
    return grouped


def container_environment(devices: Devices) -> dict[str, str]:
    """The variables the drivers' CDI specs give a container with these devices."""
    environment: dict[str, str] = {}
    for driver, own in by_driver(devices).items():
        environment.update(facts_for(driver).environment(own))
    return environment


def smi_tools(devices: Devices) -> list[tuple[SmiTool, list[Mapping[str, str]]]]:
    """The vendors' tools a simulated container gets, each with its own devices."""
    return [
        (tool, own)
        for driver, own in by_driver(devices).items()
        if (tool := facts_for(driver).smi) is not None
    ]


_CLASS_TYPE = re.compile(r"""\.type\s*==\s*(["'])([^"']+)\1""")


def class_types() -> dict[str, tuple[str, str]]:
    """Each chart class that selects one device type: class name -> (driver, type). Class
    names look like drivers (``mig.nvidia.com``), so a selector may name one as a driver."""
    found: dict[str, tuple[str, str]] = {}
    for facts in KNOWN.values():
        for device_class in facts.classes:
            for selector in (device_class.get("spec") or {}).get("selectors") or []:
                match = _CLASS_TYPE.search(str((selector.get("cel") or {}).get("expression")))
                if match:
                    found[str(device_class["metadata"]["name"])] = (facts.driver, match.group(2))
    return found
