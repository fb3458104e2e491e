"""The DRA feature gates of Kubernetes 1.36 that change API or allocation behaviour.

One flat record, passed explicitly to validation and the allocator, so that a
scenario can say which cluster it models. Defaults are Kubernetes 1.36's: GA and beta gates
on, alpha gates off. Field names are the gate names in snake_case, sorted alphabetically.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Features:
    dra_admin_access: bool = True
    dra_consumable_capacity: bool = True
    dra_device_binding_conditions: bool = True
    dra_device_taints: bool = True
    dra_extended_resource: bool = True
    dra_list_type_attributes: bool = False
    dra_partitionable_devices: bool = True
    dra_prioritized_list: bool = True
    dra_resource_claim_device_status: bool = True

    @classmethod
    def from_mapping(cls, values: dict[str, bool]) -> Features:
        """Build from gate names as Kubernetes spells them (``DRAConsumableCapacity``), the
        Go allocator's ``Features`` field names (``ConsumableCapacity``, ``DeviceBinding``)
        or snake_case (``dra_consumable_capacity``); an unknown name raises
        ``UnknownFeatureGate`` listing the known ones."""
        normalized: dict[str, bool] = {}
        for name, value in values.items():
            keys = _field_names(name)
            if not keys:
                raise UnknownFeatureGate(name)
            for key in keys:
                normalized[key] = bool(value)
        return cls(**normalized)


class UnknownFeatureGate(KeyError):
    """A feature gate name none of the accepted spellings knows."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown feature gate {self.name!r} (known: {', '.join(known_gates())})"


# The Go allocator's Features fields whose names are not the gate's without "DRA".
_ALLOCATOR_FIELDS = {
    "device_binding": ("dra_device_binding_conditions",),
    "device_status": ("dra_resource_claim_device_status",),
    "device_binding_and_status": (
        "dra_device_binding_conditions",
        "dra_resource_claim_device_status",
    ),
}


def known_gates() -> list[str]:
    """The gates as Kubernetes spells them, for messages."""
    return ["DRA" + "".join(p.title() for p in f.name.split("_")[1:]) for f in fields(Features)]


def _field_names(name: str) -> tuple[str, ...]:
    known = {f.name for f in fields(Features)}
    key = _snake(name)
    if key in known:
        return (key,)
    if key in _ALLOCATOR_FIELDS:
        return _ALLOCATOR_FIELDS[key]
    if f"dra_{key}" in known:
        return (f"dra_{key}",)
    return ()


def _snake(name: str) -> str:
    """``DRAAdminAccess`` -> ``dra_admin_access``; ``dra_admin_access`` stays."""
    out = []
    for index, char in enumerate(name):
        if char.isupper() and index:
            before = name[index - 1]
            after = name[index + 1] if index + 1 < len(name) else ""
            if before.islower() or before.isdigit() or (before.isupper() and after.islower()):
                out.append("_")
        out.append(char.lower())
    return "".join(out)


KUBERNETES_1_36 = Features()
