"""The NVIDIA driver's feature gates: their defaults and the combinations it refuses.

``pkg/featuregates`` of the driver (v0.4 and main) registers each gate with a default and
refuses to start with gates that cannot go together (``DynamicMIG`` with
``PassthroughSupport``, ``NVMLDeviceHealthCheck`` or ``MPSSupport``;
``PassthroughSupport`` with ``NVMLDeviceHealthCheck``; ``DeviceMetadata`` without
``PassthroughSupport``), in its own words. :func:`check_gates` raises
:class:`DriverGateError` with those words, :func:`check_fleet_gates` for a fleet's
DynamicMIG pools, :func:`check_shares_option` for its ``consumableShares`` (the plugin's
``--consumable-shares``); ``allot up`` calls them on ``--driver-feature-gates`` before
anything starts. :func:`enabled` answers with the defaults filled in. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from allot.driver.fleet import Fleet

PASSTHROUGH = "PassthroughSupport"
HEALTH_CHECK = "NVMLDeviceHealthCheck"
DYNAMIC_MIG = "DynamicMIG"
CONSUMABLE_SHARES = "ConsumableShares"
SHARES_OPTIONS = ("disabled", "memory", "unlimited")  # or a positive integer
DEFAULTS = {
    "TimeSlicingSettings": False,
    "MPSSupport": False,
    "IMEXDaemonsWithDNSNames": True,
    PASSTHROUGH: False,
    HEALTH_CHECK: False,
    DYNAMIC_MIG: False,
    "ComputeDomainCliques": True,
    "CrashOnNVLinkFabricErrors": True,
    "DeviceMetadata": False,
    "DRAListTypeAttributes": False,
    "FabricManagerPartitioning": False,
    "HostManagedIMEXDaemon": False,
    CONSUMABLE_SHARES: False,
}
"""Every gate the driver's main branch knows, with its default (all alpha gates off)."""
PUBLISHING = frozenset({PASSTHROUGH, HEALTH_CHECK, CONSUMABLE_SHARES})
"""Gates that change what the driver publishes (its devices, classes and taints), not how
it prepares devices: these work with any engine."""
EXCLUSIVE = (
    (DYNAMIC_MIG, PASSTHROUGH),
    (DYNAMIC_MIG, HEALTH_CHECK),
    (DYNAMIC_MIG, "MPSSupport"),
    (PASSTHROUGH, HEALTH_CHECK),
)
REQUIRES = (("ComputeDomainCliques", "IMEXDaemonsWithDNSNames"), ("DeviceMetadata", PASSTHROUGH))


class DriverGateError(ValueError):
    """Gates the driver would refuse to start with; the message is the driver's."""


def enabled(gates: Mapping[str, bool], gate: str) -> bool:
    """Whether ``gate`` is on: as set, else its default."""
    return bool(gates.get(gate, DEFAULTS.get(gate, False)))


def check_gates(gates: Mapping[str, bool]) -> None:
    """Refuse unknown gates and the combinations the driver refuses, in its words."""
    for name in gates:
        if name not in DEFAULTS:
            raise DriverGateError(
                f"unrecognized feature gate: {name} (the driver's gates: "
                f"{', '.join(sorted(DEFAULTS))})"
            )
    for gate, needed in REQUIRES:
        if enabled(gates, gate) and not enabled(gates, needed):
            raise DriverGateError(f"feature gate {gate} requires {needed} to also be enabled")
    for first, second in EXCLUSIVE:
        if enabled(gates, first) and enabled(gates, second):
            raise DriverGateError(
                f"feature gate {first} is currently mutually exclusive with {second}"
            )


def check_fleet_gates(fleet: Fleet, gates: Mapping[str, bool]) -> None:
    """A fleet's DynamicMIG pools (``mig: {dynamic: true}``: the driver with DynamicMIG on
    for those nodes) under the gates DynamicMIG excludes: the driver's refusal, naming the
    pool."""
    dynamic = [pool.name for pool in fleet.pools if pool.dynamic_mig]
    for first, second in EXCLUSIVE:
        if first == DYNAMIC_MIG and dynamic and enabled(gates, second):
            raise DriverGateError(
                f"feature gate {DYNAMIC_MIG} is currently mutually exclusive with {second} "
                f"(pool {dynamic[0]} has mig: {{dynamic: true}})"
            )


def valid_shares_option(option: str) -> bool:
    """Whether ``option`` is a value ``--consumable-shares`` takes."""
    return option in SHARES_OPTIONS or (option.isdigit() and int(option) > 0)


def check_shares_option(option: str, gates: Mapping[str, bool]) -> None:
    """The plugin's start-up checks of ``--consumable-shares``, in its words."""
    if option != "disabled" and not enabled(gates, CONSUMABLE_SHARES):
        raise DriverGateError(
            f"--consumable-shares requires feature gate {CONSUMABLE_SHARES} to be enabled"
        )
    if not valid_shares_option(option):
        raise DriverGateError(
            f"invalid value for --consumable-shares: \"{option}\" (must be 'disabled', "
            "'memory', 'unlimited', or a positive integer)"
        )
