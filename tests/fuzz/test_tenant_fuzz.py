"""A tenant's API fuzzed with the tenant's token, and the hostile cases sent to it.

The fuzzer and its checks are in ``tests/fuzz/fuzzing.py``; the tenant (on a whole platform)
is the ``tenant`` fixture of ``conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.test_malformed_requests import install_iteration_budget, send_scenario
from tests.fuzz.fuzzing import Target, fuzz, snapshot, status_problem

pytestmark = pytest.mark.slow
SCENARIOS = Path(__file__).parents[1] / "scenarios" / "malformed-requests.yaml"


def test_fuzzing_a_tenant_api_with_the_tenant_token(tenant: Target) -> None:
    fuzz(tenant)


def test_the_hostile_cases_are_statuses_in_a_tenant_cluster(tenant: Target) -> None:
    """The explicit hostile requests of the scenario file, with the tenant's token: the
    exact answers are pinned against the host; here: 4xx ``Status``, nothing written. The
    tenant gets the host's fixtures: the target ConfigMap and the iteration-budget policy
    (a tenant's own admission policies run in its cluster, as on a vCluster)."""
    cases = yaml.safe_load(SCENARIOS.read_text())
    with tenant.client() as http:
        http.post("/api/v1/namespaces/default/configmaps", json=TARGET_CONFIGMAP)
        install_iteration_budget(http)
        for case in cases:
            before = snapshot(http, "/api/v1/configmaps")
            response = send_scenario(http, case)
            code = response.status_code
            if case["expect"]["code"] < 400:  # served, not refused (``limit=-1``)
                assert code < 400, (case["name"], response.text)
                continue
            assert 400 <= code < 500, (case["name"], response.text)
            problem = status_problem(code, response.json())
            assert problem is None, (case["name"], problem)
            assert snapshot(http, "/api/v1/configmaps") == before, case["name"]


TARGET_CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "target"},
    "data": {"a": "1"},
}
