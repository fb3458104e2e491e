"""Scheduler throughput in the shape of upstream's scheduler_perf test
``SchedulingWithResourceClaimTemplate``: 500 nodes with 10 devices each, 2,500 pods placed
first, then 2,500 measured pods, each with one claim from a template.

The embedded platform (API server, resourceclaim controller, scheduler and the simulated
node agent) runs in a child process over HTTPS on loopback, as it would beside its clients;
the harness creates pods through the API and watches them. Printed: pods/s from the first
measured create to the last bind, and the p50/p99 time from a pod's creation to its
binding. Reference: kube-scheduler's CI threshold for this workload is 40 pods/s
(typically above 51). Target (issue 5): 400 pods/s.
"""

from __future__ import annotations

import cProfile
import json
import multiprocessing
import os
import ssl
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import httpx

from allot.apiserver.server import ServerThread, settle_heap
from allot.kubeengine.components import POOL_LABEL
from allot.platform import build

NODES = int(os.environ.get("ALLOT_BENCH_NODES", "500"))
DEVICES = 10
WARMUP = int(os.environ.get("ALLOT_BENCH_WARMUP", "2500"))
MEASURED = int(os.environ.get("ALLOT_BENCH_MEASURED", "2500"))
PROFILE = os.environ.get("ALLOT_BENCH_PROFILE", "")
"""Smaller shapes for quick runs, and a file for a cProfile of the server's thread."""
DRIVER = "test-driver.cdi.k8s.io"
NODE_CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110"}
"""What kube-scheduler's NodeResourcesFit needs to see (a node without ``pods`` fits none)."""
TARGET = 400.0
DEADLINE_SECONDS = 600


class _ProfiledServerThread(ServerThread):
    """The server thread under cProfile, its statistics written to PROFILE at the end."""

    def _run(self) -> None:
        profile = cProfile.Profile()
        try:
            profile.runcall(super()._run)
        finally:
            profile.dump_stats(PROFILE)


def _serve(data: Path, ready: Queue[tuple[str, str, str]], stop: Event) -> None:
    """Child process: the whole platform (API server and controllers), until told to stop."""
    thread = _ProfiledServerThread if PROFILE else ServerThread
    api = build(data).server
    settle_heap()  # as ``allot up`` does once the platform is built
    with thread(data, api=api) as server:
        token = server.api.registry.tokens.ensure("host")
        ready.put((server.endpoint.url, str(server.endpoint.tls.ca_cert), token))
        stop.wait()


def _client(url: str, ca_cert: str, token: str, cluster: str = "/clusters/host") -> httpx.Client:
    """HTTPS to the platform's host cluster (``cluster=""``: to a plain API server)."""
    return httpx.Client(
        base_url=f"{url}{cluster}",
        verify=ssl.create_default_context(cafile=ca_cert),
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )


def _setup(client: httpx.Client) -> None:
    client.post(
        "/apis/resource.k8s.io/v1/deviceclasses",
        json={
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "test-class"},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
        },
    ).raise_for_status()
    client.post(
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
        json={
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "test-claim-template"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "req-0", "exactly": {"deviceClassName": "test-class"}}
                        ]
                    }
                }
            },
        },
    ).raise_for_status()
    publish_nodes(client, "scheduler-perf-dra", NODES, DEVICES)


def publish_nodes(client: httpx.Client, prefix: str, nodes: int, devices: int) -> None:
    """``nodes`` ready Nodes with room for 110 pods, each with one slice of ``devices``
    devices of DRIVER; labelled as fleet nodes (``allot.dev/pool``), so that the real
    engine's kwok keeps them ready."""
    for index in range(nodes):
        name = f"{prefix}-{index:04d}"
        client.post(
            "/api/v1/nodes",
            json={
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {POOL_LABEL: prefix}},
                "status": {
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "capacity": NODE_CAPACITY,
                    "allocatable": NODE_CAPACITY,
                },
            },
        ).raise_for_status()
        client.post(
            "/apis/resource.k8s.io/v1/resourceslices",
            json={
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-{DRIVER}"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": f"device-{d}"} for d in range(devices)],
                },
            },
        ).raise_for_status()


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "resourceClaims": [
                {"name": "resource", "resourceClaimTemplateName": "test-claim-template"}
            ],
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"claims": [{"name": "resource"}]},
                }
            ],
        },
    }


def _record(pod: dict[str, Any], bound: dict[str, float]) -> None:
    name = pod["metadata"]["name"]
    if pod.get("spec", {}).get("nodeName") and name not in bound:
        bound[name] = time.perf_counter()


def _relist(client: httpx.Client, bound: dict[str, float]) -> str:
    listing = client.get("/api/v1/namespaces/default/pods").json()
    for pod in listing["items"]:
        _record(pod, bound)
    return str(listing["metadata"]["resourceVersion"])


def _watch_binds(
    client: httpx.Client, since: str, bound: dict[str, float], stop: threading.Event
) -> None:
    """Follow pod events; when the server ends the stream (its queue for a slow reader
    overflowed, or the version expired), list again and resume, as a reflector would."""
    url = "/api/v1/namespaces/default/pods"
    while not stop.is_set():
        params = {"watch": "true", "resourceVersion": since, "timeoutSeconds": "600"}
        try:
            with client.stream("GET", url, params=params) as response:
                for line in response.iter_lines():
                    if stop.is_set():
                        return
                    if not line:
                        continue
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        break
                    _record(event["object"], bound)
                    since = event["object"]["metadata"]["resourceVersion"]
        except httpx.HTTPError:
            pass  # the server ended the stream early; a fresh list catches up below
        if stop.is_set():
            return
        since = _relist(client, bound)


def server_cpu_seconds(pids: list[int] | None = None) -> float:
    """CPU seconds (user and system) the server's processes (``pids``; by default this
    process's children: the platform) have used so far: a figure that the machine's other
    load disturbs less than a rate does (Linux; 0 elsewhere)."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0.0
    for pid in pids if pids is not None else [c.pid for c in multiprocessing.active_children()]:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _run(
    client: httpx.Client,
    watcher: httpx.Client,
    prefix: str,
    count: int,
    pids: list[int] | None = None,
) -> tuple[float, list[float], float]:
    start_rv = client.get("/api/v1/namespaces/default/pods", params={"limit": "1"}).json()[
        "metadata"
    ]["resourceVersion"]
    bound: dict[str, float] = {}
    stop = threading.Event()
    thread = threading.Thread(
        target=_watch_binds, args=(watcher, start_rv, bound, stop), daemon=True
    )
    thread.start()
    created: dict[str, float] = {}
    first, cpu = time.perf_counter(), server_cpu_seconds(pids)
    for index in range(count):
        name = f"{prefix}-{index}"
        created[name] = time.perf_counter()
        client.post("/api/v1/namespaces/default/pods", json=_pod(name)).raise_for_status()
    if os.environ.get("ALLOT_BENCH_VERBOSE"):
        print(f"  {count} pods created in {time.perf_counter() - first:.1f} s", flush=True)
    deadline = time.monotonic() + DEADLINE_SECONDS
    done = 0
    while done < count and time.monotonic() < deadline:
        time.sleep(0.02)
        done = sum(1 for name in created if name in bound)
    stop.set()
    if done < count:
        raise SystemExit(f"only {done} of {count} pods were bound")
    last = max(bound[name] for name in created)
    cpu_per_pod = (server_cpu_seconds(pids) - cpu) / count
    return count / (last - first), sorted(bound[n] - created[n] for n in created), cpu_per_pod


def main() -> None:
    print(
        f"scheduler benchmark (scheduler_perf SchedulingWithResourceClaimTemplate shape): "
        f"{NODES} nodes x {DEVICES} devices, {WARMUP} pods placed first, {MEASURED} "
        "measured",
        flush=True,
    )
    with_platform(lambda data, url, ca_cert, token: _drive(url, ca_cert, token))


Serve = Callable[[Path, "Queue[tuple[str, str, str]]", Event], None]


def with_platform(drive: Callable[[Path, str, str, str], None], serve: Serve = _serve) -> None:
    """Run ``serve`` (the platform) in a child process on a scratch data directory and
    ``drive`` it from here with (data directory, URL, CA certificate, host token)."""
    context = multiprocessing.get_context("spawn")
    ready: Queue[tuple[str, str, str]] = context.Queue()
    stop = context.Event()
    with tempfile.TemporaryDirectory() as directory:
        data = Path(directory) / "data"
        child = context.Process(target=serve, args=(data, ready, stop))
        child.start()
        try:
            drive(data, *ready.get(timeout=120))
        finally:
            stop.set()
            child.join(timeout=60)


@dataclass
class Throughput:
    """The measured pods: pods/s from the first create to the last bind, creation-to-bound
    latencies (p50, p99, seconds), server CPU seconds per pod."""

    rate: float
    p50: float
    p99: float
    cpu_per_pod: float


def drive(client: httpx.Client, watcher: httpx.Client, pids: list[int] | None = None) -> Throughput:
    """The shape on a server that ``client`` and ``watcher`` reach (its processes: ``pids``,
    by default this process's children), progress printed."""
    started = time.perf_counter()
    _setup(client)
    print(
        f"  {NODES} nodes and slices published in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    rate, _, _ = _run(client, watcher, "init", WARMUP, pids)
    print(f"  warm-up: {WARMUP} pods at {rate:,.0f} pods/s", flush=True)
    rate, latencies, cpu = _run(client, watcher, "measured", MEASURED, pids)
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    return Throughput(rate, statistics.median(latencies), p99, cpu)


def _drive(url: str, ca_cert: str, token: str) -> None:
    with _client(url, ca_cert, token) as client, _client(url, ca_cert, token) as watcher:
        result = drive(client, watcher)
    print(
        f"  measured: {MEASURED} pods at {result.rate:,.0f} pods/s; creation to bound p50 "
        f"{result.p50 * 1e3:.0f} ms, p99 {result.p99 * 1e3:.0f} ms; kube-scheduler CI "
        f"threshold 40 pods/s; target {TARGET:.0f} pods/s -> ratio {result.rate / TARGET:.2f}"
    )
    print(
        f"  platform process CPU per measured pod: {result.cpu_per_pod * 1e3:.2f} ms (all its "
        f"threads; {1 / result.cpu_per_pod:,.0f} pods per CPU-second)"
    )


if __name__ == "__main__":
    main()
