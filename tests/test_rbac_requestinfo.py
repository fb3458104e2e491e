"""A request's authorization attributes, as upstream's RequestInfoResolver finds them: the
verb from the method and the path's shape, a namespace's own path, field selectors naming
one object, non-resource paths."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from allot.apiserver.requestinfo import attributes
from allot.registry.rbac.identity import UserInfo

USER = UserInfo("jane", groups=("system:authenticated",))


def request(method: str, path: str, query: str = "", **params: str) -> Request:
    scope = {
        "type": "http",
        "method": method,
        "path": f"/clusters/host{path}",
        "query_string": query.encode(),
        "headers": [],
        "path_params": {"cluster": "host", **params},
    }
    return Request(scope)


CORE = {"version": "v1"}
APPS = {"group": "apps", "version": "v1"}
PODS = {**CORE, "namespace": "a", "plural": "pods"}
SA = {**CORE, "namespace": "a", "plural": "serviceaccounts", "name": "ci"}


@pytest.mark.parametrize(
    ("method", "path", "query", "params", "expected"),
    [
        ("GET", "/api/v1/namespaces/a/pods", "", {**CORE, "namespace": "a", "plural": "pods"},
         ("list", "a", "", "pods", "", "")),
        ("GET", "/api/v1/pods", "watch=true", {**CORE, "plural": "pods"},
         ("watch", "", "", "pods", "", "")),
        ("GET", "/api/v1/namespaces/a/pods", "fieldSelector=metadata.name%3Dweb",
         {**CORE, "namespace": "a", "plural": "pods"}, ("list", "a", "", "pods", "", "web")),
        ("GET", "/api/v1/namespaces/a/pods/web", "", {**PODS, "name": "web"},
         ("get", "a", "", "pods", "", "web")),
        ("DELETE", "/api/v1/namespaces/a/pods", "", {**CORE, "namespace": "a", "plural": "pods"},
         ("deletecollection", "a", "", "pods", "", "")),
        ("DELETE", "/api/v1/namespaces/a/pods/web", "", {**PODS, "name": "web"},
         ("delete", "a", "", "pods", "", "web")),
        ("PATCH", "/apis/apps/v1/namespaces/a/deployments/web/scale", "",
         {**APPS, "namespace": "a", "plural": "deployments", "name": "web", "subresource": "scale"},
         ("patch", "a", "apps", "deployments", "scale", "web")),
        ("POST", "/api/v1/namespaces/a/serviceaccounts/ci/token", "",
         {**SA, "subresource": "token"},
         ("create", "a", "", "serviceaccounts", "token", "ci")),
        ("PUT", "/api/v1/namespaces/a", "", {**CORE, "plural": "namespaces", "name": "a"},
         ("update", "a", "", "namespaces", "", "a")),
        ("PUT", "/api/v1/namespaces/a/finalize", "",
         {**CORE, "namespace": "a", "plural": "finalize"},
         ("update", "a", "", "namespaces", "finalize", "a")),
        ("POST", "/api/v1/namespaces", "", {**CORE, "plural": "namespaces"},
         ("create", "", "", "namespaces", "", "")),
    ],
)  # fmt: skip
def test_resource_requests(
    method: str, path: str, query: str, params: dict[str, str], expected: tuple[str, ...]
) -> None:
    found = attributes(request(method, path, query, **params), USER, "host")
    assert found.resource_request
    assert (
        found.verb,
        found.namespace,
        found.api_group,
        found.resource,
        found.subresource,
        found.name,
    ) == expected


def test_non_resource_requests_use_the_path_below_the_cluster() -> None:
    found = attributes(request("GET", "/apis/apps"), USER, "host")
    assert (found.resource_request, found.verb, found.path) == (False, "get", "/apis/apps")
