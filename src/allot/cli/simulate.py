"""``allot simulate SCENARIO`` and ``allot explain SCENARIO``: what-if allocation runs.

``simulate`` places each step's claims and prints a table (or ``-o json``); with
``--explain`` it adds why each failed step did not fit; with ``--trace`` it runs a
workload trace instead (:mod:`allot.cli.trace`). ``explain`` prints only the
explanations. Exit status: 0 when every step was allocated, 1 when one stayed pending or
failed, 2 for an unreadable scenario. ``allot explain pod/NAME`` (or ``resourceclaim/NAME``)
with ``--tenant`` instead asks the running platform why a tenant's pod (or the pods of a
claim) waits: for quota, for a preemption in progress, or for capacity
(:mod:`allot.tenancy.explain`); the platform is reached only on that path.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allot.allocator.placement import PLACEMENTS
from allot.cli.options import add_data_dir
from allot.manifests.documents import ManifestError, read_sources
from allot.simulation.report import to_json, to_text
from allot.simulation.runner import Simulation, StepResult
from allot.simulation.scenario import ScenarioError, parse_scenario

if TYPE_CHECKING:  # explanations are loaded when a command asks for them (issue 28)
    from allot.simulation.explain import RequestExplanation

SCENARIO_SUFFIXES = (".yaml", ".yml", ".json")


def register(subparsers: Any) -> None:
    simulate = subparsers.add_parser(
        "simulate",
        help="place claims on a described fleet, as kube-scheduler 1.36 would",
        description="Run a scenario {features, objects, steps} through allot's port of the "
        "Kubernetes 1.36 DRA allocator.",
    )
    _common(simulate, scenario_optional=True)
    simulate.add_argument(
        "--explain", action="store_true", help="say why each failed step did not fit"
    )
    simulate.add_argument(
        "--trace",
        metavar="TRACE",
        help="instead of a scenario: run a workload trace (tenants, timed gangs) under hard "
        "quotas and under fair sharing, and compare",
    )
    simulate.add_argument(
        "--fleet", metavar="FLEET", help="with --trace: the fleet file (as `allot up --fleet`)"
    )
    simulate.add_argument(
        "--reclaim-grace",
        type=float,
        metavar="SECONDS",
        help="with --trace: how long an evicted workload keeps its devices (default: the "
        "trace's reclaimGraceSeconds, else 30)",
    )
    simulate.set_defaults(run=run_simulate)
    explain = subparsers.add_parser(
        "explain",
        help="say why claims of a scenario cannot be placed",
        description="For every step of the scenario that does not fit: per node and request, "
        "the candidates and why each device was rejected.",
    )
    _common(explain, scenario_help=EXPLAIN_TARGET_HELP)
    explain.add_argument(
        "--tenant",
        help="for pod/NAME or resourceclaim/NAME: the tenant the object is in (without: a "
        "host object)",
    )
    explain.add_argument(
        "-n",
        "--namespace",
        default="default",
        help="the namespace of pod/NAME or resourceclaim/NAME (the tenant's with --tenant)",
    )
    add_data_dir(explain)
    explain.set_defaults(run=run_explain)


def live_target(text: str) -> tuple[str, str] | None:
    """``("Pod", name)`` or ``("ResourceClaim", name)`` for ``pod/NAME``-like text."""
    kind, separator, name = text.partition("/")
    kinds = {"pod": "Pod", "pods": "Pod", "po": "Pod", "resourceclaim": "ResourceClaim"}
    kinds["resourceclaims"] = "ResourceClaim"
    if not separator or not name or kind.lower() not in kinds:
        return None
    return kinds[kind.lower()], name


SCENARIO_HELP = "YAML or JSON file, or -"
EXPLAIN_TARGET_HELP = (
    "YAML or JSON scenario file, or -, or pod/NAME or resourceclaim/NAME of a running "
    "platform's tenant"
)


def _common(
    parser: argparse.ArgumentParser,
    *,
    scenario_optional: bool = False,
    scenario_help: str = SCENARIO_HELP,
) -> None:
    parser.add_argument(
        "scenario",
        metavar="SCENARIO",
        nargs="?" if scenario_optional else None,
        help=scenario_help,
    )
    parser.add_argument(
        "-o", "--output", choices=["text", "json"], default="text", help="report format"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed for generated share IDs (default: 0)"
    )
    parser.add_argument(
        "--placement",
        choices=PLACEMENTS,
        default="first-fit",
        help="node order: first-fit (by name) or pack (fewest free devices first); use the "
        "same as `allot up --placement`",
    )


def _load(args: argparse.Namespace) -> Simulation | None:
    try:
        documents = read_sources([args.scenario])
        if len(documents) != 1:
            raise ScenarioError(f"expected one scenario document, found {len(documents)}")
        return Simulation(
            parse_scenario(documents[0].content), seed=args.seed, placement=args.placement
        )
    except ManifestError as err:  # names the file already
        print(f"error: {err}", file=sys.stderr)
        path = Path(args.scenario)
        if args.scenario != "-" and not path.exists() and path.suffix not in SCENARIO_SUFFIXES:
            print(
                "hint: SCENARIO is a file; for the claims of a running cluster, "
                "`allot doctor` explains every pending one",
                file=sys.stderr,
            )
        return None
    except ScenarioError as err:
        print(f"error: {args.scenario}: {err}", file=sys.stderr)
        return None


def _explanations(
    simulation: Simulation, results: list[StepResult]
) -> dict[int, list[RequestExplanation]]:
    from allot.simulation.explain import explain_step

    return {r.step.index: explain_step(simulation, r) for r in results if not r.success}


def run_simulate(args: argparse.Namespace) -> int:
    if args.trace is not None or args.fleet is not None:
        if args.scenario is not None or args.explain:
            print("error: --trace takes no SCENARIO and no --explain", file=sys.stderr)
            return 2
        from allot.cli.trace import run_trace

        return run_trace(args)
    if args.scenario is None:
        print("error: give a SCENARIO file, or --trace TRACE --fleet FLEET", file=sys.stderr)
        return 2
    simulation = _load(args)
    if simulation is None:
        return 2
    results = simulation.run()
    explanations = _explanations(simulation, results) if args.explain else None
    if args.output == "json":
        print(json.dumps(to_json(results, explanations), indent=2))
    else:
        print(to_text(results, explanations))
    return 0 if all(r.success for r in results) else 1


def run_explain(args: argparse.Namespace) -> int:
    target = live_target(args.scenario)
    if target is not None and not Path(args.scenario).exists():
        from allot.cli.pending import explain_live  # reaches the platform: loaded only here

        return explain_live(args, *target)
    simulation = _load(args)
    if simulation is None:
        return 2
    results = simulation.run()
    explanations = _explanations(simulation, results)
    if args.output == "json":
        print(json.dumps(to_json(results, explanations), indent=2))
        return 0 if all(r.success for r in results) else 1
    from allot.simulation.explain import render_text

    for result in results:
        if result.success:
            continue
        print(f"step {result.step.index} ({result.step.name}): {result.error}")
        text = render_text(explanations.get(result.step.index, []))
        if text:
            print(text)
    if all(r.success for r in results):
        print("every step fits: nothing to explain")
        return 0
    return 1
