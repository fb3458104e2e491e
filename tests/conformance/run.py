"""Replaying the corpus on both servers and reporting ``N requests, M identical, K different``.

:func:`measure` starts a fresh embedded platform (``allot up``'s server and controllers,
seed 000's fleet published) and a fresh real Kubernetes 1.36 (``tests.realkube``, the same
fleet published through the API), replays every suite on each and compares the answers;
:func:`report` prints the count and a line per difference, marked with its row in
docs/conformance.md where ``explained.yaml`` lists it, ``NEW`` where not. Run by
``make conformance`` (``python -m tests.conformance``, which exits 1 on a NEW difference),
by ``make bench`` (bench/conformance.py) and, on a subset, by
tests/e2e/test_conformance.py. ``--embedded`` and ``--real`` take the kubeconfigs of
servers already running instead (for working on the corpus).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.conformance.compare import comparable, differences, fingerprint, project, summary
from tests.conformance.corpus import Suite, load_corpus
from tests.conformance.replay import Answer, Target
from tests.conformance.scenarios import scenario_suites

EXPLAINED = Path(__file__).parent / "explained.yaml"


@dataclass(frozen=True)
class Difference:
    request: str
    paths: list[str]
    lines: list[str]


@dataclass
class Result:
    requests: int = 0
    differences: list[Difference] = field(default_factory=list)
    setup_errors: list[str] = field(default_factory=list)

    @property
    def identical(self) -> int:
        return self.requests - len(self.differences)


def all_suites() -> list[Suite]:
    return scenario_suites() + load_corpus()


def explained() -> dict[str, dict[str, Any]]:
    """``explained.yaml`` by request id."""
    entries = yaml.safe_load(EXPLAINED.read_text()) or []
    return {str(entry["request"]): entry for entry in entries}


@contextmanager
def fresh_servers(root: Path) -> Iterator[tuple[Path, Path]]:
    """The kubeconfigs of a fresh embedded platform and a fresh real cluster."""
    from tests.e2e.conftest import running_platform
    from tests.realkube import MISSING, running_real_kube

    if MISSING is not None:
        raise SystemExit(MISSING)
    with running_platform(root / "embedded") as embedded, running_real_kube(root / "real") as real:
        yield embedded.kubeconfig, real.kubeconfig


def measure(
    embedded: Path,
    real: Path,
    suites: list[Suite],
    progress: Callable[[str], None] = lambda _: None,
    show: str | None = None,
) -> Result:
    """Replay ``suites`` on the servers of both kubeconfigs and compare every answer."""
    answers: list[dict[str, Answer]] = []
    result = Result()
    for name, kubeconfig in (("embedded", embedded), ("real", real)):
        target = Target(name, kubeconfig)
        try:
            replies: dict[str, Answer] = {}
            for suite in suites:
                progress(f"{name}: {suite.name} ({len(suite.requests)} requests)")
                replies.update(target.replay(suite))
            answers.append(replies)
            result.setup_errors += [f"{name}: {error}" for error in target.setup_errors]
        finally:
            target.close()
    for suite in suites:
        for request in suite.requests:
            result.requests += 1
            left = comparable(answers[0][request.id], request)
            right = comparable(answers[1][request.id], request)
            left["body"], right["body"] = project(request.view, left["body"], right["body"])
            found = differences(left, right)
            if show and show in request.id:
                progress(
                    f"{request.id}\n  embedded: {json.dumps(left)}\n  real: {json.dumps(right)}"
                )
            if found:
                result.differences.append(
                    Difference(request.id, fingerprint(found), summary(found))
                )
    return result


def report(result: Result, known: dict[str, dict[str, Any]]) -> list[str]:
    """The printed lines: the count first, then each difference (embedded != real)."""
    lines = [
        f"{result.requests} requests, {result.identical} identical, "
        f"{len(result.differences)} different (allot embedded != Kubernetes 1.36.3)"
    ]
    for difference in result.differences:
        entry = known.get(difference.request)
        if entry is None:
            mark = "NEW"
        elif not _matches(entry, difference):
            mark = f"CHANGED (explained: {', '.join(entry['docs'])})"
        else:
            mark = f"explained: {', '.join(entry['docs'])}"
        lines.append(f"- {difference.request} [{mark}]")
        lines += [f"    {line}" for line in difference.lines]
    lines += [f"- setup refused on {error}" for error in result.setup_errors]
    seen = {difference.request for difference in result.differences}
    gone = {
        request for request in known if request not in seen and not known[request].get("varies")
    }
    lines += [f"- {request} [explained, but now identical]" for request in sorted(gone)]
    return lines


def _matches(entry: dict[str, Any], difference: Difference) -> bool:
    """An entry explains a difference with its paths; one marked ``varies`` (a controller
    that acts at its own pace decides which fields differ) whatever the paths."""
    return bool(entry.get("varies")) or entry.get("paths") == difference.paths


def unexplained(result: Result, known: dict[str, dict[str, Any]]) -> list[str]:
    return [
        difference.request
        for difference in result.differences
        if difference.request not in known or not _matches(known[difference.request], difference)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance")
    parser.add_argument("--embedded", type=Path, help="kubeconfig of a running allot")
    parser.add_argument("--real", type=Path, help="kubeconfig of a running real cluster")
    parser.add_argument("--suite", action="append", help="only these suites (by name)")
    parser.add_argument("--json", type=Path, help="also write the differences there, as JSON")
    parser.add_argument("--show", help="print both answers of the requests whose id has this")
    args = parser.parse_args(argv)
    suites = [s for s in all_suites() if not args.suite or s.name in args.suite]

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with ExitStack() as stack:
        if args.embedded and args.real:
            embedded, real = args.embedded, args.real
        else:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="allot-conf-")))
            progress("starting allot's embedded platform and real Kubernetes 1.36")
            embedded, real = stack.enter_context(fresh_servers(root))
        result = measure(embedded, real, suites, progress, args.show)
    known = explained()
    if args.json:
        found = [vars(difference) for difference in result.differences]
        args.json.write_text(json.dumps({"requests": result.requests, "differences": found}))
    print("\n".join(report(result, known)))
    return 1 if unexplained(result, known) else 0
