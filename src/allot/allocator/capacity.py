"""Consumable capacity: what a request consumes of a device's capacities (incubating v0.36.3).

For every capacity of the device: the requested amount is rounded up by the capacity's
``requestPolicy`` (``validRange`` steps or the next ``validValues`` entry), defaults to the
policy's ``default`` or the whole capacity when not requested, and must fit beside what is
already consumed (allocated shares plus the shares chosen in this allocation). A request
naming a capacity the device lacks cannot use it. Called by the search for every candidate.
"""

from __future__ import annotations

from allot.api import resource_v1 as resourceapi
from allot.api.quantity import Quantity

Consumption = dict[str, Quantity]


def _ceil_steps(amount: Quantity, low: Quantity, step: Quantity) -> Quantity:
    steps = -(-(amount.nanos - low.nanos) // step.nanos)
    return Quantity(low.nanos + steps * step.nanos, low.format)


def consumed_amount(
    capacity: resourceapi.DeviceCapacity, requested: Quantity | None
) -> Quantity | None:
    """What a request consumes of one capacity; None when the policy forbids it."""
    value = capacity.value or Quantity(0)
    policy = capacity.request_policy
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else value
    if policy is None:
        return requested
    consumed = requested
    valid_range = policy.valid_range
    if valid_range is not None and valid_range.min is not None:
        if requested < valid_range.min:
            consumed = valid_range.min
        elif valid_range.step is not None and valid_range.step.nanos > 0:
            consumed = _ceil_steps(requested, valid_range.min, valid_range.step)
    elif policy.valid_values:
        consumed = next((v for v in policy.valid_values if v >= requested), requested)
    return None if _violates_policy(consumed, policy) else consumed


def _violates_policy(consumed: Quantity, policy: resourceapi.CapacityRequestPolicy) -> bool:
    # Upstream compares with the default by representation, not by value (ledger 5.15.9).
    if policy.default is not None and consumed.canonical() == policy.default.canonical():
        return False
    valid_range = policy.valid_range
    if valid_range is not None and valid_range.min is not None:
        if valid_range.max is not None and consumed > valid_range.max:
            return True
        step = valid_range.step
        return (
            step is not None
            and step.nanos > 0
            and (consumed.nanos - valid_range.min.nanos) % step.nanos != 0
        )
    if policy.valid_values:
        return consumed not in policy.valid_values
    return False


def consumption(
    device: resourceapi.Device,
    requests: dict[str, Quantity],
    already: Consumption,
    in_flight: Consumption,
) -> Consumption | None:
    """The device's consumption for this request, or None when it cannot serve it."""
    capacities = device.capacity or {}
    if any(name not in capacities for name in requests):
        return None
    result: Consumption = {}
    for name, capacity in capacities.items():
        amount = consumed_amount(capacity, requests.get(name))
        if amount is None:
            return None
        total = (
            amount.nanos
            + already.get(name, Quantity(0)).nanos
            + in_flight.get(name, Quantity(0)).nanos
        )
        if total > (capacity.value or Quantity(0)).nanos:
            return None
        result[name] = amount
    return result
