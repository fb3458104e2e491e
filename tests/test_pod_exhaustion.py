"""A pod of the process runtime cannot exhaust the host (issue 28): its processes are
bounded by the node's pod process limit (cgroup ``pids.max`` where one is writable, else
``RLIMIT_NPROC`` set inside the sandbox), its local storage (working directory, ``/tmp``,
logs) by ``limits.ephemeral-storage`` with the kubelet's eviction (reason ``Evicted``, its
message, phase ``Failed``), and nothing in its sandbox is writable in RAM but a 64 MiB
``/dev/shm``. Real processes in real bubblewrap sandboxes, with small limits."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from allot.controllers.limits import ContainerLimits
from allot.controllers.nodeagent import DevicePreparer, NodeAgent
from allot.controllers.runtimes import ProcessRuntime
from allot.controllers.sandbox import Confinement, Sandbox
from allot.types import Obj
from tests.batch_harness import Bench

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)
PIDS = 12
FORK = """
import os, time
count = 0
for _ in range(60):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(4)
        os._exit(0)
    count += 1
print("forked", count, flush=True)
time.sleep(2)  # its children live while the pod's other containers fork
"""


def _container(name: str, argv: list[str], **resources: Any) -> Obj:
    container: Obj = {"name": name, "image": "busybox", "command": argv}
    if resources:
        container["resources"] = {"limits": resources}
    return container


def _pod(containers: list[Obj], restart: str = "Never", user: int | None = None) -> Obj:
    spec: Obj = {"nodeName": "node-a", "restartPolicy": restart, "containers": containers}
    if user is not None:
        spec["securityContext"] = {"runAsUser": user, "runAsGroup": user}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team"},
        "spec": spec,
    }


async def _run(tmp_path: Path, pod: Obj, limits: ContainerLimits | None = None) -> Bench:
    """Run ``pod`` sandboxed until it has finished or been evicted (its processes gone)."""
    bench = Bench(tmp_path)
    runtime = ProcessRuntime(
        tmp_path / "logs",
        tmp_path / "pods",
        Sandbox.find(hidden=[tmp_path / "data"]),
        limits=limits or ContainerLimits(pod_pids=PIDS),
    )
    runtime.storage_seconds = 0.2
    agent = NodeAgent(bench.context, DevicePreparer(tmp_path / "cdi"), runtime)
    bench.context.create("Namespace", {"metadata": {"name": "team"}}, "test")
    uid = bench.context.create("Pod", pod, "test")["metadata"]["uid"]
    agent.reconcile(("pod", "team", "p"))
    for _ in range(300):
        found = bench.context.get("Pod", "team", "p") or {}
        done = (found.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if done and not runtime.holds(uid):
            break
        await asyncio.sleep(0.05)
    await runtime.stop_all()
    return bench


def _forked(tmp_path: Path, container: str = "main") -> int:
    """How many processes the container started (none: it could not even start)."""
    log = (tmp_path / "logs" / "team" / "p" / f"{container}.log").read_text()
    return int(log.split("forked ")[1].split()[0]) if "forked " in log else 0


def _unused_uid() -> int:
    """A user id no other process of this machine has (RLIMIT_NPROC counts per user)."""
    return random.randrange(200_000, 2_000_000_000)


def test_a_pod_cannot_run_more_processes_than_the_pod_limit(tmp_path: Path) -> None:
    """Whatever this machine enforces it with: a cgroup where allot may write one, else
    the sandbox's rlimit (the pod's own user id here, so other pods do not count)."""
    pod = _pod([_container("main", [sys.executable, "-c", FORK])], user=_unused_uid())
    asyncio.run(_run(tmp_path, pod)).close()
    assert 1 <= _forked(tmp_path) < PIDS


def test_without_a_pids_cgroup_the_sandbox_sets_the_process_limit(tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("")
    limits = ContainerLimits(tmp_path / "no-cgroup", pod_pids=PIDS, mountinfo=mountinfo)
    assert limits.sandbox_nproc == PIDS
    pod = _pod([_container("main", [sys.executable, "-c", FORK])], user=_unused_uid())
    asyncio.run(_run(tmp_path, pod, limits)).close()
    assert 1 <= _forked(tmp_path) < PIDS


@pytest.mark.skipif(
    ContainerLimits(pod_pids=PIDS).sandbox_nproc is not None,
    reason="no writable pids cgroup here: the process limit holds per sandbox, not per pod",
)
def test_a_pids_cgroup_bounds_the_pod_s_containers_together(tmp_path: Path) -> None:
    containers = [_container(n, [sys.executable, "-c", FORK]) for n in ("one", "two")]
    asyncio.run(_run(tmp_path, _pod(containers))).close()
    assert _forked(tmp_path, "one") + _forked(tmp_path, "two") < PIDS


WRITE = "dd if=/dev/zero of={} bs=1M count=20 2>/dev/null; sleep 30"


def _evicted(bench: Bench) -> tuple[Obj, list[tuple[str, str, str]]]:
    pod = bench.context.get("Pod", "team", "p")
    assert pod is not None
    events = [(e["type"], e["reason"], e["message"]) for e in bench.context.list("Event", "team")]
    return pod, events


@pytest.mark.parametrize("target", ["/pod/data", "/tmp/data"])
def test_a_pod_over_its_ephemeral_storage_is_evicted_as_by_the_kubelet(
    tmp_path: Path, target: str
) -> None:
    """``/tmp`` is the container's own directory on disk, counted as a container's
    writable layer is; the pod is evicted within a check, not restarted."""
    main = _container("main", ["sh", "-c", WRITE.format(target)], **{"ephemeral-storage": "5Mi"})
    bench = asyncio.run(_run(tmp_path, _pod([main], restart="Always")))
    pod, events = _evicted(bench)
    bench.close()
    message = "Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. "
    status = pod["status"]
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "Evicted", message)
    assert ("Warning", "Evicted", message) in events
    (entry,) = status["containerStatuses"]
    assert entry["state"]["terminated"]["exitCode"] in (137, 143)  # SIGKILL or SIGTERM
    assert entry["restartCount"] == 0
    assert not (tmp_path / "pods" / "team" / "p").exists()  # its writable layer is gone


def test_a_container_over_its_own_limit_is_named(tmp_path: Path) -> None:
    writer = _container(
        "writer", ["sh", "-c", WRITE.format("/tmp/data")], **{"ephemeral-storage": "5Mi"}
    )
    idle = _container("idle", ["sleep", "30"], **{"ephemeral-storage": "100Mi"})
    bench = asyncio.run(_run(tmp_path, _pod([writer, idle])))
    pod, events = _evicted(bench)
    bench.close()
    message = 'Container writer exceeded its local ephemeral storage limit "5Mi". '
    assert (pod["status"]["reason"], pod["status"]["message"]) == ("Evicted", message)
    assert ("Warning", "Evicted", message) in events


def test_nothing_in_the_sandbox_is_writable_in_ram_but_a_bounded_dev_shm(tmp_path: Path) -> None:
    """As without root, where bwrap's root and ``/dev`` belong to the mapped user: here the
    sandbox's user owns them too (root without capabilities), and still cannot write."""
    sandbox = Sandbox.find(hidden=[])
    sandbox.as_root = False  # a user namespace of its own, its user owning the tmpfs
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    confinement = Confinement(hostname="p", directory=work, tmp=tmp)
    script = (
        "touch /made 2>&1; mkdir /dev/made 2>&1; "
        "dd if=/dev/zero of=/dev/shm/fill bs=1M count=80 2>/dev/null; "
        "echo shm $(wc -c < /dev/shm/fill); echo on-disk > /tmp/note"
    )
    result = subprocess.run(
        sandbox.command(["sh", "-c", script], confinement),
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": os.environ["PATH"]},
    )
    assert result.stdout.count("Read-only file system") == 2, result.stdout + result.stderr
    assert f"shm {64 * 2**20}" in result.stdout
    assert (tmp / "note").read_text() == "on-disk\n"
