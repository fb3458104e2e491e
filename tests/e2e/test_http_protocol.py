"""Protocol details and bad input over raw HTTPS: every failure is a clean Status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from allot.apiserver.server import free_port
from tests.e2e.conftest import KUBECTL

pytestmark = pytest.mark.slow
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"


def _status(response: httpx.Response, code: int, reason: str) -> str:
    assert response.status_code == code, response.text
    body = response.json()
    assert body["kind"] == "Status"
    assert body["reason"] == reason
    message: str = body["message"]
    return message


def test_bad_bodies(http: httpx.Client) -> None:
    assert "not valid JSON" in _status(
        http.post(CLAIMS, content=b"{nope", headers={"Content-Type": "application/json"}),
        400,
        "BadRequest",
    )
    assert "unknown format" in _status(
        http.post(CLAIMS, content=b"x", headers={"Content-Type": "text/plain"}),
        415,
        "UnsupportedMediaType",
    )
    big = b'{"a":"' + b"x" * (3 * 1024 * 1024) + b'"}'
    assert "Request entity too large" in _status(
        http.post(CLAIMS, content=big), 413, "RequestEntityTooLarge"
    )
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "other"},
        "spec": {},
    }
    assert "does not match the namespace sent on the request" in _status(
        http.post(CLAIMS, json=claim), 400, "BadRequest"
    )
    assert "does not match the expected" in _status(
        http.post(CLAIMS, json={**claim, "kind": "DeviceClass", "metadata": {"name": "c"}}),
        400,
        "BadRequest",
    )


def test_bad_queries_and_paths(http: httpx.Client) -> None:
    assert "unable to parse requirement" in _status(
        http.get(CLAIMS, params={"labelSelector": "a b c=="}), 400, "BadRequest"
    )
    assert "field label not supported: spec.foo" in _status(
        http.get(CLAIMS, params={"fieldSelector": "spec.foo=x"}), 400, "BadRequest"
    )
    assert (
        _status(http.get("/apis/nope.example.com/v1/things"), 404, "NotFound")
        == "the server could not find the requested resource"
    )
    assert _status(http.put(CLAIMS), 405, "MethodNotAllowed")


def test_field_validation_modes_and_dry_run(http: httpx.Client) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "warned"},
        "spec": {"devices": {}, "extra": 1},
    }
    strict = http.post(CLAIMS, json=claim, params={"fieldValidation": "Strict"})
    assert 'unknown field "spec.extra"' in _status(strict, 400, "BadRequest")
    warned = http.post(CLAIMS, json=claim, params={"fieldValidation": "Warn", "dryRun": "All"})
    assert warned.status_code == 201
    assert 'unknown field \\"spec.extra\\"' in warned.headers["warning"]
    assert "extra" not in warned.json()["spec"]
    assert http.get(f"{CLAIMS}/warned").status_code == 404  # dry run persisted nothing


def test_pagination_and_watch_resume(http: httpx.Client) -> None:
    for index in range(5):
        http.post(
            "/api/v1/namespaces/default/configmaps",
            json={
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"page-{index}", "labels": {"page": "y"}},
            },
        )
    first = http.get(
        "/api/v1/namespaces/default/configmaps", params={"limit": 2, "labelSelector": "page=y"}
    ).json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["page-0", "page-1"]
    rest = http.get(
        "/api/v1/namespaces/default/configmaps",
        params={"limit": 10, "labelSelector": "page=y", "continue": first["metadata"]["continue"]},
    ).json()
    assert [i["metadata"]["name"] for i in rest["items"]] == ["page-2", "page-3", "page-4"]
    start = first["metadata"]["resourceVersion"]
    http.delete("/api/v1/namespaces/default/configmaps/page-0")
    with http.stream(
        "GET",
        "/api/v1/namespaces/default/configmaps",
        params={"watch": "true", "resourceVersion": start, "timeoutSeconds": "1"},
    ) as response:
        events = [json.loads(line) for line in response.iter_lines() if line]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("DELETED", "page-0")]
    with http.stream(
        "GET",
        "/api/v1/namespaces/default/configmaps",
        params={"watch": "true", "resourceVersion": "1", "timeoutSeconds": "1"},
    ) as response:
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert lines[0]["type"] in ("ADDED", "MODIFIED", "DELETED", "ERROR")


def test_watch_list_ends_initial_events_with_a_bookmark(http: httpx.Client) -> None:
    with http.stream(
        "GET",
        "/api/v1/namespaces",
        params={
            "watch": "true",
            "sendInitialEvents": "true",
            "allowWatchBookmarks": "true",
            "resourceVersionMatch": "NotOlderThan",
            "timeoutSeconds": "1",
        },
    ) as response:
        events = [json.loads(line) for line in response.iter_lines() if line]
    assert {e["type"] for e in events[:-1]} == {"ADDED"}
    assert events[-1]["type"] == "BOOKMARK"
    assert events[-1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_up_stops_on_ctrl_c_and_keeps_objects(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "data"
    command = [
        sys.executable,
        "-m",
        "allot.cli.main",
        "up",
        "--data-dir",
        str(data),
        "--port",
        str(port),
    ]

    def start() -> subprocess.Popen[str]:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert process.stdout is not None
        assert "allot API server on https://127.0.0.1" in process.stdout.readline()
        return process

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "HOME": str(tmp_path),
            "KUBECONFIG": str(data / "kubeconfigs" / "host.yaml"),
        }
        for _ in range(100):
            result = subprocess.run(
                [KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60, check=False
            )
            if "connection refused" not in result.stderr:
                return result
            time.sleep(0.1)
        return result

    first = start()
    assert kubectl("create", "namespace", "kept").returncode == 0
    first.send_signal(signal.SIGINT)
    output, _ = first.communicate(timeout=20)
    assert first.returncode == 0
    assert "allot API server stopped" in output
    second = start()
    try:
        assert "kept" in kubectl("get", "namespaces").stdout
        printed = subprocess.run(
            [sys.executable, "-m", "allot.cli.main", "kubeconfig", "--data-dir", str(data)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        assert yaml.safe_load(printed)["clusters"][0]["cluster"]["server"].endswith(
            "/clusters/host"
        )
    finally:
        second.send_signal(signal.SIGINT)
        second.communicate(timeout=20)


def test_pod_binding_subresource(http: httpx.Client) -> None:
    pods = "/api/v1/namespaces/default/pods"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "to-bind"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    http.post(pods, json=pod).raise_for_status()
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "to-bind"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }
    response = http.post(f"{pods}/to-bind/binding", json=binding)
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "Success"
    bound = http.get(f"{pods}/to-bind").json()
    assert bound["spec"]["nodeName"] == "node-1"
    assert [(c["type"], c["status"]) for c in bound["status"]["conditions"]] == [
        ("PodScheduled", "True")
    ]
    again = _status(http.post(f"{pods}/to-bind/binding", json=binding), 409, "Conflict")
    assert again == (
        'Operation cannot be fulfilled on pods/binding "to-bind": pod to-bind is already '
        'assigned to node "node-1"'
    )
    no_target = {**binding, "target": {}}
    assert "target.name" in _status(
        http.post(f"{pods}/to-bind/binding", json=no_target), 400, "BadRequest"
    )
    assert http.get(f"{pods}/to-bind/binding").status_code == 405
    discovery = http.get("/api/v1").json()
    entry = next(r for r in discovery["resources"] if r["name"] == "pods/binding")
    assert (entry["kind"], entry["verbs"]) == ("Binding", ["create"])


AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def test_discovery_names_kinds_and_hashes_as_kube_apiserver(http: httpx.Client) -> None:
    """As real Kubernetes 1.36 answers (measured by tests/conformance): a responseKind
    names its group and version only where they are not the resource's own; the legacy
    documents carry each kind's storageVersionHash; namespaces have no deletecollection."""
    core = http.get("/api", headers={"Accept": AGGREGATED}).json()
    entries = {r["resource"]: r for r in core["items"][0]["versions"][0]["resources"]}
    pods = entries["pods"]
    assert pods["responseKind"] == {"group": "", "version": "", "kind": "Pod"}
    kinds = {sub["subresource"]: sub["responseKind"] for sub in pods["subresources"]}
    assert kinds["status"] == {"group": "", "version": "", "kind": "Pod"}
    assert kinds["binding"] == {"group": "", "version": "", "kind": "Binding"}
    assert kinds["eviction"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert "deletecollection" not in entries["namespaces"]["verbs"]
    legacy = {r["name"]: r for r in http.get("/api/v1").json()["resources"]}
    assert legacy["configmaps"]["storageVersionHash"] == "qFsyl6wFWjQ="
    resource = http.get("/apis/resource.k8s.io/v1").json()["resources"]
    hashes = {r["name"]: r.get("storageVersionHash") for r in resource}
    assert hashes["deviceclasses"] == "Yk2PTc1Ybxk="
    admission = http.get("/apis/admissionregistration.k8s.io/v1").json()["resources"]
    assert all("shortNames" not in r for r in admission)


def test_generation_only_where_upstream_counts_it(http: httpx.Client) -> None:
    """kube-apiserver 1.36 sets no ``metadata.generation`` on ResourceClaims, their
    templates, Namespaces and Services; DeviceClasses (and workloads) start at 1."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "no-generation"}, "spec": {}}  # fmt: skip
    created = http.post("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", json=claim)
    assert created.status_code == 201, created.text
    assert "generation" not in created.json()["metadata"]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "no-gen"},
                 "spec": {"finalizers": ["kubernetes"]}}  # fmt: skip
    assert "generation" not in http.post("/api/v1/namespaces", json=namespace).json()["metadata"]
    device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                    "metadata": {"name": "with-generation"}, "spec": {}}  # fmt: skip
    answer = http.post("/apis/resource.k8s.io/v1/deviceclasses", json=device_class).json()
    assert answer["metadata"]["generation"] == 1


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_namespace_name_label_and_deployment_columns_as_upstream(http: httpx.Client) -> None:
    """A namespace is labelled ``kubernetes.io/metadata.name`` with its name (created or
    updated without it); a Deployment's Up-to-date and Available columns are typed
    ``string``, as kube-apiserver 1.36 answers (tests/conformance measured both)."""
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "labelled", "labels": {"team": "a"}}}  # fmt: skip
    created = http.post("/api/v1/namespaces", json=namespace).json()
    assert created["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": "labelled"}
    stripped = {**created, "metadata": {**created["metadata"], "labels": {}}}
    updated = http.put("/api/v1/namespaces/labelled", json=stripped).json()
    assert updated["metadata"]["labels"] == {"kubernetes.io/metadata.name": "labelled"}
    table = http.get("/apis/apps/v1/namespaces/default/deployments", headers={"Accept": TABLE})
    types = {c["name"]: c["type"] for c in table.json()["columnDefinitions"]}
    assert (types["Up-to-date"], types["Available"]) == ("string", "string")
