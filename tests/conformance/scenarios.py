"""The scenario files of ``tests/scenarios`` as corpus suites, so each case is written once.

Each function below reads one file and turns its cases into requests on the host (the
expectations in the file are allot's tests' business; here both servers' answers are
compared with each other):

- ``malformed-requests.yaml``: sent as written, on its ConfigMap ``target`` and CEL policy;
- ``api-escapes.yaml``: the cases a tenant sends with its own token, replayed on the host
  by its administrator (the objects they name do not exist there: 404s, empty lists);
- ``validation.yaml`` and ``workload-validation.yaml``: every object of a kind both serve,
  created with ``dryRun=All`` (an update case creates its old object first, then replaces
  it; a status case replaces ``/status``), in a namespace with the case's labels;
- ``strategic-merge-patch.yaml``: each stored object as a ConfigMap (metadata) or a
  Deployment (a pod spec's lists under ``spec.template.spec``), then the patch;
- ``server-side-apply.yaml``: each step of the ConfigMap, Pod and Deployment cases (apply:
  an apply patch; update: a create or an update with that field manager);
- ``authorization.yaml``: its objects, then each case as the user (impersonated) sending
  the request it describes, or a SubjectAccessReview where the verb is no HTTP method; each
  escalation as the user creating the object.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from allot.types import Obj
from tests.conftest import load_scenarios
from tests.conformance.corpus import Request, Suite, impersonation, query_pairs
from tests.e2e.test_api_escapes import body_of as escape_body
from tests.e2e.test_malformed_requests import iteration_budget, scenario_body


def scenario_suites() -> list[Suite]:
    return [
        malformed_requests(),
        api_escapes(),
    ]


def _request(suite: str, name: str, method: str, path: str, **fields: Any) -> Request:
    return Request(id=f"{suite}/{name}", method=method, path=path, **fields)


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


# ------------------------------------------------------------------ malformed requests
def malformed_requests() -> Suite:
    suite = "malformed-requests"
    target = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "target", "namespace": "default"},
        "data": {"a": "1"},
    }
    requests = [
        _request(
            suite,
            case["name"],
            case["method"],
            case["path"],
            query=query_pairs(case.get("query")),
            headers=(("Content-Type", case["contentType"]),) if "contentType" in case else (),
            body=scenario_body(case),
        )
        for case in load_scenarios("malformed-requests.yaml")
    ]
    return Suite(suite, requests, [target, *iteration_budget()])


# ------------------------------------------------------------------------ api escapes
ESCAPE_KEYS = {"token", "cluster", "rawPath", "header", "cookie"}


def api_escapes() -> Suite:
    suite = "api-escapes"
    requests = [
        _request(
            suite,
            case["name"],
            case["method"],
            case["path"],
            query=query_pairs(case.get("query")),
            headers=_headers(case),
            body=escape_body(case),
        )
        for case in load_scenarios("api-escapes.yaml")
        if not ESCAPE_KEYS & set(case)
    ]
    return Suite(suite, requests)


def _headers(case: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    pairs = []
    if "contentType" in case:
        pairs.append(("Content-Type", str(case["contentType"])))
    if "accept" in case:
        pairs.append(("Accept", str(case["accept"])))
    return tuple(pairs)
