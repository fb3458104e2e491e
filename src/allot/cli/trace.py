"""``allot simulate --trace TRACE --fleet FLEET``: reading the files, running both modes.

The simulation itself is pure (:mod:`allot.simulation.traces`); this module reads the
trace and the fleet, turns their problems into one ``error:`` line naming the file and the
field (exit 2, no traceback), runs the trace under hard quotas and under fair sharing and
prints the comparison (``-o json`` too). Exit 0 when the run went through. Imported by
:mod:`allot.cli.simulate` only when ``--trace`` is given.
"""

from __future__ import annotations

import argparse
import json
import sys

from allot.driver.fleet import FleetError, parse_fleet
from allot.manifests.documents import ManifestError, read_sources
from allot.simulation.inventory import Inventory, InventoryError
from allot.simulation.trace import Trace, TraceError, parse_trace
from allot.simulation.trace_report import to_json, to_text
from allot.simulation.traces import MODES, simulate


def run_trace(args: argparse.Namespace) -> int:
    if args.trace is None or args.fleet is None:
        print("error: --trace TRACE needs --fleet FLEET (and the other way round)", file=sys.stderr)
        return 2
    loaded = _load(args.trace, args.fleet)
    if loaded is None:
        return 2
    trace, inventory = loaded
    if args.reclaim_grace is not None:
        if args.reclaim_grace < 0:
            print("error: --reclaim-grace must be >= 0 seconds", file=sys.stderr)
            return 2
        trace.grace = args.reclaim_grace
    results = [simulate(trace, inventory, mode) for mode in MODES]
    if args.output == "json":
        print(json.dumps(to_json(results, grace=trace.grace, cycle=trace.cycle), indent=2))
    else:
        print(to_text(results, grace=trace.grace, cycle=trace.cycle))
    return 0


def _load(trace_path: str, fleet_path: str) -> tuple[Trace, Inventory] | None:
    where = trace_path
    try:
        trace = parse_trace(_one_document(trace_path))
        where = fleet_path
        return trace, Inventory(parse_fleet(_one_document(fleet_path)), trace.classes)
    except ManifestError as err:  # names the file already
        print(f"error: {err}", file=sys.stderr)
    except (TraceError, FleetError, InventoryError) as err:
        print(f"error: {where}: {err}", file=sys.stderr)
    return None


def _one_document(path: str) -> object:
    documents = read_sources([path])
    if len(documents) != 1:
        raise TraceError(f"expected one document, found {len(documents)}")
    return documents[0].content
