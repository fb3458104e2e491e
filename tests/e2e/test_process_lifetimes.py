"""A pod's processes end before its devices are freed (issue 14, item 4), with the real
kubectl: a tenant's pod whose processes outlive its main process or ignore SIGTERM keeps
its GPU from another tenant until every one of them is gone, in the sandbox and without
it; a finished pod's background children end before it is reported finished; stopping the
platform ends processes that left their container's process group."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from allot.apiserver.server import ServerThread
from allot.driver.fleet import parse_fleet
from allot.driver.publisher import publish
from allot.platform import build
from tests.e2e.conftest import Cluster
from tests.e2e.tenancy import Tenancy, write_values

pytestmark = pytest.mark.slow
ONE_GPU = {
    "driver": {"version": "550.163.1", "cudaVersion": "12.4.0"},
    "pools": [{"name": "one", "nodes": 1, "gpu": "A100-SXM4-40GB", "gpusPerNode": 1}],
}
TENANTS = ("alpha", "beta")
# a background child that leaves the process group and ignores SIGTERM, then a main
# process that also ignores it: the pod outlives its grace period either way
STUBBORN = (
    "import os, signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "child = 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "time.sleep(300)  # MARK-child'\n"
    "subprocess.Popen([sys.executable, '-c', child], start_new_session=True)\n"
    "print('up', flush=True)\n"
    "time.sleep(int(sys.argv[1]))  # MARK-main\n"
)


@contextmanager
def _platform(root: Path, sandboxed: bool) -> Iterator[Tenancy]:
    """One GPU, two tenants each entitled to it through a class of its own."""
    data = root / "data"
    api = build(data, runtime="process", sandboxed=sandboxed)
    with ServerThread(data, api=api.server) as server:
        publish(server.endpoint.kubeconfigs["host"], parse_fleet(ONE_GPU))
        tenancy = Tenancy(Cluster(server, root / "home"), data)
        for tenant in TENANTS:
            tenancy.cluster.apply(_whole_gpu_class(tenant))
            tenancy.create_tenant(tenant, "-f", str(write_values(root / f"{tenant}.yaml", tenant)))
        yield tenancy


def _whole_gpu_class(tenant: str) -> dict[str, Any]:
    expression = "device.attributes['gpu.nvidia.com'].type == 'gpu'"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": f"gpu-{tenant}", "labels": {"gpu.platform/tenant": tenant}},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _workload(tenant: str, pod: str, argv: list[str]) -> str:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"{pod}-gpu"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": f"gpu-{tenant}"}}]
            }
        },
    }
    spec = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
        "resourceClaims": [{"name": "gpu", "resourceClaimName": f"{pod}-gpu"}],
        "containers": [
            {
                "name": "main",
                "image": "python",
                "command": argv,
                "resources": {"claims": [{"name": "gpu"}]},
            }
        ],
    }
    pod_object = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod}, "spec": spec}
    return "\n---\n".join(json.dumps(document) for document in (claim, pod_object))


def _stubborn(tenancy: Tenancy, tenant: str, pod: str, seconds: int) -> None:
    argv = [sys.executable, "-c", STUBBORN.replace("MARK", pod), str(seconds)]
    tenancy.as_tenant(tenant, "apply", "-f", "-", stdin=_workload(tenant, pod, argv))


def _phase(tenancy: Tenancy, tenant: str, pod: str) -> str:
    return str((tenancy.tenant_json(tenant, "pod", pod).get("status") or {}).get("phase"))


def _allocated(tenancy: Tenancy, tenant: str, claim: str) -> bool:
    return bool(
        (tenancy.tenant_json(tenant, "resourceclaim", claim).get("status") or {}).get("allocation")
    )


def _pids(marker: str) -> list[int]:
    """Host pids whose command line carries ``marker`` (bwrap's argv too, in a sandbox)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _wait_for_pids(marker: str) -> list[int]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        pids = _pids(marker)
        if pids:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"no process with {marker!r} started")


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "unsandboxed"])
def test_a_gpu_is_not_given_away_while_a_deleted_pods_processes_live(
    tmp_path: Path, sandboxed: bool
) -> None:
    with _platform(tmp_path, sandboxed) as tenancy:
        _stubborn(tenancy, "alpha", "holder", 300)
        tenancy.wait(lambda: _phase(tenancy, "alpha", "holder") == "Running", "holder runs")
        _wait_for_pids("holder-child")
        _stubborn(tenancy, "beta", "waiter", 300)
        tenancy.wait(lambda: _phase(tenancy, "beta", "waiter") == "Pending", "waiter pends")

        tenancy.as_tenant("alpha", "delete", "pod", "holder", "--wait=false")
        rounds = 0
        while not _allocated(tenancy, "beta", "waiter-gpu"):  # then look for processes
            rounds += 1
            assert rounds < 400, "the waiter never got the freed GPU"
            time.sleep(0.05)
        survivors = _pids("holder-")
        print(f"sandboxed={sandboxed}: {rounds} polls until the GPU moved; {survivors=}")
        assert not survivors, "beta got the GPU while alpha's processes lived"
        tenancy.wait(lambda: _phase(tenancy, "beta", "waiter") == "Running", "waiter runs")


def test_a_finished_pods_background_children_end_before_it_is_finished(tmp_path: Path) -> None:
    with _platform(tmp_path, sandboxed=False) as tenancy:
        _stubborn(tenancy, "alpha", "quick", 1)  # main exits after 1 s; its child would not
        _wait_for_pids("quick-child")
        tenancy.wait(lambda: _phase(tenancy, "alpha", "quick") == "Succeeded", "quick ends")
        assert not _pids("quick-"), "the pod finished while its background child lived"
        tenancy.wait(lambda: not _allocated(tenancy, "alpha", "quick-gpu"), "GPU freed")


def test_stopping_the_platform_ends_processes_that_left_their_group(tmp_path: Path) -> None:
    with _platform(tmp_path, sandboxed=False) as tenancy:
        _stubborn(tenancy, "alpha", "left", 300)
        children = _wait_for_pids("left-child")
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in children if _alive(pid)], "a background child outlived allot"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
