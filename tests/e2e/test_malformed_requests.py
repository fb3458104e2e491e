"""Every malformed request is the client's mistake: a 4xx Status, never a 500.

The cases are data (``tests/scenarios/malformed-requests.yaml``); each runs over HTTPS
against the embedded platform. After them, the target ConfigMap is unchanged: a refused
request writes nothing. A server bug, by contrast, is logged with its traceback and
answered as a 500 ``InternalError`` Status.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.e2e.conftest import Cluster

pytestmark = pytest.mark.slow
CASES = yaml.safe_load(
    (Path(__file__).parents[1] / "scenarios" / "malformed-requests.yaml").read_text()
)
TARGET = "/api/v1/namespaces/default/configmaps/target"


EXPENSIVE = "object.data.all(a, object.data.all(b, object.data.all(c, a != b || b != c || a == c)))"
POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


@pytest.fixture(scope="module", autouse=True)
def target(http: httpx.Client) -> None:
    http.post(
        "/api/v1/namespaces/default/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"},
              "data": {"a": "1"}},
    )  # fmt: skip
    install_iteration_budget(http)


def install_iteration_budget(http: httpx.Client) -> None:
    for path, obj in zip((POLICIES, BINDINGS), iteration_budget(), strict=True):
        response = http.post(path, json=obj)
        assert response.status_code == 201, response.text


def iteration_budget() -> list[dict[str, Any]]:
    """The policy the scenario "a policy expression past the CEL iteration budget" meets
    and its binding: bound to ConfigMaps named ``expensive``, its expression past the
    runtime's budget (also the setup of the conformance corpus, tests/conformance)."""
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
              "resources": ["configmaps"]}]  # fmt: skip
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "iteration-budget"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "matchConditions": [
                {"name": "expensive", "expression": "object.metadata.name == 'expensive'"}
            ],
            "validations": [{"expression": EXPENSIVE}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "iteration-budget"},
        "spec": {"policyName": "iteration-budget", "validationActions": ["Deny"]},
    }
    return [policy, binding]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_a_malformed_request_gets_a_clear_status(http: httpx.Client, case: dict[str, Any]) -> None:
    before = http.get(TARGET).json()
    response = send_scenario(http, case)
    expect = case["expect"]
    assert response.status_code == expect["code"], response.text
    status = response.json()
    if expect["code"] < 400:  # a hostile request that is served (``limit=-1``)
        assert status["kind"].endswith("List")
        return
    assert status["kind"] == "Status"
    assert status["code"] == expect["code"]
    assert status["reason"] == expect["reason"]
    if "message" in expect:
        assert status["message"] == expect["message"]
    if "contains" in expect:
        assert expect["contains"] in status["message"]
    if "cause" in expect:
        cause = status["details"]["causes"][0]
        assert (cause["field"], cause["message"]) == ("patch", expect["cause"])
    assert http.get(TARGET).json() == before  # nothing was written


def send_scenario(http: httpx.Client, case: dict[str, Any]) -> httpx.Response:
    """One case of ``malformed-requests.yaml`` (see its header for the keys)."""
    headers = {"Content-Type": case["contentType"]} if "contentType" in case else {}
    return http.request(
        case["method"],
        case["path"],
        content=scenario_body(case),
        headers=headers,
        params=case.get("query") or {},
    )


def scenario_body(case: dict[str, Any]) -> bytes | None:
    """``body`` (text or ``!!binary``), ``nestedArrays: N`` (N ``[`` then N ``]``) or
    ``padding: N`` (a JSON object with an N-byte string)."""
    if "nestedArrays" in case:
        depth = int(case["nestedArrays"])
        return b"[" * depth + b"]" * depth
    if "padding" in case:
        padding = b"x" * int(case["padding"])
        return b'{"metadata": {"name": "big"}, "data": {"a": "' + padding + b'"}}'
    body = case.get("body")
    if isinstance(body, str):
        return body.encode()
    return bytes(body) if body is not None else None


def test_a_server_bug_is_logged_with_its_traceback_and_answered_as_a_status(
    http: httpx.Client, cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    handlers = cluster.server.api.registry.handlers

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected fault")

    original = handlers.get
    handlers.get = broken  # type: ignore[method-assign,assignment]
    try:
        with caplog.at_level(logging.ERROR, logger="allot.apiserver"):
            response = http.get(TARGET)
    finally:
        handlers.get = original  # type: ignore[method-assign]
    assert response.status_code == 500
    status = response.json()
    assert status["reason"] == "InternalError"
    assert status["message"] == "Internal error occurred: injected fault"
    record = next(r for r in caplog.records if r.name == "allot.apiserver")
    assert record.getMessage() == (
        "internal error serving GET /clusters/host" + TARGET + " on cluster host"
    )
    assert record.exc_info is not None
    assert "injected fault" in caplog.text
    assert "Traceback" in caplog.text
