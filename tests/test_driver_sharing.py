"""What the driver does with sharing configs: the cases of tests/scenarios/driver-sharing.yaml,
the variables a container gets, and the plugin's start-up checks of --consumable-shares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.driver.configs import DriverConfigError, configs_for_results
from allot.driver.gates import DriverGateError, check_shares_option
from allot.driver.sharing import container_environment, plan
from tests.test_driver_configs import allocated_claim

CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "driver-sharing.yaml").read_text()
)


def _plan(case: dict[str, Any]) -> Any:
    claim = allocated_claim(case, "uid-1")
    types = {name: device["type"] for name, device in case["devices"].items()}
    chosen = configs_for_results(claim, types, case.get("gates") or {})
    consumed = {
        r["device"]: int(r["consumedCapacity"]["memory"].removesuffix("Gi")) * 2**30
        for r in case["results"]
        if r.get("consumedCapacity")
    }
    return plan("uid-1", chosen, case["devices"], consumed, frozenset(case.get("dynamic") or ()))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_driver_sharing_case(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(DriverConfigError) as raised:
            _plan(case)
        assert str(raised.value) == case["error"]
        return
    found = _plan(case)
    slicing = [
        {"interval": t.interval, "commands": [" ".join(c) for c in t.commands()]}
        for t in found.time_slicing
    ]
    assert slicing == case.get("timeSlicing", [])
    daemons = [
        {
            "name": d.name,
            "start": " ".join(d.start_argv()),
            "commands": d.control_commands(),
        }
        for d in found.daemons
    ]
    assert daemons == case.get("daemons", [])
    if "shown" in case:
        assert found.shown == case["shown"]


def test_a_container_sees_its_devices_sharing_in_its_environment() -> None:
    devices = [
        {"uuid": "GPU-aaaa", "sharing": "MPS", "activeThreadPercentage": "50",
         "pinnedMemoryLimit": "4096M", "memoryShare": "4Gi"},
        {"uuid": "GPU-bbbb", "sharing": "TimeSlicing", "timeslice": "Long"},
        {"uuid": "GPU-cccc"},
    ]  # fmt: skip
    assert container_environment(devices) == {
        "ALLOT_GPU_SHARING": "GPU-aaaa=MPS,GPU-bbbb=TimeSlicing",
        "ALLOT_GPU_TIMESLICE": "GPU-bbbb=Long",
        "ALLOT_MPS_ACTIVE_THREAD_PERCENTAGE": "GPU-aaaa=50",
        "ALLOT_MPS_PINNED_DEVICE_MEM_LIMIT": "GPU-aaaa=4096M",
        "ALLOT_GPU_MEMORY_SHARE": "GPU-aaaa=4Gi",
        "CUDA_MPS_PIPE_DIRECTORY": "/tmp/nvidia-mps",
    }
    assert container_environment([{"uuid": "GPU-cccc"}]) == {}


@pytest.mark.parametrize(
    ("option", "gates", "error"),
    [
        ("memory", {}, "--consumable-shares requires feature gate ConsumableShares to be enabled"),
        (
            "half",
            {"ConsumableShares": True},
            "invalid value for --consumable-shares: \"half\" (must be 'disabled', 'memory', "
            "'unlimited', or a positive integer)",
        ),
        ("0", {"ConsumableShares": True}, 'invalid value for --consumable-shares: "0"'),
    ],
)
def test_consumable_shares_option_is_checked_as_the_plugin_starts(
    option: str, gates: dict[str, bool], error: str
) -> None:
    with pytest.raises(DriverGateError, match="consumable-shares") as raised:
        check_shares_option(option, gates)
    assert str(raised.value).startswith(error)
    for good in ("disabled", "memory", "unlimited", "4"):
        check_shares_option(good, {"ConsumableShares": True})
    check_shares_option("disabled", {})
