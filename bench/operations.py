"""Operations at fleet scale: a ``/metrics`` scrape and the dashboard's fleet view for
1,000 nodes x 8 H100s with DynamicMIG (9,000 slices, 208,000 devices, shared counters),
with 2,000 allocated claims (1,000 whole GPUs and 1,000 1g.10gb MIG devices) spread over
three tenant namespaces.

The platform runs in a child process over HTTPS on loopback. Setup writes the fleet and
the claims straight into the store (not what is measured: it skips validation so that it
takes seconds, not minutes), then the server starts. Printed: the time to build the
capacity cache (every device's classes evaluated once), the first scrape, the median of
further scrapes (with nothing changed, and each after a new claim) and of dashboard page
loads, each with the ratio to its target. Targets (issue 7): scrape under 500 ms, fleet view
served under 1 s.
"""

from __future__ import annotations

import multiprocessing
import resource
import statistics
import tempfile
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import httpx

from allot.apiserver.server import ServerThread, settle_heap
from allot.driver.fleet import expand, parse_fleet
from allot.driver.publisher import device_classes, node_object
from allot.driver.slices import node_slices
from allot.platform import build
from allot.registry.resources import by_kind
from allot.store import Store
from bench.scheduler import _client

NODES, GPUS = 1000, 8
TENANTS = ("tenant-vision", "tenant-speech", "tenant-search")
SCRAPE_TARGET, VIEW_TARGET = 0.5, 1.0
CLASS_OF = {"whole": "gpu.nvidia.com", "slice": "mig.nvidia.com"}
FLEET = {
    "pools": [
        {"name": "h100", "nodes": NODES, "gpu": "H100-80GB-HBM3", "gpusPerNode": GPUS,
         "mig": {"dynamic": True}}
    ]
}  # fmt: skip


def _populate(store: Store, report: Queue[str]) -> None:
    for document in device_classes():
        store.create("host", by_kind("DeviceClass").store, document)
    for namespace in TENANTS:
        store.create(
            "host",
            by_kind("Namespace").store,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        )
    specs = expand(parse_fleet(FLEET))
    template = node_slices(specs[0].name, "uid", specs[0].gpus, dynamic_mig=True)
    for index, spec in enumerate(specs):
        node = store.create("host", by_kind("Node").store, node_object(spec))
        for document in node_slices(
            spec.name, node["metadata"]["uid"], spec.gpus, dynamic_mig=True
        ):
            store.create("host", by_kind("ResourceSlice").store, document, owned=True)
        if index % 200 == 199:
            report.put(f"  setup: {index + 1} of {NODES} nodes written")
        _claims(store, spec.name, index)
    del template


def _claims(store: Store, node: str, index: int) -> None:
    """Two claims per node: GPU 0 whole, and a 1g.10gb device on GPU 1."""
    for kind, device in (("whole", "gpu-0"), ("slice", "gpu-1-mig-1g10gb-19-0")):
        namespace = TENANTS[(index * 2 + (kind == "slice")) % len(TENANTS)]
        claim: dict[str, Any] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"{node}-{kind}", "namespace": namespace},
            "spec": {"devices": {"requests": [
                {"name": "g", "exactly": {"deviceClassName": CLASS_OF[kind]}}
            ]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "g", "driver": "gpu.nvidia.com", "pool": node, "device": device}
            ]}}},
        }  # fmt: skip
        store.create("host", by_kind("ResourceClaim").store, claim)


def _serve(data: Path, ready: Queue[Any], stop: Event) -> None:
    data.mkdir(parents=True)
    started = time.perf_counter()
    store = Store(data / "state.db")
    _populate(store, ready)
    store.close()
    ready.put(f"  setup: fleet and claims written in {time.perf_counter() - started:.1f} s")
    api = build(data)
    started = time.perf_counter()
    api.operations.snapshot()
    settle_heap()  # as ``allot up`` does once the platform is built
    ready.put(
        f"  capacity cache built in {time.perf_counter() - started:.1f} s (every device's "
        "classes evaluated once, at start)"
    )
    with ServerThread(data, api=api.server) as server:
        token = server.api.registry.tokens.ensure("host")
        ready.put((server.endpoint.url, str(server.endpoint.tls.ca_cert), token))
        stop.wait()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        ready.put(f"  platform process peak memory: {rss:,.0f} MiB")


def _new_claim(client: httpx.Client, index: int) -> None:
    """A pending whole-GPU claim in a tenant namespace, through the API."""
    client.post(
        f"/apis/resource.k8s.io/v1/namespaces/{TENANTS[0]}/resourceclaims",
        json={
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"scrape-{index}"},
            "spec": {"devices": {"requests": [
                {"name": "g", "exactly": {"deviceClassName": CLASS_OF["whole"]}}
            ]}},
        },
    ).raise_for_status()  # fmt: skip


def _timed(client: httpx.Client, path: str, **kwargs: Any) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.get(path, **kwargs)
    response.raise_for_status()
    return time.perf_counter() - started, len(response.content)


def main() -> None:
    print(
        f"operations benchmark: {NODES} nodes x {GPUS} H100 DynamicMIG "
        f"({NODES * 9:,} slices, {NODES * 208:,} devices), {NODES * 2:,} allocated claims",
        flush=True,
    )
    context = multiprocessing.get_context("spawn")
    ready: Queue[Any] = context.Queue()
    stop = context.Event()
    with tempfile.TemporaryDirectory() as directory:
        child = context.Process(target=_serve, args=(Path(directory) / "data", ready, stop))
        child.start()
        try:
            while True:
                message = ready.get(timeout=900)
                if not isinstance(message, str):
                    break
                print(message, flush=True)
            _drive(*message)
        finally:
            stop.set()
            while child.is_alive() or not ready.empty():
                try:
                    print(ready.get(timeout=5), flush=True)
                except Exception:
                    break
            child.join(timeout=60)


def _drive(url: str, ca: str, token: str) -> None:
    with _client(url, ca, token) as client:
        first, size = _timed(client, "/metrics")
        print(
            f"  first /metrics scrape after start: {first * 1e3:,.0f} ms, {size / 1e6:.1f} MB",
            flush=True,
        )
        warm = [_timed(client, "/metrics")[0] for _ in range(10)]
        median = statistics.median(warm)
        print(
            f"  /metrics scrape (warm, nothing changed, median of 10): {median * 1e3:,.0f} ms; "
            f"target < {SCRAPE_TARGET * 1e3:.0f} ms -> ratio {median / SCRAPE_TARGET:.2f} of "
            "the budget",
            flush=True,
        )
        changed = []
        for index in range(10):
            _new_claim(client, index)
            changed.append(_timed(client, "/metrics")[0])
        median = statistics.median(changed)
        print(
            f"  /metrics scrape after a claim was created (median of 10): {median * 1e3:,.0f} "
            f"ms; target < {SCRAPE_TARGET * 1e3:.0f} ms -> ratio {median / SCRAPE_TARGET:.2f} "
            "of the budget",
            flush=True,
        )
    with httpx.Client(base_url=url, verify=ca, timeout=120) as browser:
        browser.get("/ui", params={"token": token})
        views = [_timed(browser, "/ui") for _ in range(5)]
        median = statistics.median(t for t, _ in views)
        print(
            f"  dashboard page with the fleet view (median of 5): {median * 1e3:,.0f} ms, "
            f"{views[0][1] / 1e6:.1f} MB; target < {VIEW_TARGET * 1e3:.0f} ms -> ratio "
            f"{median / VIEW_TARGET:.2f} of the budget",
            flush=True,
        )


if __name__ == "__main__":
    main()
