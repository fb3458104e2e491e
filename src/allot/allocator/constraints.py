"""Claim constraints: ``matchAttribute`` and ``distinctAttribute`` (incubating v0.36.3).

Each tracker follows upstream's contract: every successful ``add`` is later undone by
exactly one ``remove`` when the search backtracks. Attribute lookup for ``domain/id`` tries
the exact key, then the bare ``id`` when the domain is the device's driver; a device without
the attribute never satisfies a constraint. Quirk kept from upstream (ledger 5.15.1):
``distinctAttribute`` remembers one value per *request*, so within a single request with
three or more devices the first and third may share a value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from allot.allocator.pools import PoolDevice
from allot.api import resource_v1 as resourceapi


def attribute_value(device: PoolDevice, qualified_name: str) -> tuple[str, Any] | None:
    """The (type, value) of a fully qualified attribute on ``device``, or None."""
    attributes = device.device.attributes or {}
    attribute = attributes.get(qualified_name)
    if attribute is None:
        domain, _, identifier = qualified_name.partition("/")
        if domain == device.id[0]:
            attribute = attributes.get(identifier)
    if attribute is None:
        return None
    for kind, value in (
        ("int", attribute.int_),
        ("bool", attribute.bool_),
        ("string", attribute.string),
        ("version", attribute.version),
    ):
        if value is not None:
            return kind, value
    return None


def _applies(requests: list[str], request_name: str) -> bool:
    if not requests:
        return True
    parent = request_name.split("/", 1)[0]
    return request_name in requests or parent in requests


@dataclass
class MatchAttribute:
    requests: list[str]
    attribute: str
    reference: tuple[str, Any] | None = None
    count: int = 0

    def applies_to(self, request_name: str) -> bool:
        return _applies(self.requests, request_name)

    def add(self, request_name: str, device: PoolDevice) -> bool:
        value = attribute_value(device, self.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.reference = value
        elif value != self.reference:
            return False
        self.count += 1
        return True

    def remove(self, request_name: str, device: PoolDevice) -> None:
        self.count -= 1
        if self.count == 0:
            self.reference = None


@dataclass
class DistinctAttribute:
    requests: list[str]
    attribute: str
    values: dict[str, tuple[str, Any]] = field(default_factory=dict)

    def applies_to(self, request_name: str) -> bool:
        return _applies(self.requests, request_name)

    def add(self, request_name: str, device: PoolDevice) -> bool:
        value = attribute_value(device, self.attribute)
        if value is None or value in self.values.values():
            return False
        self.values[request_name] = value
        return True

    def remove(self, request_name: str, device: PoolDevice) -> None:
        self.values.pop(request_name, None)


Constraint = MatchAttribute | DistinctAttribute


def build_constraint(
    constraint: resourceapi.DeviceConstraint, *, distinct_enabled: bool
) -> Constraint | None:
    """The tracker for one claim constraint, or None when it names no attribute."""
    requests = list(constraint.requests or [])
    if constraint.match_attribute:
        return MatchAttribute(requests, constraint.match_attribute)
    if distinct_enabled and constraint.distinct_attribute:
        return DistinctAttribute(requests, constraint.distinct_attribute)
    return None
