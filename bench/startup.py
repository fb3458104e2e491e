"""Start-up of ``allot`` as a whole process (issues 15 and 28): the command runs from a
shell, so its cost is the interpreter, the imports and the work, not the allocator alone.

``allot --version`` runs as the console script (``.venv/bin/allot``, what a user types) and
as ``python -m allot``, best of 5 each: target under 0.1 s. Two scenarios are written from
fleets as the driver publishes them (Nodes, ResourceSlices, the driver's DeviceClasses): 10
nodes of 8 whole H100s without claims, and 100 nodes of 8 H100s with DynamicMIG (every MIG
layout, shared counters) and one claim for a 1g.10gb slice. The first runs as ``python -m
allot simulate`` in a subprocess, best of 5. The second is about 26 MB; its process reads
the file and runs :mod:`allot.simulation` itself (the figure is the allocator's, not YAML's),
with the collector thresholds of ``allot simulate`` (best of 3): the time until the claim is
placed.
Printed: the seconds, the target (the 10-node run under 0.1 s) and the ratio; the 100-node
figure is for information, and so is the floor every command that decodes an API object
pays: the interpreter, pydantic, and one model class validating (``FLOOR``), which is most
of the 10-node run on a slow machine. Run by ``make bench``.

Every process runs with Python's bytecode cache, as an installed package does (pip
compiles it at install; a source checkout writes it on first import): the processes get a
cache directory of their own (``PYTHONPYCACHEPREFIX``), filled by one uncounted run, and
``PYTHONDONTWRITEBYTECODE`` is dropped from their environment. Without this, a shell that
sets that variable (as some CI images and sandboxes do) makes every run compile allot's
modules again, about 70 ms here, which no user pays.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from allot.driver.fleet import expand, parse_fleet
from allot.driver.publisher import device_classes, node_object
from allot.driver.slices import node_slices

ROUNDS = 5
LARGE_ROUNDS = 3
TARGET = 0.1
VERSION_TARGET = 0.1
FLOOR = """
from allot.cli.main import skip_pydantic_plugin_discovery
skip_pydantic_plugin_discovery()  # as allot's commands run
import pydantic
class Probe(pydantic.BaseModel):
    name: str
Probe.model_validate({"name": "probe"})
"""
FIRST_CLAIM = """
import gc, json, sys
from allot.cli.main import BATCH_GC_THRESHOLDS, skip_pydantic_plugin_discovery
gc.set_threshold(*BATCH_GC_THRESHOLDS)  # as allot simulate runs
skip_pydantic_plugin_discovery()
from allot.simulation.runner import Simulation
from allot.simulation.scenario import parse_scenario
with open(sys.argv[1], encoding="utf-8") as handle:
    document = json.load(handle)
sys.exit(0 if all(r.success for r in Simulation(parse_scenario(document)).run()) else 1)
"""
MIG_PROFILE = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"


def scenario(nodes: int, *, dynamic_mig: bool, claims: int) -> dict[str, Any]:
    """A scenario of ``nodes`` nodes of 8 H100s and ``claims`` pending claims of one
    device each (a 1g.10gb MIG slice with DynamicMIG, a whole GPU without)."""
    pool: dict[str, Any] = {"name": "h100", "nodes": nodes, "gpu": "H100-80GB-HBM3"}
    pool["gpusPerNode"] = 8
    if dynamic_mig:
        pool["mig"] = {"dynamic": True}
    objects: list[Any] = list(device_classes())
    for spec in expand(parse_fleet({"pools": [pool]})):
        objects.append(node_object(spec))
        objects += node_slices(spec.name, f"uid-{spec.name}", spec.gpus, dynamic_mig=dynamic_mig)
    device_class = "mig.nvidia.com" if dynamic_mig else "gpu.nvidia.com"
    selectors = [{"cel": {"expression": MIG_PROFILE}}] if dynamic_mig else []
    request = {"name": "g", "exactly": {"deviceClassName": device_class, "selectors": selectors}}
    for index in range(claims):
        objects.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"c{index}", "namespace": "ml"},
                "spec": {"devices": {"requests": [request]}},
            }
        )
    return {"objects": objects}


def cached_bytecode(directory: Path) -> dict[str, str]:
    """An environment whose processes keep their bytecode in ``directory``."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(directory / "pycache")
    return environment


def best_run(command: list[str], rounds: int, environment: dict[str, str]) -> tuple[float, int]:
    """The fastest of ``rounds`` whole processes running ``command``, and the exit status;
    one uncounted run first fills the bytecode cache."""
    subprocess.run(command, capture_output=True, check=False, env=environment)
    best, code = float("inf"), -1
    for _ in range(rounds):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, check=False, env=environment)
        best = min(best, time.perf_counter() - started)
        code = done.returncode
    return best, code


def print_figure(label: str, elapsed: float, code: int, target: float) -> None:
    print(
        f"  {label}: {elapsed:.3f} s (exit {code}); target < {target:.2f} s -> ratio "
        f"{elapsed / target:.2f} of the budget",
        flush=True,
    )


def versions(environment: dict[str, str]) -> None:
    """``allot --version`` as the console script and as ``python -m allot``."""
    script = Path(sys.executable).with_name("allot")
    commands = {"python -m allot --version": [sys.executable, "-m", "allot", "--version"]}
    if script.exists():  # an installed package's console script, what a user types
        commands = {"allot --version (console script)": [str(script), "--version"], **commands}
    for label, command in commands.items():
        print_figure(label, *best_run(command, ROUNDS, environment), VERSION_TARGET)


def main() -> None:
    print(
        f"start-up benchmark: whole `allot` processes, best of {ROUNDS}, bytecode cached as "
        "for an installed package"
    )
    with tempfile.TemporaryDirectory() as directory:
        environment = cached_bytecode(Path(directory))
        versions(environment)
        small = Path(directory) / "fleet-10.json"
        small.write_text(json.dumps(scenario(10, dynamic_mig=False, claims=0)))
        command = [sys.executable, "-m", "allot", "simulate", str(small)]
        elapsed, code = best_run(command, ROUNDS, environment)
        print_figure("simulate, 10 nodes x 8 H100, no claims", elapsed, code, TARGET)
        elapsed, code = best_run([sys.executable, "-c", FLOOR], ROUNDS, environment)
        print(
            f"  floor of a command that decodes an object (interpreter, pydantic, one model "
            f"validating): {elapsed:.3f} s (exit {code}); for information",
            flush=True,
        )
        large = Path(directory) / "dynamic-mig-100.json"
        large.write_text(json.dumps(scenario(100, dynamic_mig=True, claims=1)))
        command = [sys.executable, "-c", FIRST_CLAIM, str(large)]
        elapsed, code = best_run(command, LARGE_ROUNDS, environment)
        print(
            f"  100 nodes x 8 H100 DynamicMIG, one 1g.10gb claim: placed after {elapsed:.2f} s "
            f"(whole process, best of {LARGE_ROUNDS}, exit {code}); for information"
        )


if __name__ == "__main__":
    main()
