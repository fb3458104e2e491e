"""``allot validate FILE... | -``: check manifests as the API server would on create.

Prints one kubectl-style line per object (or the API server's error with allot's hints) and
exits 0 when every object is valid or skipped, 1 when any is rejected, 2 when the input
cannot be read or holds no object (the exit codes every allot command uses). ``-o json``
prints a JSON list of ``{source, document, object, outcome, status}`` records for machines.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from allot.cli.output import add_report_output
from allot.manifests.documents import ManifestError, read_sources
from allot.manifests.verdicts import Outcome, Verdict, judge


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check manifests as a Kubernetes 1.36 API server would on create",
        description="Check manifests (multi-document YAML or JSON; '-' for standard input) "
        "as a Kubernetes 1.36 API server would on create.",
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="manifests to check (YAML or JSON; - for standard input)",
    )
    add_report_output(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        documents = read_sources(args.files)
    except ManifestError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    verdicts = judge(documents)
    if args.output == "json":
        print(json.dumps([_record(v) for v in verdicts], indent=2))
    else:
        for verdict in verdicts:
            stream = sys.stdout if verdict.outcome is not Outcome.INVALID else sys.stderr
            print(verdict.render(), file=stream)
    if not verdicts:
        print("error: no objects passed to validate", file=sys.stderr)
        return 2
    return 1 if any(v.outcome is Outcome.INVALID for v in verdicts) else 0


def _record(verdict: Verdict) -> dict[str, Any]:
    return {
        "source": verdict.document.source,
        "document": verdict.document.index + 1,
        "object": verdict.summary,
        "outcome": verdict.outcome.value,
        "status": verdict.status.to_wire() if verdict.status else None,
    }
