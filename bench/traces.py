"""Fair sharing against hard quotas on the three example traces, and the admission
engine's cost (issue 17).

Each trace of ``examples/traces`` runs on ``fleet-100.yaml`` (100 nodes, 680 devices)
under hard quotas and under fair sharing. Printed per trace and mode: utilization, and per
tenant the p95 wait and the p95 wait of work inside its guarantee. Targets, with all
tenants bursting: utilization >= 90% under fair sharing, and every tenant's p95 wait for
work inside its guarantee <= the reclaim grace period + one admission period (the
simulator's scheduling time). Then ``admission_cycle`` alone on a synthetic state of 8
tenants in a cohort sharing 1,000 GPUs, all admitted, with 1,000 pending workloads:
workloads admitted per second while 100 slots free up per pass (target >= 500/s). Each
figure is printed with its target and their ratio (above 1: met).
"""

from __future__ import annotations

import random
import time
from dataclasses import replace

import yaml

from allot.driver.fleet import parse_fleet
from allot.fairshare.cycle import admission_cycle
from allot.fairshare.model import Queue, Share, Workload
from allot.simulation.inventory import Inventory
from allot.simulation.trace import parse_trace
from allot.simulation.traces import MODES, p95, simulate
from tests.conftest import EXAMPLES

TRACES = ("steady", "one-bursty", "all-bursting")
UTILIZATION_TARGET, RATE_TARGET = 0.90, 500.0
TENANTS, PENDING, ADMITTED, FREED, PASSES = 8, 1000, 1000, 100, 5


def _ratio(value: float, target: float, *, at_most: bool = False) -> str:
    ratio = (target / value if value else float("inf")) if at_most else value / target
    return f"ratio {ratio:.2f}"


def run_traces() -> None:
    fleet = parse_fleet(yaml.safe_load((EXAMPLES / "traces" / "fleet-100.yaml").read_text()))
    for name in TRACES:
        trace = parse_trace(yaml.safe_load((EXAMPLES / "traces" / f"{name}.yaml").read_text()))
        inventory = Inventory(fleet, trace.classes)
        limit = trace.grace + trace.cycle
        for mode in MODES:
            started = time.perf_counter()
            result = simulate(trace, inventory, mode)
            took = time.perf_counter() - started
            line = f"{name:13} {mode:12} utilization {result.utilization:6.1%}"
            if name == "all-bursting" and mode == "fair-sharing":
                line += f" (target >= 90%, {_ratio(result.utilization, UTILIZATION_TARGET)})"
            print(f"{line}  [{took:.1f} s]")
            for tenant, figures in result.tenants.items():
                wait, inside = p95(figures.waits) or 0.0, p95(figures.inside_waits) or 0.0
                text = (
                    f"    {tenant:9} p95 wait {wait:8.0f} s   p95 wait inside guarantee "
                    f"{inside:6.0f} s"
                )
                if name == "all-bursting" and mode == "fair-sharing":
                    text += f" (target <= {limit:g} s, {_ratio(inside, limit, at_most=True)})"
                print(text)


def _state(rng: random.Random) -> tuple[dict[str, Queue], list[Workload]]:
    queues = {
        f"t{i}": Queue(f"t{i}", {"gpu": Share(ADMITTED // TENANTS)}, cohort="pool")
        for i in range(TENANTS)
    }
    workloads = []
    for index in range(ADMITTED):
        tenant = f"t{rng.randrange(TENANTS)}"
        workloads.append(
            Workload(f"a{index}", tenant, {"gpu": 1}, rng.randrange(3), float(index),
                     admitted_at=float(index))
        )  # fmt: skip
    for index in range(PENDING):
        tenant = f"t{rng.randrange(TENANTS)}"
        workloads.append(
            Workload(f"p{index}", tenant, {"gpu": 1}, rng.randrange(3), 2000.0 + index)
        )
    return queues, workloads


def run_admission() -> None:
    """Passes over 1,000 pending: before each, 100 admitted workloads end and 100 new ones
    arrive, so the queue stays at 1,000 and every pass has room for about 100."""
    rng = random.Random(17)
    queues, workloads = _state(rng)
    admitted_total, spent, serial = 0, 0.0, 0
    for _ in range(PASSES):
        running = [w for w in workloads if w.admitted]
        ending = set(rng.sample([w.key for w in running], FREED))
        workloads = [w for w in workloads if w.key not in ending]
        for _ in range(FREED):
            serial += 1
            workloads.append(
                Workload(f"n{serial}", f"t{rng.randrange(TENANTS)}", {"gpu": 1}, 0, 9000.0 + serial)
            )
        started = time.perf_counter()
        decision = admission_cycle(queues, workloads)
        spent += time.perf_counter() - started
        admitted_total += len(decision.admitted)
        done = {w.key for w in decision.admitted}
        workloads = [replace(w, admitted_at=1.0) if w.key in done else w for w in workloads]
    rate = admitted_total / spent
    pending = sum(not w.admitted for w in workloads)
    print(
        f"admission: {admitted_total} admitted in {PASSES} passes over ~{pending} pending, "
        f"{spent / PASSES * 1000:.0f} ms a pass: {rate:.0f} workloads/s "
        f"(target >= {RATE_TARGET:.0f}/s, {_ratio(rate, RATE_TARGET)})"
    )


if __name__ == "__main__":
    run_admission()
    run_traces()
