"""Speed side by side (issue 29, item 6): allot's embedded engine and real Kubernetes 1.36
on the same machine in the same run, each figure printed as ``allot X, real Y, ratio
allot/real Z``. These ratios replace the absolute targets of the other benchmarks.

1. Scheduler throughput in scheduler_perf's ``SchedulingWithResourceClaimTemplate`` shape
   (:mod:`bench.scheduler`: 500 nodes with one slice of 10 devices, one DeviceClass, pods
   from a ResourceClaimTemplate, 2,500 placed first and 2,500 measured), driven by the same
   harness with the same clock on both: one client creates the pods one after another, a
   watch notes each binding; pods/s from the first measured create to the last bind,
   creation-to-bound p50/p99, the servers' CPU per pod (the platform's process; the sum of
   etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok) and their
   resident set after the run. The real engine runs with kube-scheduler's and
   kube-controller-manager's client rate limits lifted (as scheduler_perf and kwokctl's
   ``--disable-qps-limits`` do; a default cluster's 50 and 20 requests/s would measure the
   limiter) and etcd without fsync, the durability of allot's store (SQLite WAL,
   ``synchronous=NORMAL``: both survive a crash of the process, not of the machine).
2. ``allot up`` and ``allot up --engine kubernetes`` as a user starts them (an empty fleet,
   a fresh data directory each time): seconds until the banner's last line, best of
   ``ROUNDS``; the resident set of the whole process tree once up (for the real engine the
   sum of allot and its five components).
3. On each started API server, the figures of :mod:`bench.apiserver`: 1,000 ResourceSlice
   creates, the kubectl-style list of them as a Table (pages of 500), 1,000 claim creates,
   watch fan-out to 100 watchers (p99).

Without ``make kube``'s binaries it says so and stops. Run by ``make bench``.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

from allot.kubeengine.binaries import bin_dir, missing_or_wrong
from allot.kubeengine.cluster import start
from allot.kubeengine.components import Options
from bench import apiserver, scheduler

ROUNDS = int(os.environ.get("ALLOT_BENCH_STARTUP_ROUNDS", "2"))
UP_SECONDS = 300.0
READY_LINE = "Ctrl-C stops it."


@dataclass
class Figure:
    label: str
    allot: float
    real: float
    unit: str
    better: str  # "lower" or "higher"


def show(figure: Figure) -> None:
    ratio = figure.allot / figure.real if figure.real else float("inf")
    print(
        f"  {figure.label}: allot {figure.allot:,.2f} {figure.unit}, real {figure.real:,.2f} "
        f"{figure.unit}, ratio allot/real {ratio:.2f} ({figure.better} is better)",
        flush=True,
    )


def rss_mib(pids: list[int]) -> float:
    """The summed resident set (``VmRSS``) of ``pids``, in MiB (Linux)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as status:
                total += next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
    return total / 1024


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it, from ``/proc``."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                pending += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


# ------------------------------------------------------------------------ scheduler
def _scheduler_allot() -> tuple[scheduler.Throughput, float]:
    answer: list[tuple[scheduler.Throughput, float]] = []

    def drive(data: Path, url: str, ca: str, token: str) -> None:
        with scheduler._client(url, ca, token) as client, scheduler._client(url, ca, token) as w:
            result = scheduler.drive(client, w)
        answer.append(
            (
                result,
                rss_mib([c.pid for c in multiprocessing.active_children() if c.pid is not None]),
            )
        )

    scheduler.with_platform(drive)
    return answer[0]


def _scheduler_real(root: Path) -> tuple[scheduler.Throughput, float]:
    options = Options(unsafe_no_fsync=True, unlimited_client_qps=True)
    cluster = start(root / "scheduler-real", port=0, options=options)
    try:
        pids = list(cluster.pids().values())
        url, ca, token = _credentials(cluster.data_dir)
        with (
            scheduler._client(url, ca, token, cluster="") as client,
            scheduler._client(url, ca, token, cluster="") as watcher,
        ):
            result = scheduler.drive(client, watcher, pids)
        return result, rss_mib(pids)
    finally:
        cluster.stop()


def _measured(result: scheduler.Throughput) -> None:
    print(f"  measured: {scheduler.MEASURED} pods at {result.rate:,.0f} pods/s", flush=True)


def scheduler_figures(root: Path) -> list[Figure]:
    shape = f"{scheduler.NODES} nodes x {scheduler.DEVICES} devices, {scheduler.MEASURED} pods"
    print(f"scheduler_perf DRA shape ({shape} measured), allot's embedded scheduler:", flush=True)
    ours, our_rss = _scheduler_allot()
    _measured(ours)
    print("the same on real Kubernetes (kube-scheduler, client limits lifted):", flush=True)
    theirs, their_rss = _scheduler_real(root)
    _measured(theirs)
    pods = scheduler.WARMUP + scheduler.MEASURED
    return [
        Figure("scheduler throughput", ours.rate, theirs.rate, "pods/s", "higher"),
        Figure("creation to bound p50", ours.p50 * 1e3, theirs.p50 * 1e3, "ms", "lower"),
        Figure("creation to bound p99", ours.p99 * 1e3, theirs.p99 * 1e3, "ms", "lower"),
        Figure(
            "server CPU per pod", ours.cpu_per_pod * 1e3, theirs.cpu_per_pod * 1e3, "ms", "lower"
        ),
        Figure(f"server RSS after the {pods:,} pods", our_rss, their_rss, "MiB", "lower"),
    ]


# ---------------------------------------------------------------- start-up and API
def _credentials(data: Path) -> tuple[str, str, str]:
    """(server URL, CA file, host token) of the host kubeconfig either engine writes."""
    config = yaml.safe_load((data / "kubeconfigs" / "host.yaml").read_text())
    server = str(config["clusters"][0]["cluster"]["server"])
    return server, str(data / "pki" / "ca.crt"), str(config["users"][0]["user"]["token"])


@dataclass
class Up:
    process: subprocess.Popen[str]
    data: Path
    seconds: float

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)  # Ctrl-C, as a user stops it
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def allot_up(data: Path, engine: str) -> Up:
    """``allot up`` of ``engine`` on a fresh ``data`` with an empty fleet, until ready."""
    fleet = data.parent / f"{data.name}-fleet.yaml"
    fleet.write_text("pools: []\n")
    command = [sys.executable, "-m", "allot.cli.main", "up", "--data-dir", str(data)]
    command += ["--port", "0", "--fleet", str(fleet), "--engine", engine]
    environment = {**os.environ, "ALLOT_KUBE_UNSAFE_NO_FSYNC": "1"}  # see the docstring
    started = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment
    )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        if line.strip() == READY_LINE:
            return Up(process, data, time.perf_counter() - started)
        if time.perf_counter() - started > UP_SECONDS:
            break
    process.kill()
    process.wait()
    raise SystemExit(f"allot up --engine {engine} did not come up:\n{''.join(seen[-20:])}")


def _drain(up: Up) -> None:
    """Keep reading the process's output so that it never blocks on a full pipe."""
    stream = up.process.stdout
    assert stream is not None

    def read() -> None:
        for _ in stream:
            pass

    threading.Thread(target=read, daemon=True).start()


def engine_figures(root: Path, engine: str) -> tuple[float, float, list[float]]:
    """(best start-up seconds, RSS once up in MiB, [slice creates/s, Table list ms,
    claim creates/s, watch p99 ms]) of ``engine``."""
    best, rss, api = float("inf"), 0.0, []
    for round_ in range(ROUNDS):
        up = allot_up(root / f"{engine}-{round_}", engine)
        _drain(up)
        try:
            best = min(best, up.seconds)
            time.sleep(2)  # let the start's last writes settle before the resident set
            rss = rss_mib(process_tree(up.process.pid))
            if round_ == ROUNDS - 1:
                api = _api_figures(up.data)
        finally:
            up.stop()
    return best, rss, api


def _api_figures(data: Path) -> list[float]:
    server, ca, token = _credentials(data)
    headers = {"Authorization": f"Bearer {token}"}
    verify = ssl.create_default_context(cafile=ca)
    with httpx.Client(base_url=server, verify=verify, headers=headers, timeout=60) as client:
        slices = apiserver.create_slices(client)
        table, _, _ = apiserver.list_slices(client)
        claims = apiserver.create_claims(client)
    _, p99 = asyncio.run(apiserver.watch_fanout(server, headers, Path(ca)))
    return [slices, table * 1e3, claims, p99 * 1e3]


def startup_and_api_figures(root: Path) -> list[Figure]:
    print(f"allot up, embedded and kubernetes engines (best of {ROUNDS} starts):", flush=True)
    ours = engine_figures(root, "embedded")
    print(f"  embedded: up in {ours[0]:.2f} s, API figures taken", flush=True)
    theirs = engine_figures(root, "kubernetes")
    print(f"  kubernetes: up in {theirs[0]:.2f} s, API figures taken", flush=True)
    api = [
        ("ResourceSlice creates (one client)", "/s", "higher"),
        ("kubectl-style Table list of 1,000 slices", "ms", "lower"),
        ("claim creates (one client)", "/s", "higher"),
        ("watch fan-out p99, 100 watchers", "ms", "lower"),
    ]
    return [
        Figure("start-up to ready", ours[0], theirs[0], "s", "lower"),
        Figure("RSS once up (whole process tree)", ours[1], theirs[1], "MiB", "lower"),
        *(
            Figure(label, a, r, unit, better)
            for (label, unit, better), a, r in zip(api, ours[2], theirs[2], strict=True)
        ),
    ]


def main() -> None:
    problems = missing_or_wrong(bin_dir())
    print("side by side: allot's embedded engine and real Kubernetes 1.36, this machine, one run")
    if problems:
        print(f"  skipped: {'; '.join(problems)} (run `make kube`)")
        return
    started = time.perf_counter()
    load = os.getloadavg()[0]
    sections: list[Callable[[Path], list[Figure]]] = [scheduler_figures, startup_and_api_figures]
    with tempfile.TemporaryDirectory() as directory:
        figures = [figure for section in sections for figure in section(Path(directory))]
    print(
        f"ratios allot/real (load average {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end; {time.perf_counter() - started:.0f} s):"
    )
    for figure in figures:
        show(figure)


if __name__ == "__main__":
    main()
