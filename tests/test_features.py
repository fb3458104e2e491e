"""Feature gate names: as Kubernetes spells them, as the Go allocator's fields, snake_case."""

from __future__ import annotations

import pytest

from allot.api.features import Features, InvalidFeatureGateValue, UnknownFeatureGate, known_gates


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


@pytest.mark.parametrize("name", ["draprioritizedlist", "DRAPRIORITIZEDLIST", "DraPrioritizedList"])
def test_gate_names_are_case_sensitive_as_kubernetes_parses_them(name: str) -> None:
    # component-base's featuregate looks the name up exactly ("unrecognized feature gate")
    with pytest.raises(UnknownFeatureGate) as raised:
        Features.from_mapping({name: False})
    assert str(raised.value).startswith(
        f"unknown feature gate {name!r}: gate names are case-sensitive, "
        "did you mean 'DRAPrioritizedList'?"
    )


@pytest.mark.parametrize(
    ("value", "enabled"),
    [("false", False), ("False", False), ("0", False), ("t", True), ("TRUE", True), (1, True)],
)
def test_gate_values_read_as_gos_parse_bool(value: object, enabled: bool) -> None:
    assert Features.from_mapping({"DRADeviceTaints": value}).dra_device_taints is enabled


def test_a_gate_value_that_is_no_boolean_is_refused() -> None:
    with pytest.raises(InvalidFeatureGateValue) as raised:
        Features.from_mapping({"DRADeviceTaints": "off"})
    assert str(raised.value) == (
        'invalid value of DRADeviceTaints=off, err: strconv.ParseBool: parsing "off": '
        "invalid syntax"
    )
