"""``allot doctor`` on a large dump: 1,000 nodes x 8 GPUs (8,000 whole H100s) and 5,000
claims, a tenth of them pending (450 that would fit now, 50 naming a class that matches
nothing, which are explained), in three tenant namespaces with params, one violating
claim per tenant. Printed: the dump's size, the report's time (reading the YAML,
converting, placing and explaining the pending claims, lint, violations, capacity) and
the ratio to the target. Target (issue 8): the full report under 10 s.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from allot.cli.main import main as allot
from allot.driver.fleet import expand, parse_fleet
from allot.driver.publisher import device_classes, node_object
from allot.driver.slices import node_slices

NODES, GPUS, CLAIMS, PENDING, IMPOSSIBLE = 1000, 8, 5000, 500, 50
TENANTS = ("vision", "speech", "search")
TARGET = 10.0
FLEET = {"pools": [{"name": "h100", "nodes": NODES, "gpu": "H100-80GB-HBM3", "gpusPerNode": GPUS}]}


def _claim(name: str, namespace: str, device_class: str, device: tuple[str, str] | None) -> Any:
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": device_class}}]}
        },
    }
    if device is not None:
        result = {
            "request": "g",
            "driver": "gpu.nvidia.com",
            "pool": device[0],
            "device": device[1],
        }
        claim["status"] = {"allocation": {"devices": {"results": [result]}}}
    return claim


def _tenant_objects() -> list[Any]:
    found: list[Any] = []
    for tenant in TENANTS:
        labels = {"allot.dev/tenant": tenant}
        found.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": f"tenant-{tenant}", "labels": labels},
            }
        )
        found.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"entitlement-{tenant}",
                    "namespace": "allot-system",
                    "labels": labels,
                },
                "data": {"deviceClasses": "gpu.nvidia.com"},
            }
        )
    return found  # fmt: skip


def dump() -> dict[str, Any]:
    items: list[Any] = [*device_classes(), *_tenant_objects()]
    h200 = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"
    items.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "h200-only"},
            "spec": {"selectors": [{"cel": {"expression": h200}}]},
        }
    )
    devices = []
    for spec in expand(parse_fleet(FLEET)):
        items.append(node_object(spec))
        for document in node_slices(spec.name, f"uid-{spec.name}", spec.gpus, dynamic_mig=False):
            items.append(document)
            devices += [(spec.name, d["name"]) for d in document["spec"]["devices"]]
    allocated = CLAIMS - PENDING
    for index in range(CLAIMS):
        namespace = f"tenant-{TENANTS[index % len(TENANTS)]}"
        if index < allocated:
            items.append(_claim(f"c{index}", namespace, "gpu.nvidia.com", devices[index]))
        elif index < CLAIMS - IMPOSSIBLE:
            items.append(_claim(f"c{index}", namespace, "gpu.nvidia.com", None))
        else:
            items.append(_claim(f"c{index}", namespace, "h200-only", None))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main() -> None:
    print(
        f"doctor benchmark: {NODES} nodes x {GPUS} GPUs, {CLAIMS:,} claims ({PENDING} pending, "
        f"{IMPOSSIBLE} of them impossible)",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "dump.yaml"
        dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        path.write_text(yaml.dump(dump(), Dumper=dumper))
        print(f"  dump written: {path.stat().st_size / 1e6:.1f} MB", flush=True)
        output = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(output):
            code = allot(["doctor", "--from-dump", str(path), "-o", "json"])
        elapsed = time.perf_counter() - started
    problems = yaml.safe_load(output.getvalue())["problems"]
    print(
        f"  full report in {elapsed:.2f} s (exit {code}, {problems} problems); target < "
        f"{TARGET:.0f} s -> ratio {elapsed / TARGET:.2f} of the budget"
    )


if __name__ == "__main__":
    main()
