"""What a tenant leaves behind where others look: the watches it holds, the strings it
writes as they reach the dashboard, and its token.

- Many watches: legal-ai opens the per-cluster limit of watches and one more, which is
  refused with 429; research-ai and the host are still answered quickly; closed watches
  give their slots back.
- XSS: the tenants write ``<script>``/``<img onerror>`` payloads into every free-text
  field (annotations, labels, Event messages, CEL selector strings that end up in the
  scheduler's reasons); the dashboard page, its panels and the JSON documents carry them
  only escaped, and in Chromium (where installed) no payload runs.
- Tokens: after all of it (and a tenant trying its token on the host and the dashboard),
  no tenant token appears in the platform's log records, pod logs, Events, ``/metrics``,
  the dashboard or any file of the data directory but its kubeconfig and ``tokens.json``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import ssl
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from allot.apiserver.watches import MAX_WATCHES_PER_CLUSTER
from tests.e2e.tenancy import Tenancy, https, seed_platform, start_workloads

pytestmark = pytest.mark.slow
CHROMIUM = os.environ.get("ALLOT_CHROMIUM") or shutil.which("chromium") or ""
SCRIPT = "<script>window.__xss = 'script'</script>"
IMAGE = "<img src=x onerror=\"window.__xss='img'\">"
BARE_IMAGE = "<img src=x onerror=window.__xss=1>"  # no quotes: fits in a CEL string
PAYLOAD_MARKS = ("<script>window.__xss", "<img src=x onerror")
PLATFORM_LOGGERS = ("allot", "uvicorn", "starlette")
PANELS = ("fleet", "tenants", "sharing", "pending", "alerts", "usage")


class Records(logging.Handler):
    """Every log record of the platform (its loggers at DEBUG), with tracebacks."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))


@pytest.fixture(scope="module")
def records() -> Iterator[Records]:
    handler = Records()
    loggers = [logging.getLogger(name) for name in PLATFORM_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    yield handler
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory, records: Records) -> Iterator[Tenancy]:
    with seed_platform(tmp_path_factory.mktemp("traces")) as running:
        start_workloads(running)
        write_payloads(running)
        yield running


def write_payloads(tenancy: Tenancy) -> None:
    """research-ai (no quota) writes the payloads where a tenant can: annotations, an
    Event, a claim whose CEL selector fails on a payload key, with a pod that needs it."""
    selector = f'device.attributes["gpu.nvidia.com"]["{BARE_IMAGE}"] == 1'
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "payload", "annotations": {"note": SCRIPT, "other": IMAGE}},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu-slice",
                            "selectors": [{"cel": {"expression": selector}}],
                        },
                    }
                ]
            }
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "payload-pod", "annotations": {"note": SCRIPT}},
        "spec": {
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "payload"}],
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "command": ["echo", IMAGE],
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "payload.1"},
        "involvedObject": {"kind": "Pod", "name": "payload-pod", "namespace": "default"},
        "reason": "Payload",
        "message": f"{SCRIPT} {IMAGE}",
        "type": "Warning",
    }
    for document in (claim, pod, event):
        tenancy.as_tenant("research-ai", "create", "-f", "-", stdin=json.dumps(document))
    refused = tenancy.as_tenant(
        "research-ai", "label", "claim", "payload", "x=<script>", check=False
    )
    assert refused.returncode != 0
    assert "a valid label must be an empty string or consist of" in refused.stderr
    tenancy.wait(
        lambda: any(p["claim"] == "payload" for p in _capacity(tenancy)["pending"]),
        "the payload claim pending on the host",
    )


def _host(tenancy: Tenancy) -> httpx.Client:
    client = https(tenancy)
    client.headers["Authorization"] = (
        f"Bearer {tenancy.cluster.server.api.registry.tokens.ensure('host')}"
    )
    return client


def _capacity(tenancy: Tenancy) -> Any:
    with _host(tenancy) as client:
        return client.get("/clusters/host/allot/v1/capacity").json()


def dashboard_texts(tenancy: Tenancy) -> dict[str, str]:
    """The dashboard page, each panel, and the host-only documents, as served."""
    token = tenancy.cluster.server.api.registry.tokens.ensure("host")
    texts: dict[str, str] = {}
    with https(tenancy) as client:
        assert client.post("/ui/login", data={"token": token}).status_code == 303
        texts["/ui"] = client.get("/ui").text
        for panel in PANELS:
            texts[f"/ui/fragment/{panel}"] = client.get(f"/ui/fragment/{panel}").text
    with _host(tenancy) as client:
        for path in ("allot/v1/capacity", "allot/v1/audit", "allot/v1/usage", "metrics"):
            texts[path] = client.get(f"/clusters/host/{path}").text
    return texts


# --------------------------------------------------------------------------- watches
async def _open_watches(tenancy: Tenancy, count: int) -> None:
    server = tenancy.cluster.server
    token = server.api.registry.tokens.ensure("legal-ai")
    context = ssl.create_default_context(cafile=server.endpoint.tls.ca_cert)
    url = f"{server.endpoint.url}/clusters/legal-ai/api/v1/namespaces/default/pods"
    limits = httpx.Limits(max_connections=count + 10)
    async with httpx.AsyncClient(
        verify=context, limits=limits, timeout=30, headers={"Authorization": f"Bearer {token}"}
    ) as client:
        params = {"watch": "true", "timeoutSeconds": "120"}
        streams = [client.stream("GET", url, params=params) for _ in range(count)]
        responses = await asyncio.gather(*(s.__aenter__() for s in streams))
        assert [r.status_code for r in responses] == [200] * count
        extra = await client.get(url, params=params)
        assert extra.status_code == 429, extra.text
        status = extra.json()
        assert status["reason"] == "TooManyRequests"
        assert status["message"] == (
            f'too many watches: cluster "legal-ai" already has {count} open, the most one '
            f"cluster may hold ({count}); close one before opening another"
        )
        await asyncio.to_thread(_others_are_answered, tenancy)
        for stream in streams:
            await stream.__aexit__(None, None, None)


def _others_are_answered(tenancy: Tenancy) -> None:
    """While legal-ai holds its limit, research-ai watches and lists, the host lists."""
    server = tenancy.cluster.server
    for cluster in ("research-ai", "host"):
        with https(tenancy) as client:
            client.headers["Authorization"] = f"Bearer {server.api.registry.tokens.ensure(cluster)}"
            started = time.monotonic()
            listed = client.get(f"/clusters/{cluster}/api/v1/pods")
            watched = client.get(
                f"/clusters/{cluster}/api/v1/pods",
                params={"watch": "true", "timeoutSeconds": "1", "resourceVersion": "0"},
            )
            assert listed.status_code == watched.status_code == 200
            assert time.monotonic() - started < 2.0  # the watch itself lasts a second


def test_a_tenants_watches_are_bounded(tenancy: Tenancy) -> None:
    asyncio.run(_open_watches(tenancy, MAX_WATCHES_PER_CLUSTER))
    slots = tenancy.cluster.server.api.watch_slots
    tenancy.wait(lambda: slots.open["legal-ai"] == 0, "the closed watches' slots given back")
    result = tenancy.as_tenant("legal-ai", "get", "pods", "--watch", "--request-timeout=1s")
    assert "TooManyRequests" not in result.stderr


# ------------------------------------------------------------------------------- XSS
def test_the_dashboard_shows_tenant_strings_escaped(tenancy: Tenancy) -> None:
    texts = dashboard_texts(tenancy)
    for path, text in texts.items():
        if path.startswith("/ui"):
            for mark in PAYLOAD_MARKS:
                assert mark not in text, f"{path} carries a raw payload"
    pending = texts["/ui/fragment/pending"]
    assert "&lt;img src=x onerror=" in pending  # the payload did reach the dashboard


def test_no_payload_runs_in_a_browser(tenancy: Tenancy) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM:
        pytest.skip("no Chromium: apt-get install chromium (make test does as root)")
    token = tenancy.cluster.server.api.registry.tokens.ensure("host")
    with playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_context(ignore_https_errors=True).new_page()
        dialogs: list[str] = []

        def dismiss(dialog: Any) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", dismiss)
        page.goto(f"{tenancy.cluster.server.endpoint.url}/ui?token={token}")
        page.wait_for_timeout(2500)  # one refresh of every panel from its fragment
        assert page.evaluate("window.__xss") is None
        assert "onerror=" in page.locator("#panel-pending").inner_text()  # shown as text
        browser.close()
    assert dialogs == []


# ---------------------------------------------------------------------------- tokens
def test_a_tenant_token_never_leaks(tenancy: Tenancy, records: Records) -> None:
    server = tenancy.cluster.server
    tokens = {name: server.api.registry.tokens.ensure(name) for name in ("legal-ai", "research-ai")}
    with https(tenancy) as client:  # the tenant tries its token where it does not belong
        for token in tokens.values():
            client.get("/ui", params={"token": token})
            client.get("/clusters/host/metrics", headers={"Authorization": f"Bearer {token}"})
            client.get("/clusters/host/api/v1/pods", headers={"Authorization": f"Bearer {token}x"})
    places = {**dashboard_texts(tenancy), "log records": "\n".join(records.texts)}
    for cluster in ("host", "legal-ai", "research-ai"):
        events = tenancy.cluster.kubectl(
            "get", "events", "-A", "-o", "json", kubeconfig=_kubeconfig(tenancy, cluster)
        )
        places[f"events of {cluster}"] = events.stdout
    data = server.api.registry.data_dir
    secrets_at = {data / "tokens.json", *(data / "kubeconfigs").glob("*.yaml")}
    for path in data.rglob("*"):
        if path.is_file() and path not in secrets_at:
            places[str(path.relative_to(data))] = path.read_bytes().decode("latin-1")
    assert any(name.startswith("logs/") for name in places), "no pod logs were written"
    for name, token in tokens.items():
        leaks = [place for place, text in places.items() if token in text]
        assert leaks == [], f"{name}'s token appears in {leaks}"


def _kubeconfig(tenancy: Tenancy, cluster: str) -> Any:
    return tenancy.cluster.kubeconfig if cluster == "host" else tenancy.kubeconfig(cluster)
