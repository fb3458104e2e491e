"""What the workload controllers cost: a tenant's Deployment and Job against bare pods.

The platform runs in a child process over HTTPS on loopback (as ``bench/scheduler.py``)
with 500 nodes of 10 devices of one class, and one tenant entitled to it with a
ResourceClaimTemplate in its default namespace. Every pod below, bare or made by a
controller, has its own claim generated from that template, synced to the host, allocated
and run there, its status copied back. Measured, in the tenant, each from the first
request to the last pod seen by a tenant watch:

- ``bare pods``: 500 pods created directly by the client, until all are Running;
- ``deployment``: a Deployment created with 0 replicas and scaled to 500 through the
  ``scale`` subresource, until its 500 pods are Running;
- ``bare batch``: 500 pods that each run one simulated second, at most 50 at a time (the
  client creates the next as one succeeds), until 500 have Succeeded; they carry a Job's
  ``batch.kubernetes.io/job-name`` label (of no Job) so that the simulated runtime ends
  them as it ends a Job's pods (``build(job_seconds=1)``; a tenant may not set the
  platform's ``allot.dev/`` annotations);
- ``job``: a Job of 500 completions with parallelism 50 whose pods run one simulated
  second, until the Job is Complete.

Target (issue 16): each controller within 1.2x of its bare-pod baseline (printed as the
ratio target/measured, above 1: met).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import httpx

from allot.apiserver.server import ServerThread, settle_heap
from allot.platform import build
from bench.scheduler import PROFILE, _client, _ProfiledServerThread, publish_nodes, with_platform
from bench.tenancy import NODES as SETUP_NODES
from bench.tenancy import _create_tenants, _setup

NODES, DEVICES = 500, 10
PODS = int(os.environ.get("ALLOT_BENCH_WORKLOAD_PODS", "500"))
PARALLELISM = 50
RATIO_TARGET = 1.2
TENANT = "team-00"
PODS_PATH = "/api/v1/namespaces/default/pods"
JOB_SECONDS = 1.0


def _template() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "g", "exactly": {"deviceClassName": "bench-gpu"}}]
                }
            }
        },
    }


def _pod_spec(restart: str) -> dict[str, Any]:
    return {
        "restartPolicy": restart,
        "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "one-gpu"}],
        "containers": [{"name": "c", "image": "pause", "resources": {"claims": [{"name": "g"}]}}],
    }


def _bare_pod(name: str, labels: dict[str, str], batch: bool) -> dict[str, Any]:
    if batch:
        labels = {**labels, "batch.kubernetes.io/job-name": "bench-bare"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": _pod_spec("Never" if batch else "Always"),
    }


def _deployment() -> dict[str, Any]:
    labels = {"app": "bench-deploy"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench-deploy"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": _pod_spec("Always")},
        },
    }


def _job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "bench-job"},
        "spec": {
            "completions": PODS,
            "parallelism": PARALLELISM,
            "backoffLimit": 0,
            "template": {"spec": _pod_spec("Never")},
        },
    }


class PodWatch:
    """A tenant watch on pods of one label: when each was first Running and Succeeded."""

    def __init__(self, client: httpx.Client, selector: str) -> None:
        self.running: dict[str, float] = {}
        self.succeeded: dict[str, float] = {}
        self.changed = threading.Condition()
        self._client, self._selector = client, selector
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PodWatch:
        self._thread.start()
        time.sleep(0.3)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _run(self) -> None:
        params = {"watch": "true", "labelSelector": self._selector, "timeoutSeconds": "900"}
        try:
            with self._client.stream("GET", PODS_PATH, params=params) as response:
                for line in response.iter_lines():
                    if self._stop.is_set():
                        return
                    if line:
                        self._note(json.loads(line)["object"])
        except httpx.HTTPError:
            if not self._stop.is_set():
                raise  # the server ends streams only when it stops, after the measures

    def _note(self, pod: dict[str, Any]) -> None:
        name, phase = pod["metadata"]["name"], (pod.get("status") or {}).get("phase")
        with self.changed:
            if phase in ("Running", "Succeeded") and name not in self.running:
                self.running[name] = time.perf_counter()
            if phase == "Succeeded" and name not in self.succeeded:
                self.succeeded[name] = time.perf_counter()
            self.changed.notify_all()

    def wait(self, done: Callable[[], bool], what: str, timeout: float = 600) -> float:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not done():
                if not self.changed.wait(timeout=max(0.0, deadline - time.monotonic())):
                    raise SystemExit(f"timed out waiting for {what}")
        return time.perf_counter()


def _bare_pods(client: httpx.Client, watcher: httpx.Client) -> float:
    with PodWatch(watcher, "bench=bare") as watch:
        started = time.perf_counter()
        for index in range(PODS):
            body = _bare_pod(f"bare-{index}", {"bench": "bare"}, batch=False)
            client.post(PODS_PATH, json=body).raise_for_status()
        ended = watch.wait(lambda: len(watch.running) >= PODS, "bare pods Running")
    return ended - started


def _deployment_scaled(client: httpx.Client, watcher: httpx.Client) -> float:
    path = "/apis/apps/v1/namespaces/default/deployments"
    client.post(path, json=_deployment()).raise_for_status()
    with PodWatch(watcher, "app=bench-deploy") as watch:
        started = time.perf_counter()
        client.patch(
            f"{path}/bench-deploy/scale",
            content=json.dumps({"spec": {"replicas": PODS}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()
        ended = watch.wait(lambda: len(watch.running) >= PODS, "deployment pods Running")
    return ended - started


def _bare_batch(client: httpx.Client, watcher: httpx.Client) -> float:
    """At most PARALLELISM pods at once, the next created as one succeeds."""
    with PodWatch(watcher, "bench=batch") as watch:
        started = time.perf_counter()
        created = 0
        while created < PODS:
            with watch.changed:
                in_flight = created - len(watch.succeeded)
            for _ in range(min(PARALLELISM - in_flight, PODS - created)):
                body = _bare_pod(f"batch-{created}", {"bench": "batch"}, batch=True)
                client.post(PODS_PATH, json=body).raise_for_status()
                created += 1
            if created < PODS:
                watch.wait(_more_than(watch.succeeded, len(watch.succeeded)), "a pod to succeed")
        ended = watch.wait(lambda: len(watch.succeeded) >= PODS, "batch pods Succeeded")
    return ended - started


def _more_than(seen: dict[str, float], count: int) -> Callable[[], bool]:
    return lambda: len(seen) > count


def _job_completed(client: httpx.Client) -> float:
    path = "/apis/batch/v1/namespaces/default/jobs"
    started = time.perf_counter()
    client.post(path, json=_job()).raise_for_status()
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        status = client.get(f"{path}/bench-job").json().get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        if conditions.get("Complete") == "True":
            return time.perf_counter() - started
        if conditions.get("Failed") == "True":
            raise SystemExit(f"the bench job failed: {status}")
        time.sleep(0.05)
    raise SystemExit("the bench job did not complete")


def _line(what: str, seconds: float, baseline: float) -> str:
    measured = seconds / baseline
    return (
        f"  {what}: {seconds:.1f} s ({PODS / seconds:,.0f} pods/s); {measured:.2f}x the bare "
        f"pods; target <= {RATIO_TARGET}x -> ratio {RATIO_TARGET / measured:.2f}"
    )


def _drive(data: Path, url: str, ca: str, token: str) -> None:
    with _client(url, ca, token) as host:
        _setup(host)
        publish_nodes(host, "bench-more", NODES - SETUP_NODES, DEVICES)
        _create_tenants(host, 1)
        # 2,000 pods, their claims and Events outgrow a tenant's default 10,000 objects
        host.patch(
            f"/apis/allot.dev/v1alpha1/tenants/{TENANT}",
            content=json.dumps({"spec": {"storage": {"objects": 100_000}}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ).raise_for_status()
    tenant_token = json.loads((data / "tokens.json").read_text())[TENANT]
    with _client(url, ca, tenant_token) as client, _client(url, ca, tenant_token) as watcher:
        for one in (client, watcher):
            one.base_url = httpx.URL(f"{url}/clusters/{TENANT}")
        client.post(
            "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates", json=_template()
        ).raise_for_status()
        bare = _bare_pods(client, watcher)
        print(f"  bare pods: {PODS} Running in {bare:.1f} s ({PODS / bare:,.0f} pods/s)")
        print(_line("deployment 0 -> scaled", _deployment_scaled(client, watcher), bare))
        batch = _bare_batch(client, watcher)
        print(f"  bare batch: {PODS} Succeeded, {PARALLELISM} at a time, in {batch:.1f} s")
        print(_line(f"job ({PARALLELISM} parallel)", _job_completed(client), batch), flush=True)


def _serve(data: Path, ready: Queue[tuple[str, str, str]], stop: Event) -> None:
    """Child process: the platform, its simulated Job pods running JOB_SECONDS."""
    thread = _ProfiledServerThread if PROFILE else ServerThread
    api = build(data, job_seconds=JOB_SECONDS).server
    settle_heap()  # as ``allot up`` does once the platform is built
    with thread(data, api=api) as server:
        token = server.api.registry.tokens.ensure("host")
        ready.put((server.endpoint.url, str(server.endpoint.tls.ca_cert), token))
        stop.wait()


def main() -> None:
    print(
        f"workloads benchmark: {NODES} nodes x {DEVICES} devices, one tenant, {PODS} pods with "
        "a template claim each: bare pods vs a Deployment; bare batch pods vs a Job",
        flush=True,
    )
    with_platform(_drive, _serve)


if __name__ == "__main__":
    main()
