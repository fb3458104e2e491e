"""Feature gate names: as Kubernetes spells them, as the Go allocator's fields, snake_case."""

from __future__ import annotations

import pytest

from allot.api.features import Features, UnknownFeatureGate, known_gates


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("DRAConsumableCapacity", "dra_consumable_capacity"),
        ("DRAPartitionableDevices", "dra_partitionable_devices"),
        ("DRAPrioritizedList", "dra_prioritized_list"),
        ("DRADeviceTaints", "dra_device_taints"),
        ("DRAAdminAccess", "dra_admin_access"),
        ("DRADeviceBindingConditions", "dra_device_binding_conditions"),
        ("DRAResourceClaimDeviceStatus", "dra_resource_claim_device_status"),
        ("DRAListTypeAttributes", "dra_list_type_attributes"),
        ("ConsumableCapacity", "dra_consumable_capacity"),
        ("PartitionableDevices", "dra_partitionable_devices"),
        ("PrioritizedList", "dra_prioritized_list"),
        ("DeviceTaints", "dra_device_taints"),
        ("AdminAccess", "dra_admin_access"),
        ("DeviceBinding", "dra_device_binding_conditions"),
        ("DeviceStatus", "dra_resource_claim_device_status"),
        ("dra_admin_access", "dra_admin_access"),
        ("draAdminAccess", "dra_admin_access"),
    ],
)
def test_every_spelling_turns_its_gate(name: str, field: str) -> None:
    default = getattr(Features(), field)
    assert getattr(Features.from_mapping({name: not default}), field) is (not default)


def test_the_allocators_combined_field_sets_both_gates() -> None:
    features = Features.from_mapping({"DeviceBindingAndStatus": False})
    assert not features.dra_device_binding_conditions
    assert not features.dra_resource_claim_device_status


def test_an_unknown_gate_lists_the_known_ones() -> None:
    with pytest.raises(UnknownFeatureGate) as raised:
        Features.from_mapping({"DRAConsumableCapacityy": True})
    text = str(raised.value)
    assert text.startswith("unknown feature gate 'DRAConsumableCapacityy' (known: DRAAdminAccess,")
    assert all(gate in text for gate in known_gates())
    assert len(known_gates()) == 9
