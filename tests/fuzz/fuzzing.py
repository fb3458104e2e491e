"""Fuzzing every served path and verb from the API server's own OpenAPI v3 documents.

schemathesis reads the documents the server serves (``/openapi/v3`` and one per
group-version, merged) and generates, for every operation, requests that fit the schema
(positive) and requests mutated to break it (negative: wrong types in query parameters and
bodies, missing required parts, wrong content types). Each request goes over HTTPS on
loopback with a cluster's own token: the host's admin token against a bare server, then a
tenant's token against its virtual cluster on the whole platform. For every response:

- never a 5xx;
- every error is a Kubernetes ``Status`` (``kind: Status``, ``apiVersion: v1``, ``code``
  equal to the HTTP status, a reason and a message);
- no hang: each request has a bounded timeout (watches get ``timeoutSeconds=1``);
- no partial write: a refused write leaves the targeted kind's objects (names and
  resourceVersions, listed before and after) unchanged, and on the bare host server the
  store's resourceVersion too (nothing else writes there).

Hypothesis runs with a fixed seed per target and a fixed number of examples per operation
and mode (2 on the host; 1 in the tenant, whose operations are the host's own less the
host-only kinds), so the same cases run every time and the suite stays within its CI
budget. The explicit hostile cases (invalid UTF-8, deep nesting, bad patches, ...) are data in
``tests/scenarios/malformed-requests.yaml``, run by ``tests/e2e/test_malformed_requests.py``
with their exact answers and here against the tenant.

This module is the fuzzer and its checks. The tests are ``test_host_fuzz_even.py`` and
``test_host_fuzz_odd.py`` (the host's operations in two halves, so that two pytest-xdist
workers share the longest suite) and ``test_tenant_fuzz.py``; the targets are the fixtures
of ``conftest.py``.
"""

from __future__ import annotations

import json
import ssl
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis import Case, GenerationMode
from schemathesis.schemas import APIOperation

Operation = APIOperation[Any, Any, Any, Any]
FuzzCase = Case[Any]
REQUEST_TIMEOUT = 10.0


@dataclass
class Target:
    """One cluster's API: where it is, its token, and whether its store is quiet (no
    controllers write to it, so the store's resourceVersion must not move on a refusal)."""

    base_url: str
    token: str
    ca_cert: Path
    quiet: bool
    seed: int
    examples: int
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            verify=ssl.create_default_context(cafile=str(self.ca_cert)),
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=REQUEST_TIMEOUT,
        )


def served_schema(target: Target) -> Any:
    """The group-version documents the server lists at ``/openapi/v3``, merged."""
    with target.client() as http:
        index = http.get("/openapi/v3").json()
        merged: dict[str, Any] = {}
        for key in sorted(index["paths"]):
            document = http.get(f"/openapi/v3/{key}").json()
            paths = {**merged.get("paths", {}), **document["paths"]}
            merged = {**document, "paths": paths}
    return schemathesis.openapi.from_dict(merged)


# ----------------------------------------------------------------------------- the fuzzer
def fuzz(target: Target, shard: tuple[int, int] = (0, 1)) -> None:
    """Fuzz the target's operations; ``shard`` (index, count): every count-th operation
    from index on, in the order of their paths and methods."""
    schema = served_schema(target)
    operations = sorted(
        (result.ok() for result in schema.get_all_operations()),
        key=lambda operation: (operation.path, operation.method),
    )
    index, count = shard
    operations = operations[index::count]
    started = time.monotonic()
    with target.client() as http:
        for operation in operations:
            for mode in modes(operation):
                run_operation(target, http, operation, mode)
    seconds = time.monotonic() - started
    total = sum(target.statuses.values())
    print(  # the figures for the report (pytest -rP shows them)
        f"{target.base_url}: {len(operations)} operations, {total} cases in {seconds:.1f}s, "
        f"statuses {dict(sorted(target.statuses.items()))}"
    )
    assert not target.failures, "\n".join(target.failures[:20])
    assert not [code for code in target.statuses if code >= 500]


def modes(operation: Operation) -> list[GenerationMode]:
    """Negative cases need something to break: a query parameter or a body."""
    breakable = bool(operation.query) or bool(operation.body)
    return (
        [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
        if breakable
        else [GenerationMode.POSITIVE]
    )


def run_operation(
    target: Target, http: httpx.Client, operation: Operation, mode: GenerationMode
) -> None:
    @seed(target.seed)
    @settings(
        max_examples=target.examples,
        derandomize=False,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def one(case: FuzzCase) -> None:
        check_case(target, http, operation, case)

    one()


def check_case(target: Target, http: httpx.Client, operation: Operation, case: FuzzCase) -> None:
    bound_watch(case)
    collection = collection_path(operation, case)
    writes = operation.method.upper() != "GET"
    before = snapshot(http, collection) if writes else None
    store_rv = store_version(http) if writes and target.quiet else None
    try:
        response = case.call(
            base_url=target.base_url,
            headers={"Authorization": f"Bearer {target.token}"},
            verify=str(target.ca_cert),
            timeout=REQUEST_TIMEOUT,
        )
    except Exception as err:  # a hang (timeout) or a connection the server broke
        target.failures.append(f"{describe(case)}: {err!r}")
        return
    code = response.status_code
    target.statuses[code] += 1
    if code >= 500:
        target.failures.append(f"{describe(case)}: {code} {response.text[:300]}")
    if code < 400:
        return
    problem = status_problem(code, _json(response.content))
    if problem:
        target.failures.append(f"{describe(case)}: {problem}")
    if before is not None and snapshot(http, collection) != before:
        target.failures.append(f"{describe(case)}: refused with {code} but wrote {collection}")
    if store_rv is not None and store_version(http) != store_rv:
        target.failures.append(f"{describe(case)}: refused with {code} but the store moved")


def bound_watch(case: FuzzCase) -> None:
    """A watch streams until its timeout: give valid ones one second, leave broken ones."""
    query = case.query
    if not isinstance(query, dict) or str(query.get("watch", "")).lower() not in ("true", "1"):
        return
    timeout = str(query.get("timeoutSeconds", ""))
    if not timeout or timeout.lstrip("-").isdigit():
        query["timeoutSeconds"] = "1"


def collection_path(operation: Operation, case: FuzzCase) -> str:
    """The targeted kind across all namespaces: ``/api/v1/configmaps`` for
    ``/api/v1/namespaces/{namespace}/configmaps/{name}/status``."""
    parts = operation.path.strip("/").split("/")
    if "{namespace}" in parts:
        at = parts.index("{namespace}")
        parts = parts[: at - 1] + parts[at + 1 :]
    if "{name}" in parts:
        parts = parts[: parts.index("{name}")]
    return "/" + "/".join(parts)


def snapshot(http: httpx.Client, collection: str) -> dict[tuple[str, str], str]:
    """Every object of a kind, as (namespace, name) -> resourceVersion."""
    response = http.get(collection)
    if response.status_code != 200:  # a kind this cluster does not serve
        return {("", ""): str(response.status_code)}
    items = response.json()["items"]
    return {
        (i["metadata"].get("namespace", ""), i["metadata"]["name"]): i["metadata"][
            "resourceVersion"
        ]
        for i in items
    }


def store_version(http: httpx.Client) -> str:
    version: str = http.get("/api/v1/namespaces").json()["metadata"]["resourceVersion"]
    return version


def status_problem(code: int, body: Any) -> str | None:
    """What keeps ``body`` from being the ``Status`` of an error answered ``code``."""
    if not isinstance(body, dict):
        return f"{code} with a body that is not a JSON object: {body!r:.200}"
    expected = {"kind": "Status", "apiVersion": "v1", "code": code, "status": "Failure"}
    wrong = {k: body.get(k) for k, v in expected.items() if body.get(k) != v}
    if wrong or not body.get("reason") or not body.get("message"):
        return f"{code} with a body that is not a Status: {body!r:.300}"
    return None


def _json(content: bytes) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return content[:200]


def describe(case: FuzzCase) -> str:
    return (
        f"{case.method} {case.formatted_path} query={case.query!r:.200} "
        f"type={case.media_type} body={case.body!r:.300}"
    )
