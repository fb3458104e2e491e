"""The platform's memory under a load ramp, and after the load's objects are deleted.

The platform runs in a child process over HTTPS on loopback (as ``bench/tenancy.py``), with
110 nodes of 10 devices and 20 tenants. Two clients per tenant (40 threads) create units, a
claim and a pod using it, and delete their oldest unit (pod, then claim) once they hold
five or at random, for ``ALLOT_BENCH_RAMP_SECONDS`` (default 60); then each deletes what it
still holds and the platform is left 15 seconds to settle. The platform's resident set
(``VmRSS`` of ``/proc/<pid>/status``) is printed before the load, at its peak (sampled
every half second) and after the deletion, with the Events left (what held the memory:
about 7 KB each, and the load's pods leave several each; they now expire after an hour and
a cluster keeps at most 500, see ``allot.controllers.eventretention``). Target (issue
28): the resident set after the deletion within 100 MiB of where it began, whatever the
ramp's length.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from bench.scheduler import _client, with_platform
from bench.tenancy import CLAIMS, _claim, _create_tenants, _pod, _setup

TENANTS = int(os.environ.get("ALLOT_BENCH_TENANTS", "20"))
RAMP_SECONDS = float(os.environ.get("ALLOT_BENCH_RAMP_SECONDS", "60"))
SETTLE_SECONDS = 15.0
LIVE_UNITS = 5
GROWTH_TARGET_MIB = 100.0
PODS = "/api/v1/namespaces/default/pods"


def platform_rss_mib() -> float:
    """The resident set of the platform's process (the one child), in MiB."""
    (child,) = multiprocessing.active_children()
    with open(f"/proc/{child.pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc: this benchmark needs Linux")


class Worker(threading.Thread):
    """Units (a claim and its pod) in one tenant cluster until ``stop`` is set."""

    def __init__(self, client: httpx.Client, prefix: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.client, self.prefix, self.stop = client, prefix, stop
        self.rng = random.Random(prefix)
        self.answers: Counter[int] = Counter()
        self.live: list[str] = []

    def run(self) -> None:
        made = 0
        while not self.stop.is_set():
            if self.live and (len(self.live) >= LIVE_UNITS or self.rng.random() < 0.35):
                self.delete(self.live.pop(0))
                continue
            name = f"{self.prefix}-{made}"
            made += 1
            if self.call("POST", CLAIMS, _claim(name)) < 300:
                self.call("POST", PODS, _pod(name, name))
                self.live.append(name)
        for name in self.live:
            self.delete(name)

    def delete(self, name: str) -> None:
        self.call("DELETE", f"{PODS}/{name}")
        self.call("DELETE", f"{CLAIMS}/{name}")

    def call(self, method: str, path: str, body: object = None) -> int:
        code = self.client.request(method, path, json=body).status_code
        self.answers[code] += 1
        return code


def _ramp(url: str, ca: str, tokens: dict[str, str]) -> tuple[Counter[int], float]:
    stop = threading.Event()
    workers = []
    for index in range(TENANTS):
        tenant = f"team-{index:02d}"
        for number in range(2):
            client = _client(url, ca, tokens[tenant])
            client.base_url = httpx.URL(f"{url}/clusters/{tenant}")
            workers.append(Worker(client, f"w{number}", stop))
    for worker in workers:
        worker.start()
    peak, ends = 0.0, time.monotonic() + RAMP_SECONDS
    while time.monotonic() < ends:
        time.sleep(0.5)
        peak = max(peak, platform_rss_mib())
    stop.set()
    for worker in workers:
        worker.join()
        worker.client.close()
    return sum((w.answers for w in workers), Counter()), peak


def _drive(data: Path, url: str, ca: str, token: str) -> None:
    with _client(url, ca, token) as host:
        _setup(host)
        _create_tenants(host, TENANTS)
        tokens = json.loads((data / "tokens.json").read_text())
        time.sleep(3)
        before = platform_rss_mib()
        answers, peak = _ramp(url, ca, tokens)
        time.sleep(SETTLE_SECONDS)
        after = platform_rss_mib()
        events = sum(
            len(
                host.get(
                    f"{url}/clusters/{cluster}/api/v1/events",
                    headers={"Authorization": f"Bearer {tokens[cluster]}"},
                ).json()["items"]
            )
            for cluster in ["host", *(f"team-{i:02d}" for i in range(TENANTS))]
        )
    requests, failed = sum(answers.values()), sum(n for c, n in answers.items() if c >= 500)
    growth = after - before
    print(
        f"  {requests:,} requests in {RAMP_SECONDS:.0f} s ({failed} answered 5xx); platform "
        f"RSS before {before:.0f} MiB, peak {peak:.0f} MiB, after the deletion {after:.0f} "
        f"MiB (+{growth:.0f} MiB, {events:,} Events held); target growth < "
        f"{GROWTH_TARGET_MIB:.0f} MiB -> ratio {GROWTH_TARGET_MIB / max(growth, 1):.2f}",
        flush=True,
    )


def main() -> None:
    print(
        f"memory benchmark: {TENANTS} tenants, {TENANTS * 2} clients, a {RAMP_SECONDS:.0f} s "
        "ramp of claims and pods, then every one deleted",
        flush=True,
    )
    with_platform(_drive)


if __name__ == "__main__":
    main()
