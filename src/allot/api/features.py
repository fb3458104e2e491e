"""The DRA feature gates of Kubernetes 1.36 that change API or allocation behaviour.

One flat record, passed explicitly to validation and (later) the allocator, so that a
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
        """Build from camelCase or snake_case gate names; unknown names raise KeyError."""
        known = {f.name for f in fields(cls)}
        normalized = {}
        for name, value in values.items():
            key = _snake(name)
            if key not in known:
                raise KeyError(name)
            normalized[key] = bool(value)
        return cls(**normalized)


def _snake(name: str) -> str:
    out = []
    for index, char in enumerate(name):
        if char.isupper() and index and not name[index - 1].isupper():
            out.append("_")
        out.append(char.lower())
    return "".join(out).replace("d_r_a", "dra")


KUBERNETES_1_36 = Features()
