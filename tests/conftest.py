"""Shared fixtures and helpers for the test suite.

Scenario files live in ``tests/scenarios`` and the published examples in ``examples/``;
both are plain data read by several test modules. Hypothesis runs derandomized so every
run is repeatable.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from hypothesis import settings

from allot.cel import SelectorCompiler
from allot.controllers.context import ControllerContext
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry

if TYPE_CHECKING:  # imported by the fixture: most modules never start a real cluster
    from tests.realkube import RealKube

REPO = Path(__file__).resolve().parent.parent
NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)
SCENARIOS = REPO / "tests" / "scenarios"
EXAMPLES = REPO / "examples"

settings.register_profile("repeatable", derandomize=True, deadline=None, max_examples=150)
settings.load_profile("repeatable")


def load_yaml_documents(path: Path) -> list[Any]:
    with path.open() as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def load_scenarios(name: str) -> list[dict[str, Any]]:
    documents = load_yaml_documents(SCENARIOS / name)
    scenarios: list[dict[str, Any]] = documents[0]
    return scenarios


@pytest.fixture(scope="session")
def compiler() -> SelectorCompiler:
    return SelectorCompiler()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the golden files under tests/golden from the current output",
    )


@pytest.fixture(params=["inprocess", "remote", "real"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The client protocol's implementations, one test run each (tests/engines.py): in
    process, the embedded API server, and real Kubernetes 1.36 (skipped, saying why,
    where ``make kube`` has not built its binaries)."""
    from tests.engines import ENGINES

    if request.param == "real":
        from tests.realkube import MISSING

        if MISSING is not None:
            pytest.skip(MISSING)
    with ENGINES[request.param](tmp_path) as found:
        yield found


@pytest.fixture
def team_context(tmp_path: Path) -> Iterator[ControllerContext]:
    """A host context on a fresh registry (no controllers) whose clock stands at
    :data:`NOW`, with the namespace ``team`` created; the registry is closed after."""
    registry = Registry(tmp_path, clock=lambda: NOW)
    try:
        context = ControllerContext(HOST_CLUSTER, registry.store, registry.handlers, lambda: NOW)
        context.create("Namespace", {"metadata": {"name": "team"}}, "test")
        yield context
    finally:
        registry.close()


@pytest.fixture(scope="module")
def real_kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKube]:
    """Real Kubernetes 1.36 with seed 000's fleet, once per module (see tests/realkube.py);
    the module's tests skip, saying why, where ``make kube`` has not built the binaries."""
    from tests.realkube import MISSING, running_real_kube

    if MISSING is not None:
        pytest.skip(MISSING)
    with running_real_kube(tmp_path_factory.mktemp("realkube")) as kube:
        yield kube
