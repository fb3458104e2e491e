"""``allot simulate``, ``validate`` and ``doctor --from-dump`` import only what they use,
and collect garbage rarely.

Start-up is most of a short command's time (issue 15): the API server, the Kubernetes
client, cryptography and rich cost more than the work itself. Each command runs in a fresh
interpreter, which then lists the heavy modules it loaded; any one of them fails the test,
so an eager import reintroduced anywhere on these paths is caught.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from allot.cli.main import BATCH_GC_THRESHOLDS, COMMANDS, build_parser, main
from bench import startup
from tests.conftest import EXAMPLES, REPO

HEAVY = (
    "kubernetes",
    "uvicorn",
    "starlette",
    "cryptography",
    "rich",
    "prometheus_client",
    "allot.kube.client",
    "allot.apiserver.app",
    "allot.cli.up",
    "allot.cli.cluster",
)
LAZY = (
    "yaml",
    "allot.api.apps_v1",
    "allot.api.batch_v1",
    "allot.api.autoscaling_v1",
    "allot.api.admission_v1",
    "allot.api.apiextensions_v1",
    "allot.api.tenancy",
    "allot.cel.compiler",
)
"""Loaded on first use only (issue 15): the workload, admission, CRD and tenancy models when
a document of their kind is decoded, PyYAML for the first YAML document, the CEL compiler
for the first selector. A JSON scenario of nodes and slices without claims needs none."""
NOT_FOR_A_PLAIN_RUN = ("allot.simulation.explain", "importlib.metadata")
"""Not loaded by a simulation that explains nothing (issue 28): the explanations, and
pydantic's plugin discovery, which reads every installed distribution's metadata."""
PROBE = """
import contextlib, io, json, sys
from allot.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exited:  # --help
        code = exited.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""
DECODE_DEPLOYMENT = """
import sys
from allot.api import kinds
print("allot.api.apps_v1" in sys.modules)
obj = kinds.decode({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}})
print("allot.api.apps_v1" in sys.modules, type(obj).__name__, kinds.kind_info(obj).group)
"""
DUMP = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
        }
    ],
}


def _loaded(*argv: str) -> tuple[int, set[str]]:
    path = os.pathsep.join([str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": path},
    )
    report = json.loads(done.stdout.splitlines()[-1])
    return report["code"], set(report["modules"])


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY)


def test_simulate_imports_no_server_client_or_tls() -> None:
    code, modules = _loaded("simulate", str(EXAMPLES / "scenarios" / "seed-000.yaml"))
    assert code == 1  # the seed's 8th slice fits nowhere: the run went to the end
    assert "allot.simulation.runner" in modules
    assert _heavy(modules) == []


def test_simulate_trace_imports_no_server_client_or_tls() -> None:
    trace = REPO / "tests" / "scenarios" / "trace-reclaim.yaml"
    fleet = EXAMPLES / "traces" / "fleet-100.yaml"
    code, modules = _loaded("simulate", "--trace", str(trace), "--fleet", str(fleet))
    assert code == 0
    assert "allot.simulation.traces" in modules
    assert _heavy(modules) == []


def test_validate_imports_no_server_client_or_tls() -> None:
    fixture = EXAMPLES / "nvidia" / "a100-40gb-x1-whole-gpu.yaml"
    code, modules = _loaded("validate", str(fixture))
    assert code == 0
    assert "allot.manifests.verdicts" in modules
    assert _heavy(modules) == []


def test_doctor_from_a_dump_imports_no_kubernetes_client(tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps(DUMP))
    code, modules = _loaded("doctor", "--from-dump", str(dump))
    assert code in (0, 1)
    assert "allot.cluster.doctor" in modules
    assert _heavy(modules) == []
    # the served resources it stores the dump under load only their own strategies
    workloads = {"allot.registry.kinds.deployments", "allot.registry.kinds.jobs"}
    assert sorted(modules & (workloads | {"allot.api.apps_v1", "allot.api.batch_v1"})) == []


@pytest.mark.parametrize("command", ["simulate", "validate", "doctor"])
def test_only_the_named_command_module_is_imported(command: str) -> None:
    _, modules = _loaded(command, "--help")
    commands = {m for m in modules if m.startswith("allot.cli.")}
    assert commands <= {"allot.cli.main", "allot.cli.options", "allot.cli.output"} | {
        f"allot.cli.{command}"
    }


@pytest.mark.parametrize("module", list(COMMANDS))
def test_the_command_table_names_what_each_module_registers(module: str) -> None:
    parser = build_parser(COMMANDS[module][0])
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert [tuple(a.choices) for a in actions] == [COMMANDS[module]]


def test_simulate_of_a_json_fleet_loads_no_lazy_module(tmp_path: Path) -> None:
    scenario = tmp_path / "fleet.json"
    scenario.write_text(json.dumps(startup.scenario(2, dynamic_mig=False, claims=0)))
    code, modules = _loaded("simulate", str(scenario))
    assert code == 0
    assert "allot.api.resource_v1" in modules
    assert sorted(modules & set(LAZY)) == []


def test_version_imports_no_command_and_no_model() -> None:
    """``allot --version`` prints before any command is parsed (issue 28: 0.57 s, as every
    command module was imported to build the whole parser)."""
    code, modules = _loaded("--version")
    assert code == 0
    assert sorted(m for m in modules if m.startswith("allot.")) == [
        "allot.cli",
        "allot.cli.main",
        "allot.cli.options",
    ]
    assert sorted(modules & {"pydantic", "pydantic_core", "yaml"}) == []


def test_simulate_without_explain_loads_no_explanations_nor_plugin_discovery(
    tmp_path: Path,
) -> None:
    scenario = tmp_path / "fleet.json"
    scenario.write_text(json.dumps(startup.scenario(2, dynamic_mig=False, claims=0)))
    code, modules = _loaded("simulate", str(scenario))
    assert code == 0
    assert "pydantic_core" in modules  # the objects were decoded
    assert sorted(modules & set(NOT_FOR_A_PLAIN_RUN)) == []


def test_simulate_explain_still_explains_a_pending_step() -> None:
    code, modules = _loaded("simulate", "--explain", str(EXAMPLES / "scenarios" / "seed-000.yaml"))
    assert code == 1
    assert "allot.simulation.explain" in modules


def test_a_decoded_workload_loads_its_model_on_first_use() -> None:
    done = subprocess.run(
        [sys.executable, "-c", DECODE_DEPLOYMENT],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.stdout.split() == ["False", "True", "Deployment", "apps"]


def test_validate_imports_no_store_engine() -> None:
    fixture = EXAMPLES / "nvidia" / "a100-40gb-x1-whole-gpu.yaml"
    _, modules = _loaded("validate", str(fixture))
    assert "allot.statuses" in modules  # maps store errors, without the store itself
    assert sorted(modules & {"allot.store.objects", "sqlite3", "asyncio"}) == []


def test_validate_of_dra_objects_loads_only_their_strategies() -> None:
    fixture = EXAMPLES / "nvidia" / "a100-40gb-x1-whole-gpu.yaml"
    _, modules = _loaded("validate", str(fixture))
    assert "allot.registry.kinds.resourceslices" in modules
    workloads = {"allot.registry.kinds.pods", "allot.registry.kinds.deployments"}
    workloads |= {"allot.validation.apps", "allot.validation.batch", "allot.api.apps_v1"}
    workloads |= {"allot.api.tenancy", "allot.validation.tenancy"}  # only a Tenant needs them
    assert sorted(modules & (workloads | {"allot.api.batch_v1", "allot.api.core_v1"})) == []


@pytest.mark.parametrize(
    ("module", "attribute", "argv", "batch"),
    [
        ("validate", "run", ["validate", "x.yaml"], True),
        ("simulate", "run_simulate", ["simulate", "x.yaml"], True),
        ("ops", "run_audit", ["audit"], False),
    ],
)
def test_batch_commands_collect_rarely_during_their_run_only(
    module: str, attribute: str, argv: list[str], batch: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batch commands raise the collector's thresholds while they run, and give the
    caller's back (the demo runs commands inside its own process); others keep them."""
    during: list[tuple[int, ...]] = []

    def run(args: argparse.Namespace) -> int:
        during.append(gc.get_threshold())
        return 0

    monkeypatch.setattr(importlib.import_module(f"allot.cli.{module}"), attribute, run)
    before = gc.get_threshold()
    assert main(argv) == 0
    assert before != BATCH_GC_THRESHOLDS
    assert during == [BATCH_GC_THRESHOLDS if batch else before]
    assert gc.get_threshold() == before
