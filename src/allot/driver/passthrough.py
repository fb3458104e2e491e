"""PassthroughSupport's twins: a GPU and its VFIO twin are one physical device.

With the gate on, the driver publishes ``gpu-<minor>`` and ``gpu-vfio-<index>`` for the
same GPU (the same ``resource.kubernetes.io/pciBusID``). Once either is prepared, the driver
removes the other from its slice until the claim is unprepared, and a claim prepared on the
hidden twin is refused as the driver refuses a device it no longer has (``allocatable not
found for device ...``). :func:`twins_of` finds the twins of prepared devices in a node's
slices (:func:`gpus_of` the GPUs they are), :func:`without` and :func:`restored` edit slice
specs. Pure; the node agent's
:mod:`allot.controllers.passthrough` applies them.
"""

from __future__ import annotations

from collections.abc import Iterable

from allot.types import Obj

PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
TWIN_TYPES = ("gpu", "vfio")


def _type(device: Obj) -> str:
    return str(((device.get("attributes") or {}).get("type") or {}).get("string", ""))


def bus_id(device: Obj) -> str | None:
    value = ((device.get("attributes") or {}).get(PCI_BUS_ID) or {}).get("string")
    return str(value) if value else None


def gpus_of(slices: list[Obj], devices: Iterable[str]) -> list[str]:
    """The PCI bus IDs of the GPUs ``devices`` (of the twin types) are published for."""
    wanted = set(devices)
    return sorted(
        {
            str(bus_id(d))
            for s in slices
            for d in s["spec"].get("devices") or []
            if d.get("name") in wanted and _type(d) in TWIN_TYPES and bus_id(d)
        }
    )


def twins_of(slices: list[Obj], devices: Iterable[str]) -> list[tuple[str, Obj]]:
    """(slice name, device) of each published twin of ``devices`` (a gpu's vfio twin, a
    vfio device's gpu): same PCI bus ID, the other of the two types."""
    published = [
        (str(s["metadata"]["name"]), d) for s in slices for d in s["spec"].get("devices") or []
    ]
    wanted = set(devices)
    keys = {
        (bus_id(d), _type(d))
        for _, d in published
        if d.get("name") in wanted and _type(d) in TWIN_TYPES and bus_id(d)
    }
    return [
        (name, d)
        for name, d in published
        if _type(d) in TWIN_TYPES
        and d.get("name") not in wanted
        and any(bus_id(d) == bus and _type(d) != kind for bus, kind in keys)
    ]


def without(spec: Obj, names: set[str]) -> Obj:
    """The slice spec with the devices ``names`` removed."""
    return {**spec, "devices": [d for d in spec.get("devices") or [] if d.get("name") not in names]}


def restored(spec: Obj, devices: list[Obj]) -> Obj:
    """The slice spec with ``devices`` published again (those not already there)."""
    present = {d.get("name") for d in spec.get("devices") or []}
    back = [d for d in devices if d.get("name") not in present]
    return {**spec, "devices": [*(spec.get("devices") or []), *back]}


def not_found(device: str) -> str:
    """The driver's words for a prepare on a device it no longer publishes."""
    return f'allocatable not found for device "{device}"'
