"""API server figures: listing 1,000 ResourceSlices, creates per second, watch fan-out.

The server runs as ``allot up`` in its own process on a free loopback port (so the client
does not share its interpreter); the client is httpx over TLS with the host token.
Targets (issue 4): a kubectl-style (Table) list of 1,000 slices with 8 devices each in under
300 ms server time, 500 creates/s, watch delivery p99 under 50 ms to 100 watchers.
``--only watch`` measures the fan-out alone, right after the slices registered at once;
``--selector`` makes every watcher select the benchmark's objects by label (each write is
then judged on the object before and after it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from allot.apiserver.server import free_port

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
SLICES, CREATES, WATCHERS, WATCH_EVENTS = 1000, 1000, 100, 50
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}


def _slice(index: int) -> dict[str, Any]:
    devices = [
        {
            "name": f"gpu-{d}",
            "attributes": {
                "productName": {"string": "NVIDIA H100 80GB HBM3"},
                "type": {"string": "gpu"},
                "uuid": {"string": f"GPU-{index:08d}-{d}"},
                "driverVersion": {"version": "580.95.5"},
                "cudaComputeCapability": {"version": "9.0.0"},
            },
            "capacity": {"memory": {"value": "81559Mi"}},
        }
        for d in range(8)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"node-{index:04d}-gpu.nvidia.com"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": f"node-{index:04d}",
            "pool": {"name": f"node-{index:04d}", "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _start(data: Path) -> tuple[subprocess.Popen[bytes], str, httpx.Client]:
    port = free_port()
    empty_fleet = data.parent / "no-nodes.yaml"  # only the benchmark's own slices are listed
    empty_fleet.write_text("pools: []\n")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "allot.cli.main",
            "up",
            "--data-dir",
            str(data),
            "--port",
            str(port),
            "--fleet",
            str(empty_fleet),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kubeconfig = data / "kubeconfigs" / "host.yaml"
    deadline = time.monotonic() + 30
    while not kubeconfig.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    config = yaml.safe_load(kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]["server"]
    token = config["users"][0]["user"]["token"]
    client = httpx.Client(
        base_url=server,
        verify=ssl.create_default_context(cafile=data / "pki" / "ca.crt"),
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    while time.monotonic() < deadline:
        try:
            client.get("/version")
            break
        except httpx.TransportError:
            time.sleep(0.05)
    return process, server, client


def create_slices(client: httpx.Client) -> float:
    """Create the SLICES slices one after another; the creates per second."""
    started = time.perf_counter()
    for index in range(SLICES):
        client.post(
            "/apis/resource.k8s.io/v1/resourceslices", json=_slice(index)
        ).raise_for_status()
    return SLICES / (time.perf_counter() - started)


def list_slices(client: httpx.Client) -> tuple[float, float, float]:
    """Seconds to list the slices: (median of Table lists in pages of 500 as kubectl asks,
    median and best of full JSON lists)."""
    timings = []
    for _ in range(10):
        started = time.perf_counter()
        token = ""
        while True:  # what `kubectl get resourceslices` does: Table pages of 500
            params = {"limit": "500", "continue": token} if token else {"limit": "500"}
            response = client.get(
                "/apis/resource.k8s.io/v1/resourceslices", params=params, headers={"Accept": TABLE}
            )
            response.raise_for_status()
            token = response.json()["metadata"].get("continue", "")
            if not token:
                break
        timings.append(time.perf_counter() - started)
    full = []
    for _ in range(5):
        started = time.perf_counter()
        response = client.get("/apis/resource.k8s.io/v1/resourceslices")
        assert len(response.json()["items"]) == SLICES
        full.append(time.perf_counter() - started)
    return statistics.median(timings), statistics.median(full), min(full)


def bench_list(client: httpx.Client) -> None:
    rate = create_slices(client)
    print(f"  created {SLICES:,} slices (8 devices each) at {rate:,.0f}/s", flush=True)
    table, median, best = list_slices(client)
    print(
        f"  list of {SLICES:,} slices (JSON, all items): median {median * 1e3:.0f}"
        f" ms, best {best * 1e3:.0f} ms -> {1 / median:.1f} requests/s; "
        f"target < 300 ms -> ratio {best / 0.3:.2f} of the budget"
    )
    print(
        f"  kubectl-style list of {SLICES:,} slices (Table, 2 pages of 500): median "
        f"{table * 1e3:.0f} ms -> {1 / table:.1f} requests/s; target < 300 ms -> ratio "
        f"{table / 0.3:.2f} of the budget"
    )


def create_claims(client: httpx.Client) -> float:
    """Create CREATES claims in namespace ``bench`` (made here), one client, one after
    another; the creates per second."""
    client.post("/api/v1/namespaces", json=NAMESPACE).raise_for_status()
    started = time.perf_counter()
    for index in range(CREATES):
        client.post(
            "/apis/resource.k8s.io/v1/namespaces/bench/resourceclaims",
            json={
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"claim-{index}"},
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                        ]
                    }
                },
            },
        ).raise_for_status()
    return CREATES / (time.perf_counter() - started)


def bench_creates(client: httpx.Client) -> None:
    rate = create_claims(client)
    print(
        f"  {CREATES:,} claim creates (one client, sequential): {rate:,.0f}/s; target 500/s "
        f"-> ratio {rate / 500:.2f}",
        flush=True,
    )


async def watch_fanout(
    server: str, headers: dict[str, str], ca: Path, selector: bool = False
) -> tuple[float, float]:
    """WATCHERS watchers of the ``bench`` namespace's ConfigMaps, WATCH_EVENTS creates 20
    ms apart: (p50, p99) seconds from each create request to each watcher's receipt."""
    latencies: list[float] = []
    sent: dict[str, float] = {}
    ready = 0

    async def watcher(client: httpx.AsyncClient) -> None:
        nonlocal ready
        url = "/api/v1/namespaces/bench/configmaps?watch=true&resourceVersion=0"
        if selector:
            url += "&labelSelector=bench%3Dfanout"
        async with client.stream("GET", url) as response:
            ready += 1
            seen = 0
            async for line in response.aiter_lines():
                if not line:
                    continue
                name = json.loads(line)["object"]["metadata"]["name"]
                if name in sent:
                    latencies.append(time.perf_counter() - sent[name])
                    seen += 1
                    if seen == WATCH_EVENTS:
                        return

    limits = httpx.Limits(max_connections=WATCHERS + 10)
    async with httpx.AsyncClient(
        base_url=server,
        verify=ssl.create_default_context(cafile=ca),
        headers=headers,
        timeout=60,
        limits=limits,
    ) as client:
        tasks = [asyncio.create_task(watcher(client)) for _ in range(WATCHERS)]
        while ready < WATCHERS:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        for index in range(WATCH_EVENTS):
            name = f"fanout-{index}"
            sent[name] = time.perf_counter()
            response = await client.post(
                "/api/v1/namespaces/bench/configmaps",
                json={
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": {"bench": "fanout"}},
                },
            )
            response.raise_for_status()
            await asyncio.sleep(0.02)
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
    latencies.sort()
    return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]


async def bench_watch(
    server: str, headers: dict[str, str], ca: Path, selector: bool = False
) -> None:
    p50, p99 = await watch_fanout(server, headers, ca, selector)
    print(
        f"  watch fan-out to {WATCHERS} watchers{' (label selector)' if selector else ''}, "
        f"{WATCH_EVENTS} events: p50 {p50 * 1e3:.1f} ms, "
        f"p99 {p99 * 1e3:.1f} ms (from the create request to receipt); target p99 < 50 ms -> "
        f"ratio {p99 * 1e3 / 50:.2f} of the budget"
    )


async def register_fleet(server: str, headers: dict[str, str], ca: Path) -> None:
    """The slices of ``bench_list`` registered at once (16 clients), as a fleet coming up
    does: the alert loop's next evaluation meets them all (a SlicePoolStale alert each, as
    no Node objects exist), and the fan-out that follows measures through it."""
    gate = asyncio.Semaphore(16)
    verify = ssl.create_default_context(cafile=ca)
    async with httpx.AsyncClient(
        base_url=server, verify=verify, headers=headers, timeout=60
    ) as client:

        async def register(index: int) -> None:
            async with gate:
                url = "/apis/resource.k8s.io/v1/resourceslices"
                (await client.post(url, json=_slice(index))).raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(register(index) for index in range(SLICES)))
    took = time.perf_counter() - started
    print(f"  registered {SLICES:,} slices at once (16 clients) in {took:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        choices=["watch"],
        help="watch: only the fan-out, right after a fleet of slices registered at once",
    )
    parser.add_argument("--selector", action="store_true", help="the watchers select by label")
    arguments = parser.parse_args()
    only = arguments.only
    print("API server benchmark (allot up in its own process, HTTPS on loopback)", flush=True)
    with tempfile.TemporaryDirectory() as directory:
        data = Path(directory)
        process, server, client = _start(data)
        ca = data / "pki" / "ca.crt"
        try:
            if only == "watch":
                client.post("/api/v1/namespaces", json=NAMESPACE).raise_for_status()
                asyncio.run(register_fleet(server, dict(client.headers), ca))
            else:
                bench_list(client)
                bench_creates(client)
            asyncio.run(bench_watch(server, dict(client.headers), ca, arguments.selector))
        finally:
            client.close()
            process.terminate()
            process.wait(timeout=20)


if __name__ == "__main__":
    main()
