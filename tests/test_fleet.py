"""Fleet files: parsing with clear errors, expansion into nodes, and the seed 000 default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from allot.driver.files import read_fleet
from allot.driver.fleet import SEED_000_FLEET, FleetError, expand, parse_fleet


def test_seed_000_fleet_has_a_whole_a100_and_seven_slices() -> None:
    nodes = expand(parse_fleet(SEED_000_FLEET))
    assert [n.name for n in nodes] == ["a100-whole-pool-0", "a100-mig-1g5gb-pool-0", "cpu-pool-0"]
    whole, sliced, cpu = nodes
    assert cpu.gpus == []
    assert cpu.taints == []
    assert "nvidia.com/gpu.present" not in cpu.labels
    assert whole.gpus[0].product_name == "NVIDIA A100-SXM4-40GB"
    assert not whole.gpus[0].mig_enabled
    assert [i.start for i in sliced.gpus[0].mig_instances] == list(range(7))
    assert whole.taints == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert whole.labels["allot.dev/pool"] == "a100-whole-pool"


def test_scaling_changes_only_that_pool() -> None:
    fleet = parse_fleet(SEED_000_FLEET).scaled("a100-whole-pool", 3)
    assert [p.nodes for p in fleet.pools] == [3, 1, 1]
    assert len(expand(fleet)) == 5
    with pytest.raises(FleetError, match="no pool 'nope'"):
        fleet.scaled("nope", 1)


def test_identities_are_deterministic_and_distinct() -> None:
    fleet = parse_fleet(
        {
            "pools": [
                {
                    "name": "h100",
                    "nodes": 2,
                    "gpu": "h100",
                    "gpusPerNode": 8,
                    "mig": {"dynamic": True},
                }
            ]
        }
    )
    first, second = expand(fleet), expand(fleet)
    uuids = [g.uuid for n in first for g in n.gpus]
    assert uuids == [g.uuid for n in second for g in n.gpus]
    assert len(set(uuids)) == 16
    assert all(n.dynamic_mig for n in first)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"pool": []}, "a fleet is an object with 'pools'"),
        ({"pools": [{"name": "a", "gpu": "V100"}]}, "unknown gpu 'V100'"),
        ({"pools": [{"name": "a", "gpu": "a100", "gpuz": 1}]}, "unknown key(s): gpuz"),
        ({"pools": [{"gpu": "a100"}]}, "'name' is required"),
        ({"pools": [{"name": "a", "gpu": "a100", "nodes": -1}]}, "'nodes' must be"),
        (
            {"pools": [{"name": "a", "gpu": "l4", "mig": {"profile": "1g.5gb"}}]},
            "L4 does not support MIG",
        ),
        (
            {"pools": [{"name": "a", "gpu": "a100", "mig": {"profile": "1g.10gb+me"}}]},
            "has no MIG profile '1g.10gb+me'",
        ),
        (
            {"pools": [{"name": "a", "gpu": "a100", "taints": [{"key": "k", "effect": "Never"}]}]},
            "each taint needs 'key' and 'effect'",
        ),
        (
            {"pools": [{"name": "a", "gpu": "a100"}, {"name": "a", "gpu": "h100"}]},
            "duplicate pool name(s): a",
        ),
        (
            {"pools": [{"name": "a", "gpu": "h100", "gpusPerNode": 9, "mig": {"dynamic": True}}]},
            "at most 8 GPUs per node",
        ),
    ],
)
def test_bad_fleets_name_the_problem(document: dict[str, Any], message: str) -> None:
    with pytest.raises(FleetError) as caught:
        parse_fleet(document)
    assert message in str(caught.value)


def test_example_fleet_files_parse() -> None:
    from allot.driver.files import read_fleet
    from tests.conftest import EXAMPLES

    seed = read_fleet(EXAMPLES / "fleets" / "seed-000.yaml")
    assert seed.raw == SEED_000_FLEET
    dynamic = read_fleet(EXAMPLES / "fleets" / "h100-dynamic-mig.yaml")
    assert [len(n.gpus) for n in expand(dynamic)] == [8, 8, 2]


@pytest.mark.parametrize("path", sorted(Path("examples/fleets").glob("*.yaml")), ids=str)
def test_example_fleets_parse_and_expand(path: Path) -> None:
    fleet = read_fleet(path)
    nodes = expand(fleet, local_gpus=list)  # no GPU here: local pools get none
    by_pool = {p.name: p.nodes for p in fleet.pools if not p.local}
    assert by_pool or any(p.local for p in fleet.pools)
    for pool, count in by_pool.items():
        assert len([n for n in nodes if n.pool == pool]) == count


def test_a_cpu_pool_has_no_gpus_and_refuses_gpu_keys() -> None:
    fleet = parse_fleet({"pools": [{"name": "cpu", "nodes": 2}]})
    assert [(n.name, n.gpus) for n in expand(fleet)] == [("cpu-0", []), ("cpu-1", [])]
    with pytest.raises(FleetError, match=r"pools\[0\] \(cpu\): gpusPerNode needs 'gpu'"):
        parse_fleet({"pools": [{"name": "cpu", "gpusPerNode": 2}]})
