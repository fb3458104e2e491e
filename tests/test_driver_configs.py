"""The driver's opaque configs: the cases of tests/scenarios/driver-configs.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.driver.configs import DriverConfigError, configs_for_results

CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "driver-configs.yaml").read_text()
)


def allocated_claim(case: dict[str, Any], uid: str = "u") -> dict[str, Any]:
    """A claim allocated with the case's results (pool node-0) and config entries."""
    results = [
        {"driver": "gpu.nvidia.com", "pool": "node-0", **result} for result in case["results"]
    ]
    devices: dict[str, Any] = {"results": results}
    if case.get("config"):
        devices["config"] = case["config"]
    return {
        "metadata": {"name": "c", "namespace": "default", "uid": uid},
        "status": {"allocation": {"devices": devices}},
    }


def _summary(parameters: Any) -> str:
    if parameters is None:
        return "default"
    strategy = (parameters.get("sharing") or {}).get("strategy")
    return f"{parameters['kind']} {strategy}" if strategy else str(parameters["kind"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_driver_config_case(case: dict[str, Any]) -> None:
    claim, gates = allocated_claim(case), case.get("gates") or {}
    if "error" in case:
        with pytest.raises(DriverConfigError) as raised:
            configs_for_results(claim, case["types"], gates)
        assert str(raised.value) == case["error"]
        return
    chosen = configs_for_results(claim, case["types"], gates)
    assert {c.device: _summary(c.parameters) for c in chosen} == case["chosen"]
