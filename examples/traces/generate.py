"""Writes the example traces of ``allot simulate --trace`` (seeded: the same files each run).

    python examples/traces/generate.py        # rewrites steady.yaml, one-bursty.yaml,
                                              # all-bursting.yaml next to this file

Four tenants in one cohort share the 680 devices of ``fleet-100.yaml``; their guarantees
add up to the fleet, class by class. Each tenant submits gangs of one-device pods to the
classes it is guaranteed, as a Poisson process whose rate gives, by Little's law, a busy
device count of ``load x guarantee``, and opens with that much work already submitted
(a busy cluster, not an empty one); the load changes per trace:

- steady: every tenant at 0.75 of its guarantee, all day;
- one-bursty: research at 0.3, except 3.0 from 2 h to 5 h; the others at 0.6;
- all-bursting: every tenant alternates two hours at 2.2 and two at 0.6, each starting
  an hour after the previous one, so the fleet is always asked for more than it has.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
SEED = 17
HORIZON = 8 * 3600
SLOT = 600
GRACE = 30
NVIDIA = "device.driver == 'gpu.nvidia.com'"
GPU = "device.attributes['gpu.nvidia.com']"
CLASSES = {
    "gpu-h100": f"{NVIDIA} && {GPU}.type == 'gpu' && {GPU}.productName.contains('H100')",
    "gpu-a100": f"{NVIDIA} && {GPU}.type == 'gpu' && {GPU}.productName.contains('A100')",
    "mig-3g.40gb": f"{NVIDIA} && {GPU}.type == 'mig' && {GPU}.profile == '3g.40gb'",
    "mig-1g.5gb": f"{NVIDIA} && {GPU}.type == 'mig' && {GPU}.profile == '1g.5gb'",
    "gpu-l4": f"{NVIDIA} && {GPU}.type == 'gpu' && {GPU}.productName == 'NVIDIA L4'",
}
PODS = {"gpu-h100": (1, 8), "gpu-a100": (1, 4), "mig-3g.40gb": (1, 4), "mig-1g.5gb": (1, 4)}
DURATION = (30 * 60, 240 * 60)
GUARANTEES = {
    "research": {"gpu-h100": 120, "mig-3g.40gb": 40, "mig-1g.5gb": 20},
    "legal": {"gpu-a100": 60, "mig-3g.40gb": 40, "mig-1g.5gb": 60, "gpu-l4": 10},
    "vision": {"gpu-h100": 80, "gpu-a100": 20, "mig-3g.40gb": 40, "mig-1g.5gb": 20},
    "speech": {"gpu-h100": 40, "gpu-a100": 40, "mig-3g.40gb": 40, "mig-1g.5gb": 40, "gpu-l4": 10},
}


def steady(tenant: str, time: float) -> float:
    return 0.75


def one_bursty(tenant: str, time: float) -> float:
    if tenant == "research":
        return 3.0 if 2 * 3600 <= time < 5 * 3600 else 0.3
    return 0.6


def all_bursting(tenant: str, time: float) -> float:
    offset = list(GUARANTEES).index(tenant) * 3600
    return 2.2 if ((time + offset) // 7200) % 2 == 0 else 0.6


TRACES = {
    "steady": (steady, "Every tenant at 0.75 of its guarantee, all day."),
    "one-bursty": (one_bursty, "research bursts to 3x its guarantee from 2 h to 5 h."),
    "all-bursting": (all_bursting, "Every tenant bursts to 2.2x its guarantee, in turns."),
}


def workloads(load: Any, rng: random.Random) -> list[dict[str, Any]]:
    found = []
    mean_duration = sum(DURATION) / 2
    for tenant, shares in GUARANTEES.items():
        for device_class, guaranteed in shares.items():
            low, high = PODS.get(device_class, (1, 1))
            per_workload = (low + high) / 2 * mean_duration
            found += backlog(tenant, device_class, load(tenant, 0) * guaranteed, rng)
            for start in range(0, HORIZON, SLOT):
                rate = load(tenant, start) * guaranteed / per_workload
                time = start + rng.expovariate(rate)
                while time < start + SLOT:
                    found.append(
                        {
                            "arrival": int(time),
                            "tenant": tenant,
                            "pods": rng.randint(low, high),
                            "devices": {device_class: 1},
                            "duration": rng.randint(*DURATION),
                            "priority": 1 if rng.random() < 0.1 else 0,
                        }
                    )
                    time += rng.expovariate(rate)
    found.sort(key=lambda w: (w["arrival"], w["tenant"], str(w["devices"])))
    return found


def backlog(
    tenant: str, device_class: str, devices: float, rng: random.Random
) -> list[dict[str, Any]]:
    """The work a busy cluster already has when the trace opens: gangs worth ``devices``
    in the first minute, part-way through (what is left of each run is shorter)."""
    low, high = PODS.get(device_class, (1, 1))
    found: list[dict[str, Any]] = []
    while sum(w["pods"] for w in found) < devices:
        found.append(
            {
                "arrival": rng.randint(0, 59),
                "tenant": tenant,
                "pods": rng.randint(low, high),
                "devices": {device_class: 1},
                "duration": rng.randint(5 * 60, DURATION[1]),
                "priority": 0,
            }
        )
    return found


def document(name: str, load: Any, description: str) -> str:
    rng = random.Random(f"{SEED}-{name}")
    header = {
        "description": f"{description} Generated by examples/traces/generate.py (seed {SEED}).",
        "horizon": HORIZON,
        "reclaimGraceSeconds": GRACE,
        "cycleSeconds": 1,
        "deviceClasses": [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": class_name},
                "spec": {"selectors": [{"cel": {"expression": expression}}]},
            }
            for class_name, expression in CLASSES.items()
        ],
        "tenants": [
            {
                "name": tenant,
                "sharing": {
                    "cohort": "gpu-pool",
                    "deviceClasses": [
                        {"name": c, "guaranteed": str(n)} for c, n in sorted(shares.items())
                    ],
                },
            }
            for tenant, shares in GUARANTEES.items()
        ],
    }
    lines = [yaml.safe_dump(header, sort_keys=False, width=400).rstrip(), "workloads:"]
    for workload in workloads(load, rng):
        flow = yaml.safe_dump(workload, default_flow_style=True, sort_keys=False, width=400)
        lines.append(f"- {flow.strip()}")
    return "\n".join(lines) + "\n"


def main() -> None:
    for name, (load, description) in TRACES.items():
        (HERE / f"{name}.yaml").write_text(document(name, load, description))


if __name__ == "__main__":
    main()
