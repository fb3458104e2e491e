"""The API-level escape suite over raw HTTPS: every case of ``tests/scenarios/api-escapes.yaml``
is sent as tenant legal-ai (or with the token the case names) and must be answered as the
case expects, refusals as a ``Status`` with a clear message, while the host stays exactly
as it was and the server keeps answering. ``tests/e2e/test_tenancy_isolation.py`` runs the
same kind of attempts through the real kubectl; the watch limit, the dashboard's escaping
and the scan for leaked tokens are in ``test_tenant_traces.py``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from tests.e2e.tenancy import REPO, Tenancy, https, seed_platform, start_workloads

pytestmark = pytest.mark.slow
CASES: list[dict[str, Any]] = yaml.safe_load(
    (REPO / "tests" / "scenarios" / "api-escapes.yaml").read_text()
)


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    with seed_platform(tmp_path_factory.mktemp("api-escapes")) as running:
        start_workloads(running)
        yield running


@pytest.fixture(scope="module")
def client(tenancy: Tenancy) -> Iterator[httpx.Client]:
    with https(tenancy) as opened:
        yield opened


def host_snapshot(tenancy: Tenancy, client: httpx.Client) -> dict[str, Any]:
    """What an escape could change on the host: objects, allocations, reservations, nodes."""
    token = tenancy.cluster.server.api.registry.tokens.ensure("host")
    headers = {"Authorization": f"Bearer {token}"}
    paths = {
        "pods": "/api/v1/pods",
        "claims": "/apis/resource.k8s.io/v1/resourceclaims",
        "templates": "/apis/resource.k8s.io/v1/resourceclaimtemplates",
        "namespaces": "/api/v1/namespaces",
        "configmaps": "/api/v1/configmaps",
        "nodes": "/api/v1/nodes",
        "classes": "/apis/resource.k8s.io/v1/deviceclasses",
        "slices": "/apis/resource.k8s.io/v1/resourceslices",
        "tenants": "/apis/allot.dev/v1alpha1/tenants",
    }
    snapshot: dict[str, Any] = {}
    for key, path in paths.items():
        response = client.get(f"/clusters/host{path}", headers=headers)
        assert response.status_code == 200, response.text
        snapshot[key] = sorted(_essentials(key, item) for item in response.json()["items"])
    return snapshot


def _essentials(kind: str, item: dict[str, Any]) -> str:
    metadata = item["metadata"]
    facts: dict[str, Any] = {"name": f"{metadata.get('namespace', '')}/{metadata['name']}"}
    status = item.get("status") or {}
    if kind == "claims":
        facts["allocation"] = status.get("allocation")
        facts["reservedFor"] = status.get("reservedFor")
    elif kind == "pods":
        facts["node"] = item["spec"].get("nodeName")
        facts["labels"] = metadata.get("labels")
    elif kind == "nodes":
        facts["spec"] = item.get("spec")
    return json.dumps(facts, sort_keys=True)


def _secret(tenancy: Tenancy, name: str) -> str:
    return tenancy.cluster.server.api.registry.tokens.ensure(name)


def _substituted(tenancy: Tenancy, value: Any) -> Any:
    """``HOST_TOKEN`` and ``LEGAL_TOKEN`` placeholders in a case replaced by the tokens."""
    text = json.dumps(value)
    text = text.replace("HOST_TOKEN", _secret(tenancy, "host"))
    text = text.replace("LEGAL_TOKEN", _secret(tenancy, "legal-ai"))
    return json.loads(text)


def _headers(tenancy: Tenancy, case: dict[str, Any]) -> dict[str, str]:
    headers: dict[str, str] = {}
    header = case.get("header")
    if header == "host+x":
        headers["Authorization"] = f"Bearer {_secret(tenancy, 'host')}x"
    elif header == "basic-host":
        headers["Authorization"] = f"Basic {_secret(tenancy, 'host')}"
    elif header is not None:
        headers["Authorization"] = header
    elif case.get("token", "legal-ai") != "none":
        headers["Authorization"] = f"Bearer {_secret(tenancy, case.get('token', 'legal-ai'))}"
    if "contentType" in case:
        headers["Content-Type"] = case["contentType"]
    if "accept" in case:
        headers["Accept"] = case["accept"]
    if "cookie" in case:
        headers["Cookie"] = f"allot_session={_substituted(tenancy, case['cookie'])}"
    return headers


def body_of(case: dict[str, Any]) -> bytes | None:
    """The request body a case describes: an object as JSON, or text built to a size or
    depth (``repeat``: one text many times; ``nest``: wrapped in open/close many times)."""
    if "body" in case:
        return json.dumps(case["body"]).encode()
    if "text" not in case:
        return None
    text: str = case["text"]
    if "repeat" in case:
        repeat = case["repeat"]
        text += repeat["text"] * repeat["times"] + repeat["then"]
    if "nest" in case:
        nest = case["nest"]
        text += nest["open"] * nest["times"] + "1" + nest["close"] * nest["times"] + nest["then"]
    return text.encode()


def send(tenancy: Tenancy, client: httpx.Client, case: dict[str, Any]) -> httpx.Response:
    if "rawPath" in case:
        url = httpx.URL(client.base_url.join("/"), raw_path=case["rawPath"].encode())
        if case.get("query"):
            url = url.copy_merge_params(_substituted(tenancy, case["query"]))
    else:
        cluster = case.get("cluster") or case.get("token") or "legal-ai"
        if cluster == "none":
            cluster = "legal-ai"
        url = client.base_url.join(f"/clusters/{cluster}{case['path']}").copy_merge_params(
            _substituted(tenancy, case.get("query") or {})
        )
    if "form" in case:
        form = _substituted(tenancy, case["form"])
        return client.request(case["method"], url, data=form, headers=_headers(tenancy, case))
    return client.request(
        case["method"], url, content=body_of(case), headers=_headers(tenancy, case)
    )


def check_answer(response: httpx.Response, expect: dict[str, Any]) -> None:
    """The response is the expected one; a refusal is a Status with a clear message."""
    assert response.status_code == expect["code"], response.text[:2000]
    for text in expect.get("without") or []:
        assert text not in response.text, f"{text!r} leaked: {response.text[:2000]}"
    if response.headers.get("content-type", "").startswith("text/html"):
        if "message" in expect:
            assert re.search(expect["message"], response.text), response.text
        return
    if response.status_code >= 400:
        status = response.json()
        assert status["kind"] == "Status", status
        assert status["reason"] == expect["reason"], status
        assert status["message"], status
        if "message" in expect:
            assert re.search(expect["message"], status["message"]), status["message"]
    if "items" in expect:
        assert len(response.json()["items"]) == expect["items"], response.text[:2000]


def still_answering(client: httpx.Client) -> None:
    started = time.monotonic()
    response = client.get("/healthz")
    assert response.status_code == 200
    assert time.monotonic() - started < 1.0, "the server was slow to answer after the attempt"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_an_api_escape_is_refused(
    tenancy: Tenancy, client: httpx.Client, case: dict[str, Any]
) -> None:
    before = host_snapshot(tenancy, client)
    response = send(tenancy, client, case)
    check_answer(response, case["expect"])
    still_answering(client)
    assert host_snapshot(tenancy, client) == before
