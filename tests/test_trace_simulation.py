"""The trace simulator (``allot simulate --trace``): a hand-worked trace, determinism, the
placement by device counts, and the CLI's exit codes and error texts.

The hand-worked trace (``tests/scenarios/trace-reclaim.yaml``): research and legal are
guaranteed one GPU each of a 2-GPU node, grace 30 s. At 0 research starts r1 and r2
(200 s each); at 50 legal's l1 (100 s) arrives.

- Fair sharing: r2 borrows legal's GPU; at 50 l1 reclaims one, evicting r1 (r1 and r2
  were admitted together and tie; the engine takes the first by name), which keeps its
  GPU until 80; l1 runs 80-180 (wait 30 s, inside its guarantee);
  r1 is queued again at 80, borrows again at 180 (wait 100 s) and ends at 380.
  Device-seconds: research 80 + 200 + 200 = 480, legal 100; utilization 580 / 800.
- Hard quotas: research may hold one GPU: r2 waits until r1 ends at 200 and runs to
  400; l1 starts at once. Device-seconds: research 400, legal 100; utilization 500 / 800.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.cli.main import main
from allot.driver.fleet import parse_fleet
from allot.simulation.inventory import Inventory, Placer
from allot.simulation.trace import TraceError, parse_trace
from allot.simulation.traces import FAIR_SHARING, HARD_QUOTA, simulate
from tests.conftest import EXAMPLES, SCENARIOS

TRACE = SCENARIOS / "trace-reclaim.yaml"
FLEET = {"pools": [{"name": "a", "nodes": 1, "gpu": "A100-SXM4-40GB", "gpusPerNode": 2}]}


def _document() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(TRACE.read_text())
    return loaded


def _inventory(document: dict[str, Any], fleet: dict[str, Any] | None = None) -> Inventory:
    return Inventory(parse_fleet(fleet or FLEET), parse_trace(document).classes)


def test_fair_sharing_lends_then_reclaims_after_the_grace_period() -> None:
    trace = parse_trace(_document())
    result = simulate(trace, _inventory(_document()), FAIR_SHARING)
    research, legal = result.tenants["research"], result.tenants["legal"]
    assert research.waits == [0.0, 0.0, 100.0]
    assert research.inside_waits == [0.0]  # r1 was inside; r2 and the requeued r1 borrow
    assert research.preemptions == 1
    assert research.device_seconds == 480.0
    assert research.lost_seconds == 80.0
    assert (legal.waits, legal.inside_waits, legal.preemptions) == ([30.0], [30.0], 0)
    assert legal.device_seconds == 100.0
    assert result.utilization == pytest.approx(580 / 800)
    assert research.completed == 2
    assert legal.completed == 1


def test_hard_quotas_keep_each_tenant_within_its_guarantee() -> None:
    trace = parse_trace(_document())
    result = simulate(trace, _inventory(_document()), HARD_QUOTA)
    research, legal = result.tenants["research"], result.tenants["legal"]
    assert research.waits == [0.0, 200.0]
    assert research.inside_waits == [0.0]
    assert (legal.waits, legal.preemptions, research.preemptions) == ([0.0], 0, 0)
    assert (research.device_seconds, legal.device_seconds) == (400.0, 100.0)
    assert result.utilization == pytest.approx(500 / 800)


def test_a_gang_that_does_not_fit_physically_waits_for_capacity() -> None:
    document = _document()
    for tenant in document["tenants"]:  # quota for 3, devices for 2
        tenant["sharing"]["deviceClasses"][0]["guaranteed"] = "3"
    document["workloads"] = [
        {"name": "big", "arrival": 0, "tenant": "legal", "pods": 2, "devices": {"gpu": 1},
         "duration": 50},
        {"name": "late", "arrival": 10, "tenant": "legal", "devices": {"gpu": 1},
         "duration": 50},
    ]  # fmt: skip
    result = simulate(parse_trace(document), _inventory(document), FAIR_SHARING)
    assert result.tenants["legal"].waits == [0.0, 40.0]  # admitted at 10, placed at 50


def test_placement_counts_devices_per_class_on_the_real_slices() -> None:
    document = _document()
    fleet = {
        "pools": [
            {"name": "whole", "nodes": 2, "gpu": "A100-SXM4-40GB", "gpusPerNode": 2},
            {"name": "mig", "nodes": 1, "gpu": "A100-SXM4-40GB", "mig": {"profile": "1g.5gb"}},
        ]
    }
    inventory = _inventory(document, fleet)
    assert len(inventory.devices) == 4 + 7  # the MIG GPU publishes its 7 slices
    assert inventory.capacity["gpu"] == 4  # the class selects whole GPUs only
    placer = Placer(inventory)
    gang = parse_trace({**document, "workloads": [
        {"arrival": 0, "tenant": "legal", "pods": 2, "devices": {"gpu": 2}, "duration": 1}
    ]}).workloads[0]  # fmt: skip
    taken = placer.place(gang)
    assert taken is not None
    assert len({inventory.devices[i].node for i in taken}) == 2
    assert placer.place(gang) is None
    assert placer.in_use == 4
    placer.release(taken)
    assert placer.in_use == 0


def test_the_same_trace_gives_the_same_report(capsys: pytest.CaptureFixture[str]) -> None:
    fleet = str(EXAMPLES / "traces" / "fleet-100.yaml")
    outputs = []
    for _ in range(2):
        assert main(["simulate", "--trace", str(TRACE), "--fleet", fleet, "-o", "json"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    report = json.loads(outputs[0])
    assert report["devices"] == 680
    assert set(report["modes"]) == {HARD_QUOTA, FAIR_SHARING}


def test_the_text_report_puts_both_modes_side_by_side(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(FLEET))
    assert main(["simulate", "--trace", str(TRACE), "--fleet", str(fleet)]) == 0
    out = capsys.readouterr().out
    assert "HARD-QUOTA" in out
    assert "FAIR-SHARING" in out
    assert "fair-sharing: utilization 72.5%" in out
    assert "hard-quota: utilization 62.5%" in out


BAD_TRACES = [
    (
        lambda d: d["workloads"][1]["devices"].update({"gpu-x": 1}),
        "workloads[1].devices.gpu-x: no DeviceClass 'gpu-x' in deviceClasses",
    ),
    (
        lambda d: d["tenants"][0]["sharing"]["deviceClasses"][0].update({"lendingLimit": "2"}),
        "tenants[0].sharing.deviceClasses[0].lendingLimit: must be less than or equal to "
        "guaranteed",
    ),
    (
        lambda d: d["tenants"][1]["sharing"].update({"cohrt": "x"}),
        "tenants[1].sharing.cohrt: Extra inputs are not permitted",
    ),
    (lambda d: d["workloads"][2].pop("duration"), "workloads[2].duration: required"),
    (lambda d: d["workloads"][0].update({"tenant": "nobody"}), "workloads[0].tenant: no tenant"),
    (lambda d: d.update({"horizon": -1}), "horizon: must be a number of seconds >= 0"),
]


@pytest.mark.parametrize(("change", "message"), BAD_TRACES)
def test_a_bad_trace_names_the_field(
    change: Any, message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = _document()
    change(document)
    with pytest.raises(TraceError, match=message.split(":")[0].replace("[", r"\[")):
        parse_trace(document)
    path = tmp_path / "trace.yaml"
    path.write_text(yaml.safe_dump(document))
    fleet = str(EXAMPLES / "traces" / "fleet-100.yaml")
    assert main(["simulate", "--trace", str(path), "--fleet", fleet]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {path}: {message}")
    assert "Traceback" not in captured.err
    assert captured.out == ""


def test_cli_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["simulate", "--trace", str(TRACE)]) == 2
    assert "needs --fleet FLEET" in capsys.readouterr().err
    assert main(["simulate"]) == 2
    assert "give a SCENARIO file, or --trace" in capsys.readouterr().err
    missing = tmp_path / "nope.yaml"
    assert main(["simulate", "--trace", str(TRACE), "--fleet", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
    dynamic = tmp_path / "dynamic.yaml"
    dynamic.write_text(yaml.safe_dump({"pools": [{"name": "d", "gpu": "H100-80GB-HBM3",
                                                  "mig": {"dynamic": True}}]}))  # fmt: skip
    assert main(["simulate", "--trace", str(TRACE), "--fleet", str(dynamic)]) == 2
    assert "DynamicMIG (shared counters) are not supported" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["steady", "one-bursty", "all-bursting"])
def test_the_example_traces_parse(name: str) -> None:
    trace = parse_trace(yaml.safe_load((EXAMPLES / "traces" / f"{name}.yaml").read_text()))
    assert len(trace.queues) == 4
    assert trace.horizon == 8 * 3600
    assert len(trace.workloads) > 500


# --- the reclaim promise on random traces ---------------------------------------------

GRACE = 30.0
GPUS = 8
traces = st.fixed_dictionaries(
    {
        "guarantees": st.lists(st.integers(1, 4), min_size=1, max_size=2).filter(
            lambda g: sum(g) <= GPUS
        ),
        "owners": st.lists(  # the guaranteed tenants' work: (arrival, pods, duration)
            st.tuples(st.integers(0, 600), st.integers(1, 2), st.integers(10, 300)),
            max_size=6,
        ),
        "borrower": st.lists(  # a tenant guaranteed nothing: (arrival, pods, duration, prio)
            st.tuples(
                st.integers(0, 600), st.integers(1, 4), st.integers(10, 600), st.integers(0, 2)
            ),
            min_size=1,
            max_size=8,
        ),
    }
)


def _tenant(name: str, guaranteed: int) -> dict[str, Any]:
    shares = [{"name": "gpu", "guaranteed": str(guaranteed)}]
    return {"name": name, "sharing": {"cohort": "pool", "deviceClasses": shares}}


def _random_trace(drawn: dict[str, Any]) -> dict[str, Any]:
    """Tenants ``g0``, ``g1`` with guarantees, each asking at most its guarantee at any time
    (its work runs one after another: each arrival after the previous one's end), and
    ``borrower``, guaranteed nothing, borrowing whatever is idle."""
    document = _document()
    guarantees = drawn["guarantees"]
    document["horizon"] = 3000
    document["reclaimGraceSeconds"] = GRACE
    document["tenants"] = [_tenant(f"g{i}", g) for i, g in enumerate(guarantees)]
    document["tenants"].append(_tenant("borrower", 0))
    workloads: list[dict[str, Any]] = []
    ends = [0] * len(guarantees)
    for index, (arrival, pods, duration) in enumerate(drawn["owners"]):
        owner = index % len(guarantees)
        start = max(arrival, ends[owner] + int(GRACE) + 5)  # sequential, with slack
        ends[owner] = start + duration + int(GRACE) + 5
        workloads.append({"name": f"o{index}", "tenant": f"g{owner}", "arrival": start,
                          "pods": min(pods, guarantees[owner]), "devices": {"gpu": 1},
                          "duration": duration})  # fmt: skip
    for index, (arrival, pods, duration, priority) in enumerate(drawn["borrower"]):
        workloads.append({"name": f"b{index}", "tenant": "borrower", "arrival": arrival,
                          "pods": pods, "devices": {"gpu": 1}, "duration": duration,
                          "priority": priority})  # fmt: skip
    document["workloads"] = workloads
    return document


@settings(max_examples=80, deadline=None)
@given(traces)
def test_a_tenant_gets_its_guarantee_back_within_the_grace_period(drawn: dict[str, Any]) -> None:
    """The reclaim promise: guarantees that fit the fleet, a tenant that never asks for more
    than its guarantee, a borrower taking whatever is idle; on one node with one-device
    pods (nothing fragments), the guaranteed tenant's work starts within the reclaim grace
    period (plus the admission period that notices its end and the one that places it)."""
    document = _random_trace(drawn)
    fleet = {"pools": [{"name": "a", "nodes": 1, "gpu": "A100-SXM4-40GB", "gpusPerNode": GPUS}]}
    result = simulate(parse_trace(document), _inventory(document, fleet), FAIR_SHARING)
    for name, figures in result.tenants.items():
        if name != "borrower":
            assert all(wait <= GRACE + 2.0 for wait in figures.waits), figures
