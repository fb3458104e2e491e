"""Fidelity measured against real Kubernetes 1.36 (issue 29): a subset of the request
corpus (tests/conformance) replayed on a fresh embedded platform and a fresh real
cluster. The differences found must be exactly those ``explained.yaml`` lists for that
subset, with the same differing paths (``varies`` entries: any paths): a new difference, a
changed one, or one that is gone (an explanation to drop) fails. Each explanation names
rows of docs/conformance.md that exist. Skips where ``make kube`` has not built the real binaries.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conformance.run import all_suites, explained, measure, unexplained
from tests.e2e.conftest import running_platform
from tests.realkube import RealKube

pytestmark = pytest.mark.slow
SUBSET = ("status", "watch", "discovery", "dra", "strategic-merge-patch", "authorization")
DOCS = Path(__file__).parents[2] / "docs" / "conformance.md"


def test_every_explanation_names_a_row_of_the_ledger() -> None:
    rows = set(re.findall(r"^\| `([a-z0-9-]+)` \|", DOCS.read_text(), re.MULTILINE))
    named = {row for entry in explained().values() for row in entry["docs"]}
    missing = named - rows
    assert not missing, f"explained.yaml names rows docs/conformance.md lacks: {missing}"


def test_the_corpus_differs_from_kubernetes_only_where_explained(
    real_kube: RealKube, tmp_path: Path
) -> None:
    suites = [suite for suite in all_suites() if suite.name in SUBSET]
    assert len(suites) == len(SUBSET)
    with running_platform(tmp_path / "embedded") as embedded:
        result = measure(embedded.kubeconfig, real_kube.kubeconfig, suites)
    ran = {request.id for suite in suites for request in suite.requests}
    known = explained()
    assert result.requests == len(ran)
    assert unexplained(result, known) == []
    seen = {difference.request for difference in result.differences}
    gone = {r for r in known if r in ran and r not in seen and not known[r].get("varies")}
    assert gone == set(), "explained, but now identical: drop them from explained.yaml"
