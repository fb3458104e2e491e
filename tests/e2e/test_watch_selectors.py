"""``kubectl get -w --output-watch-events`` with selectors, as a user runs it: an object
that stops matching the selector is DELETED from the watch, one that matches again is
ADDED, as kube-apiserver's watch cache sends them (it used to be MODIFIED, and nothing
when the object left).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from allot.cli.main import main as allot
from tests.e2e.conftest import KUBECTL, Cluster, running_platform


@contextmanager
def _watching(
    cluster: Cluster, *args: str, tenant: str | None = None
) -> Iterator[Callable[[int], list[str]]]:
    """``kubectl get ARGS -w --output-watch-events`` in the background, once its watch
    request reached the server (after its list); yields a function that returns its first
    N output lines (waiting at most 20 s for them)."""
    slots, on = cluster.server.api.watch_slots, tenant or "host"
    opened = slots.open[on]
    kubeconfig = cluster.kubeconfig.with_name(f"{tenant}.yaml") if tenant else cluster.kubeconfig
    env = {**os.environ, "HOME": str(cluster.home), "KUBECONFIG": str(kubeconfig)}
    process = subprocess.Popen(
        [KUBECTL, "get", *args, "-w", "--output-watch-events"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout

    def read_lines() -> None:
        for line in stdout:
            lines.put(line)

    reader = threading.Thread(target=read_lines, daemon=True)
    reader.start()
    deadline = time.monotonic() + 20
    while slots.open[on] <= opened and time.monotonic() < deadline:
        time.sleep(0.05)
    read: list[str] = []

    def first(count: int) -> list[str]:
        deadline = time.monotonic() + 20
        while len(read) < count and time.monotonic() < deadline:
            try:
                read.append(lines.get(timeout=0.2).rstrip("\n"))
            except queue.Empty:
                continue
        return read[:count]

    try:
        yield first
    finally:
        process.kill()
        process.wait(timeout=10)
        reader.join(timeout=10)
        stdout.close()


def test_a_label_selector_watch_sees_the_object_leave_and_come_back(cluster: Cluster) -> None:
    cluster.kubectl("create", "cm", "hw", "--from-literal=a=1")
    cluster.kubectl("label", "cm", "hw", "sel=yes")
    with _watching(cluster, "cm", "-l", "sel=yes") as first:
        assert [line.split()[:2] for line in first(2)] == [["EVENT", "NAME"], ["ADDED", "hw"]]
        cluster.kubectl("label", "cm", "hw", "sel=no", "--overwrite")
        cluster.kubectl("label", "cm", "hw", "sel=yes", "--overwrite")
        cluster.kubectl("label", "cm", "hw", "other=1")
        cluster.kubectl("label", "cm", "hw", "sel=no", "--overwrite")
        cluster.kubectl("label", "cm", "hw", "other=2", "--overwrite")  # outside: nothing
        cluster.kubectl("delete", "cm", "hw")  # outside: nothing
        cluster.kubectl("create", "cm", "marker")
        cluster.kubectl("label", "cm", "marker", "sel=yes")
        events = [line.split()[:2] for line in first(7)[2:]]
    assert events == [
        ["DELETED", "hw"],
        ["ADDED", "hw"],
        ["MODIFIED", "hw"],
        ["DELETED", "hw"],
        ["ADDED", "marker"],
    ]


def _phase(cluster: Cluster, pod: str, phase: str) -> None:
    patch = json.dumps({"status": {"phase": phase}})
    cluster.kubectl("patch", "pod", pod, "--subresource=status", "--type=merge", "-p", patch)


def test_a_field_selector_watch_sees_the_object_enter_and_leave(cluster: Cluster) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "phased"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    cluster.kubectl("create", "-f", "-", stdin=json.dumps(pod))
    with _watching(cluster, "pods", "--field-selector=status.phase=Running", "-o", "json") as first:
        _phase(cluster, "phased", "Running")
        _phase(cluster, "phased", "Succeeded")
        events = [json.loads(line) for line in first(2) if line.startswith("{")]
    assert [(e["type"], e["object"]["status"]["phase"]) for e in events] == [
        ("ADDED", "Running"),
        ("DELETED", "Running"),  # the object as it last matched, at the version it left
    ]


def test_a_tenants_label_selector_watch_sees_the_object_leave_and_come_back(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("tenant-watch")
    with running_platform(root) as platform:
        assert allot(["tenant", "create", "team-a", "--data-dir", str(root / "data")]) == 0
        kubeconfig = root / "data" / "kubeconfigs" / "team-a.yaml"

        def as_tenant(*args: str) -> None:
            platform.kubectl(*args, kubeconfig=kubeconfig)

        as_tenant("create", "cm", "hw", "--from-literal=a=1")
        as_tenant("label", "cm", "hw", "sel=yes")
        platform.kubectl("create", "cm", "hw", "--from-literal=a=1")  # the host's own
        platform.kubectl("label", "cm", "hw", "sel=yes")
        with _watching(platform, "cm", "-l", "sel=yes", tenant="team-a") as first:
            assert [line.split()[:2] for line in first(2)][1] == ["ADDED", "hw"]
            platform.kubectl("label", "cm", "hw", "sel=no", "--overwrite")  # not the tenant's
            as_tenant("label", "cm", "hw", "sel=no", "--overwrite")
            as_tenant("label", "cm", "hw", "sel=yes", "--overwrite")
            events = [line.split()[:2] for line in first(4)[2:]]
    assert events == [["DELETED", "hw"], ["ADDED", "hw"]]
