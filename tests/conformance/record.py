"""Recording what the real kubectl and the Python client send, as corpus data.

``python -m tests.conformance.record`` starts real Kubernetes 1.36 and a recording proxy on
loopback (plain HTTP in, HTTPS with the administrator's token out), runs the commands of
:data:`COMMANDS` with the real kubectl and the calls of :func:`python_client` with the
official client through it, and writes every request they sent, in order, to
``corpus/recorded.yaml``: method, path, query, ``Accept``, ``Content-Type``,
``User-Agent`` (the default field manager is named after it) and the body. Discovery,
OpenAPI and ``/version`` are left out (the discovery suite compares those). Run by hand
when the commands change; the file it writes is replayed by :mod:`.run` like any other.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

from tests.conformance.corpus import CORPUS
from tests.conformance.replay import Target
from tests.e2e.conftest import KUBECTL

SKIPPED = ("/api", "/apis", "/version")
KEPT_HEADERS = ("Accept", "Content-Type", "User-Agent")
MANIFEST = """
apiVersion: v1
kind: Namespace
metadata: {name: conf-recorded}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu, namespace: conf-recorded}
spec:
  spec:
    devices:
      requests:
      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared, namespace: conf-recorded, labels: {app: rec}}
spec:
  devices:
    requests:
    - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 1}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: conf-recorded}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: nginx:1}
      - {name: sidecar, image: proxy:1}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: conf-recorded}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: app, image: busybox}]
"""
CHANGED = MANIFEST.replace(
    "image: nginx:1}\n      - {name: sidecar, image: proxy:1}", "image: nginx:2}"
)
NS = ("-n", "conf-recorded")
COMMANDS: list[tuple[tuple[str, ...], str | None]] = [
    (("apply", "-f", "-"), MANIFEST),
    (("apply", "-f", "-"), CHANGED),
    (("get", "resourceclaims", *NS), None),
    (("get", "resourceclaims", *NS, "-o", "wide"), None),
    (("get", "resourceclaimtemplates,deployments,jobs", *NS, "-o", "wide"), None),
    (("get", "deviceclasses", "-o", "wide"), None),
    (("get", "resourceslices", "-o", "wide"), None),
    (("get", "pods", "-A", "-o", "wide"), None),
    (("get", "resourceclaim", "shared", *NS, "-o", "yaml"), None),
    (("get", "resourceclaims", *NS, "--show-labels", "--sort-by", ".metadata.name"), None),
    (("label", "resourceclaim", "shared", *NS, "tier=gold"), None),
    (("annotate", "resourceclaim", "shared", *NS, "note=kept"), None),
    (
        (
            "patch",
            "deployment",
            "web",
            *NS,
            "-p",
            '{"spec":{"replicas":0,"revisionHistoryLimit":3}}',
        ),
        None,
    ),
    (
        (
            "patch",
            "resourceclaim",
            "shared",
            *NS,
            "--type",
            "merge",
            "-p",
            '{"metadata":{"labels":{"tier":null}}}',
        ),
        None,
    ),
    (
        (
            "patch",
            "job",
            "once",
            *NS,
            "--type",
            "json",
            "-p",
            '[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]',
        ),
        None,
    ),
    (("apply", "--server-side", "--field-manager", "rec", "-f", "-"), MANIFEST),
    (("apply", "--server-side", "--field-manager", "other", "-f", "-"), CHANGED),
    (
        ("apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", "-"),
        CHANGED,
    ),
    (("create", "-f", "-"), MANIFEST),
    (("create", "namespace", "conf-recorded-2"), None),
    (("create", "configmap", "settings", *NS, "--from-literal", "a=1"), None),
    (("auth", "can-i", "create", "resourceclaims", *NS), None),
    (("auth", "can-i", "list", "pods", "--as", "jane", *NS), None),
    (("get", "resourceclaims", *NS, "--as", "jane"), None),
    (("scale", "deployment", "web", *NS, "--replicas", "0"), None),
    (("delete", "resourceclaim", "shared", *NS, "--wait=false"), None),
    (("delete", "resourceclaim", "nope", *NS, "--wait=false"), None),
    (("delete", "job", "once", *NS, "--cascade=orphan", "--wait=false"), None),
]


class Recorder(BaseHTTPRequestHandler):
    """Forwards each request to the real cluster, keeping its description."""

    target: Target
    recorded: list[dict[str, Any]]

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        url = urlsplit(self.path)
        headers = {key: self.headers[key] for key in KEPT_HEADERS if self.headers.get(key)}
        for name in ("Impersonate-User", "Impersonate-Group"):
            headers.update({name: self.headers[name]} if self.headers.get(name) else {})
        if not (url.path in SKIPPED or url.path.startswith("/openapi/")):
            self.recorded.append(_entry(self.command, url.path, url.query, headers, body))
        response = self.target.http.request(self.command, self.path, content=body, headers=headers)
        self.send_response(response.status_code)
        for key in ("Content-Type", "Warning"):
            for value in response.headers.get_list(key):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(response.content)))
        self.end_headers()
        self.wfile.write(response.content)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward  # noqa: N815 (http.server)

    def log_message(self, *_: Any) -> None:
        pass


def _entry(
    method: str, path: str, query: str, headers: dict[str, str], body: bytes | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"method": method, "path": path}
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "timeout"]
    if pairs:
        entry["query"] = [list(pair) for pair in pairs]
    entry["headers"] = headers
    if body:
        try:
            entry["body"] = json.loads(body)
        except ValueError:
            try:
                entry["text"] = body.decode()
            except UnicodeDecodeError:
                entry["binary"] = body
    return entry


@contextmanager
def proxy(target: Target) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    recorded: list[dict[str, Any]] = []
    handler = type("Handler", (Recorder,), {"target": target, "recorded": recorded})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], recorded
    finally:
        server.shutdown()
        server.server_close()


def run_kubectl(port: int, token: str, home: Path) -> None:
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "rec",
        "clusters": [{"name": "rec", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "rec", "user": {"token": token}}],
        "contexts": [{"name": "rec", "context": {"cluster": "rec", "user": "rec"}}],
    }  # fmt: skip
    kubeconfig = home / "kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(kubeconfig)}
    for args, stdin in COMMANDS:
        subprocess.run(
            [KUBECTL, *args], input=stdin, env=env, capture_output=True, text=True, timeout=60
        )


def python_client(port: int, token: str) -> None:
    """The calls the end-to-end tests make with the official client."""
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    configuration.api_key = {"authorization": f"Bearer {token}"}
    api = client.ApiClient(configuration)
    resource = client.ResourceV1Api(api)
    core = client.CoreV1Api(api)
    claim: Any = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "py-claim", "labels": {"by": "python"}},
             "spec": {"devices": {"requests": [{"name": "gpu",
                      "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}  # fmt: skip
    ns = "conf-recorded"
    replaced: Any = {**claim, "metadata": {"name": "py-claim"}}
    calls: list[Callable[[], object]] = [
        lambda: resource.create_namespaced_resource_claim(ns, claim),
        lambda: resource.list_namespaced_resource_claim(ns, label_selector="by=python"),
        lambda: resource.read_namespaced_resource_claim("py-claim", ns),
        lambda: resource.patch_namespaced_resource_claim(
            "py-claim", ns, {"metadata": {"annotations": {"a": "b"}}}),
        lambda: resource.patch_namespaced_resource_claim(
            "py-claim", ns, [{"op": "add", "path": "/metadata/labels/x", "value": "y"}]),
        lambda: resource.patch_namespaced_resource_claim_status(
            "py-claim", ns, {"status": {"reservedFor": []}}),
        lambda: resource.replace_namespaced_resource_claim(
            "py-claim", ns, replaced),
        lambda: resource.create_namespaced_resource_claim(ns, claim),
        lambda: resource.list_device_class(),
        lambda: resource.list_resource_claim_for_all_namespaces(limit=1),
        lambda: core.list_namespaced_pod(ns),
        lambda: core.read_namespace(ns),
        lambda: resource.delete_namespaced_resource_claim(
            "py-claim", ns, body=client.V1DeleteOptions(propagation_policy="Background")),
        lambda: resource.delete_namespaced_resource_claim("py-claim", ns),
    ]  # fmt: skip
    for call in calls:
        with contextlib.suppress(client.ApiException):  # a refusal is recorded all the same
            call()


def record(output: Path) -> int:
    from tests.realkube import running_real_kube

    with tempfile.TemporaryDirectory(prefix="allot-record-") as scratch:
        root = Path(scratch)
        with running_real_kube(root / "real") as real:
            target = Target("real", real.kubeconfig)
            token = str(target.http.headers["Authorization"]).removeprefix("Bearer ")
            with proxy(target) as (port, recorded):
                (root / "home").mkdir()
                run_kubectl(port, token, root / "home")
                python_client(port, token)
            target.close()
    requests = [{"name": f"{index:03d} {r['method']} {r['path']}", **r}
                for index, r in enumerate(recorded, 1)]  # fmt: skip
    header = (
        "# Recorded by tests/conformance/record.py: what kubectl 1.37 and the Python client\n"
        "# send for the commands and calls listed there, in order. Do not edit by hand.\n"
    )
    output.write_text(header + yaml.safe_dump({"requests": requests}, sort_keys=False, width=100))
    print(f"{len(requests)} requests recorded in {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(record(CORPUS / "recorded.yaml"))
