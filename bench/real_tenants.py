"""What a tenant costs on each engine (issue 32 item 4): start time and memory of a tenant
with its own kube-apiserver and kube-controller-manager (``allot up --engine kubernetes``)
against a tenant of the embedded engine (a virtual cluster inside allot's process).

Each engine runs as ``allot up --port 0`` in a scratch data directory, as a user starts it;
``TENANTS`` tenants are created one after another with ``allot tenant create`` (seed 000's
legal-ai values file), each timed from the command's start to its exit (it returns once
the tenant is Ready: on the real engine, kube-apiserver ready and kube-controller-manager
having made the ``default`` ServiceAccount). Memory is ``VmRSS`` from ``/proc`` once every
tenant is ready and ``SETTLE_SECONDS`` have passed: on the real engine the tenant's two
processes (and how much the host's etcd grew), on the embedded engine how much allot's one
process grew, divided by the tenants. Printed: the medians, the ratio real / embedded, and
how many tenants of each kind fit in this machine's available memory (``MemAvailable``,
nothing else counted). Without ``make kube``'s binaries the real half is skipped, saying
why. Run by ``make bench``.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from allot.kubeengine.binaries import bin_dir, missing_or_wrong
from allot.kubeengine.tenants import recorded_pids

TENANTS = 3
SETTLE_SECONDS = 5.0
ALLOT = str(Path(sys.executable).with_name("allot"))
VALUES = Path(__file__).resolve().parent.parent / "examples" / "seeds"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "ALLOT_DATA_DIR")}
    return {**env, "ALLOT_KUBE_UNSAFE_NO_FSYNC": "1"}


def _allot(data: Path, *args: str) -> None:
    done = subprocess.run(
        [ALLOT, *args, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"allot {' '.join(args)} failed: {done.stderr.strip()}")


@contextmanager
def platform(data: Path, *engine: str) -> Iterator[subprocess.Popen[bytes]]:
    """``allot up [--engine kubernetes] --port 0`` until it serves; SIGTERM after."""
    process = subprocess.Popen(
        [ALLOT, "up", *engine, "--port", "0", "--data-dir", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    try:
        _allot(data, "kubeconfig", "--path", "--wait")
        kubeconfig = data / "kubeconfigs" / "host.yaml"
        classes = VALUES / "000-gpu-deviceclasses.yaml"
        subprocess.run(
            [str(Path(ALLOT).with_name("kubectl")), "apply", "-f", str(classes)],
            env={**_env(), "KUBECONFIG": str(kubeconfig)},
            capture_output=True,
            check=True,
        )
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(120)


def create_tenants(data: Path) -> list[float]:
    """Seconds each ``allot tenant create`` took, one after another."""
    values = str(VALUES / "000-legal-ai-vcluster-config.yaml")
    times = []
    for index in range(TENANTS):
        started = time.monotonic()
        _allot(data, "tenant", "create", f"team-{index}", "-f", values)
        times.append(time.monotonic() - started)
    return times


def embedded(root: Path) -> tuple[list[float], float]:
    data = root / "embedded"
    with platform(data) as process:
        time.sleep(SETTLE_SECONDS)
        before = rss_mib(process.pid)
        times = create_tenants(data)
        time.sleep(SETTLE_SECONDS)
        grown = rss_mib(process.pid) - before
    return times, grown / TENANTS


def _etcd_pid(process: subprocess.Popen[bytes]) -> int:
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
    for child in map(int, children):
        if Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0].endswith(b"/etcd"):
            return child
    raise SystemExit("the real engine's etcd is not among allot up's processes")


def real(root: Path) -> tuple[list[float], float, float]:
    data = root / "real"
    with platform(data, "--engine", "kubernetes") as process:
        etcd = _etcd_pid(process)
        time.sleep(SETTLE_SECONDS)
        etcd_before = rss_mib(etcd)
        times = create_tenants(data)
        time.sleep(SETTLE_SECONDS)
        planes = [
            sum(rss_mib(pid) for pid in recorded_pids(data, f"team-{index}").values())
            for index in range(TENANTS)
        ]
        etcd_grown = rss_mib(etcd) - etcd_before
    return times, statistics.median(planes), etcd_grown / TENANTS


def main() -> None:
    print(f"tenant cost benchmark: {TENANTS} tenants per engine, created one after another")
    with tempfile.TemporaryDirectory(prefix="allot-bench-tenants-") as scratch:
        root = Path(scratch)
        embedded_times, embedded_rss = embedded(root)
        start = statistics.median(embedded_times)
        print(f"  embedded tenant: start {start:.2f} s (median), memory {embedded_rss:.1f} MiB")
        problems = missing_or_wrong(bin_dir())
        if problems:
            print(f"  real tenant: skipped ({'; '.join(problems)}; run `make kube`)")
            return
        real_times, plane_rss, etcd_rss = real(root)
    real_start = statistics.median(real_times)
    per_tenant = plane_rss + etcd_rss
    print(
        f"  real tenant: start {real_start:.2f} s (median), memory {plane_rss:.0f} MiB "
        f"(kube-apiserver + kube-controller-manager) + {etcd_rss:.1f} MiB of the host's etcd"
    )
    print(
        f"  ratio real / embedded: start {real_start / start:.1f}x, "
        f"memory {per_tenant / max(embedded_rss, 0.1):.1f}x"
    )
    free = available_mib()
    print(
        f"  fit in {free:,.0f} MiB available: about {int(free // per_tenant)} real tenants, "
        f"{int(free // max(embedded_rss, 0.1)):,} embedded ones (memory alone)"
    )


if __name__ == "__main__":
    main()
