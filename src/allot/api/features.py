"""The DRA feature gates of Kubernetes 1.36 that change API or allocation behaviour.

One flat record, passed explicitly to validation and the allocator, so that a
scenario can say which cluster it models. Defaults are Kubernetes 1.36's: GA and beta gates
on, alpha gates off. Field names are the gate names in snake_case, sorted alphabetically.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from typing import Any


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
    def from_mapping(cls, values: dict[str, Any]) -> Features:
        """Build from gate names as Kubernetes spells them (``DRAConsumableCapacity``; its
        letter case matters, as kube-scheduler's ``--feature-gates``), with a lower-case
        first word (``draConsumableCapacity``), as the Go allocator's ``Features`` fields
        (``ConsumableCapacity``, ``DeviceBinding``) or snake_case
        (``dra_consumable_capacity``). Values are booleans or the strings Go's
        ``strconv.ParseBool`` reads. An unknown name raises ``UnknownFeatureGate`` listing
        the known ones (naming the gate a name differs from only in letter case), a bad
        value ``InvalidFeatureGateValue``."""
        normalized: dict[str, bool] = {}
        for name, value in values.items():
            keys = _field_names(name)
            if not keys:
                raise UnknownFeatureGate(name)
            for key in keys:
                normalized[key] = _parse_bool(name, value)
        return cls(**normalized)


class FeatureGateError(ValueError):
    """A feature gate setting that cannot be read."""


class UnknownFeatureGate(FeatureGateError, KeyError):
    """A feature gate name none of the accepted spellings knows."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        known = ", ".join(known_gates())
        close = _spellings().get(self.name.lower().replace("_", ""))
        if close:
            return (
                f"unknown feature gate {self.name!r}: gate names are case-sensitive, did you "
                f"mean {close!r}? (known: {known})"
            )
        return f"unknown feature gate {self.name!r} (known: {known})"


class InvalidFeatureGateValue(FeatureGateError):
    """A gate's value that is not a boolean (Go's ``strconv.ParseBool``)."""

    def __init__(self, name: str, value: Any) -> None:
        super().__init__(
            f"invalid value of {name}={value}, err: strconv.ParseBool: parsing "
            f'"{value}": invalid syntax'
        )


_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def _parse_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip() if isinstance(value, str | int) else None
    if text not in _TRUE | _FALSE:
        raise InvalidFeatureGateValue(name, value)
    return text in _TRUE


# The Go allocator's Features fields whose names are not the gate's without "DRA".
_ALLOCATOR_FIELDS = {
    "DeviceBinding": ("dra_device_binding_conditions",),
    "DeviceStatus": ("dra_resource_claim_device_status",),
    "DeviceBindingAndStatus": (
        "dra_device_binding_conditions",
        "dra_resource_claim_device_status",
    ),
}


def known_gates() -> list[str]:
    """The gates as Kubernetes spells them, for messages."""
    return [_gate_name(f.name) for f in fields(Features)]


def _gate_name(field_name: str) -> str:
    """``dra_admin_access`` -> ``DRAAdminAccess``."""
    return "DRA" + "".join(part.title() for part in field_name.split("_")[1:])


def _field_names(name: str) -> tuple[str, ...]:
    return _accepted().get(name, ())


@cache
def _accepted() -> dict[str, tuple[str, ...]]:
    """Every accepted spelling, exactly, with the fields it sets."""
    accepted: dict[str, tuple[str, ...]] = dict(_ALLOCATOR_FIELDS)
    for field in fields(Features):
        gate = _gate_name(field.name)
        for spelling in (gate, "dra" + gate[3:], gate[3:], field.name):
            accepted[spelling] = (field.name,)
    return accepted


@cache
def _spellings() -> dict[str, str]:
    """Kubernetes' name of each gate by its letters alone (lower case, no ``_``)."""
    spellings = {}
    for spelling, keys in _accepted().items():
        if len(keys) == 1:
            spellings[spelling.lower().replace("_", "")] = _gate_name(keys[0])
    return spellings


KUBERNETES_1_36 = Features()
