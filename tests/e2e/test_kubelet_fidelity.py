"""The node agent as the kubelet, seen through the real kubectl on the process runtime: a
crash-looping container is reported waiting with ``CrashLoopBackOff`` and unready (its
Deployment unavailable), a delete's grace period wins over the spec's, a container that
could not run has a (empty) log, and ``kubectl logs -f`` follows a log until its container
ends."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from allot.driver.fleet import SEED_000_FLEET
from tests.e2e.conftest import KUBECTL, Cluster, running_platform
from tests.e2e.tenancy import seed_platform

pytestmark = pytest.mark.slow
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
IGNORE_SIGTERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('up', flush=True); time.sleep(300)"
)


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_platform(
        tmp_path_factory.mktemp("kubelet-fidelity"), SEED_000_FLEET, runtime="process"
    ) as cluster:
        yield cluster


def _pod(name: str, command: list[str] | None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "python:3.12"}
    if command is not None:
        container["command"] = command
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "tolerations": TOLERATE,
            "containers": [container],
            **spec,
        },
    }


def _wait_phase(cluster: Cluster, pod: str, phase: str) -> None:
    cluster.kubectl(
        "wait", f"--for=jsonpath={{.status.phase}}={phase}", f"pod/{pod}", "--timeout=30s"
    )


def _poll(what: str, check: Any, seconds: float = 40) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _crash_pod(cluster: Cluster) -> dict[str, Any]:
    pods = cluster.get_json("pods", "-l", "app=crash")["items"]
    return pods[0] if pods else {}


def _backing_off(cluster: Cluster, delay: str) -> dict[str, Any] | None:
    """The crash pod once its container waits ``delay`` for its restart."""
    pod = _crash_pod(cluster)
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    waiting = (statuses[0].get("state") or {}).get("waiting") or {} if statuses else {}
    return pod if f"back-off {delay} " in str(waiting.get("message", "")) else None


def test_a_crash_looping_container_waits_in_crash_loop_back_off(platform: Cluster) -> None:
    # kubectl names the container after its image: x
    platform.kubectl(
        "create", "deployment", "crash", "--image=x", "--", "sh", "-c", "echo crashing; exit 1"
    )
    # restarted after 1 s, 2 s, then 4 s: the status now shows the 8 s back-off
    pod = _poll("the 8 s back-off", lambda: _backing_off(platform, "8s"))
    rollout = platform.kubectl("rollout", "status", "deploy/crash", "--timeout=5s", check=False)
    assert rollout.returncode != 0, rollout.stdout
    assert "successfully rolled out" not in rollout.stdout
    metadata = pod["metadata"]
    status = pod["status"]["containerStatuses"][0]
    assert status["state"]["waiting"] == {
        "reason": "CrashLoopBackOff",
        "message": f"back-off 8s restarting failed container=x "
        f"pod={metadata['name']}_default({metadata['uid']})",
    }
    assert (status["ready"], status["started"], status["restartCount"]) == (False, False, 3)
    terminated = status["lastState"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (1, "Error")
    assert terminated["startedAt"] <= terminated["finishedAt"]
    assert terminated["containerID"].startswith("containerd://")
    conditions = {c["type"]: c for c in pod["status"]["conditions"]}
    for kind in ("Ready", "ContainersReady"):
        assert conditions[kind]["status"] == "False"
        assert conditions[kind]["reason"] == "ContainersNotReady"
        assert conditions[kind]["message"] == "containers with unready status: [x]"
    assert pod["status"]["phase"] == "Running"
    deployment = platform.get_json("deployment", "crash")["status"]
    assert deployment.get("availableReplicas", 0) == 0
    assert deployment.get("unavailableReplicas") == 1
    _kubectl_shows_the_crash_loop(platform, metadata["name"])


def _kubectl_shows_the_crash_loop(platform: Cluster, name: str) -> None:
    """``kubectl get pods`` STATUS, ``describe``'s Last State (with its start time) and
    the kubelet's BackOff event."""
    row = _poll(
        "CrashLoopBackOff in kubectl get pods",
        lambda: next(
            (
                line
                for line in platform.kubectl("get", "pods").stdout.splitlines()
                if line.startswith(name) and "CrashLoopBackOff" in line
            ),
            None,
        ),
    )
    assert row.split()[1] == "0/1"
    described = platform.kubectl("describe", "pod", name).stdout
    last_state = described[described.index("Last State:") :]
    assert re.search(r"Last State:\s+Terminated\n\s+Reason:\s+Error\n\s+Exit Code:\s+1", last_state)
    assert "0001" not in last_state.split("Ready:")[0]  # Started and Finished are set
    events = platform.kubectl(
        "get", "events", "--field-selector", f"involvedObject.name={name}"
    ).stdout
    assert f"Back-off restarting failed container x in pod {name}_default(" in events
    listed = platform.get_json("events", "--field-selector", f"involvedObject.name={name}")
    started = [e.get("count", 1) for e in listed["items"] if e["reason"] == "Started"]
    assert len(started) == 1
    assert started[0] >= 4  # the first start and (at least) three restarts, on one Event


def _delete_seconds(cluster: Cluster, *args: str) -> float:
    started = time.monotonic()
    cluster.kubectl("delete", "pod", *args, timeout=60)
    return time.monotonic() - started


def test_the_deletions_grace_period_wins_over_the_specs(platform: Cluster) -> None:
    pod = _pod("stub", [sys.executable, "-c", IGNORE_SIGTERM], terminationGracePeriodSeconds=20)
    platform.apply(pod)
    _wait_phase(platform, "stub", "Running")
    took = _delete_seconds(platform, "stub", "--grace-period=2")
    assert 2 <= took < 10, took


def test_a_second_delete_shortens_the_grace_period(platform: Cluster) -> None:
    pod = _pod("stub2", [sys.executable, "-c", IGNORE_SIGTERM], terminationGracePeriodSeconds=60)
    platform.apply(pod)
    _wait_phase(platform, "stub2", "Running")
    platform.kubectl("delete", "pod", "stub2", "--wait=false")
    time.sleep(1)
    assert platform.get_json("pod", "stub2")["metadata"]["deletionGracePeriodSeconds"] == 60
    took = _delete_seconds(platform, "stub2", "--grace-period=1")
    assert took < 10, took


def test_a_container_that_could_not_run_has_a_log(platform: Cluster) -> None:
    platform.apply(_pod("no-command", None))
    _wait_phase(platform, "no-command", "Failed")
    logs = platform.kubectl("logs", "no-command", check=False)
    assert (logs.returncode, logs.stdout, logs.stderr) == (0, "", "")
    previous = platform.kubectl("logs", "no-command", "--previous", check=False)
    assert previous.returncode != 0
    assert 'previous terminated container "main" in pod "no-command" not found' in (previous.stderr)


def _follow(cluster: Cluster, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "HOME": str(cluster.home), "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.Popen(
        [KUBECTL, "logs", "-f", *args], stdout=subprocess.PIPE, text=True, env=env
    )


def _ticker(name: str) -> dict[str, Any]:
    script = (
        "import time\nfor n in range(8):\n    print(f'tick {n}', flush=True)\n    time.sleep(0.5)\n"
    )
    return _pod(name, [sys.executable, "-c", script])


def test_logs_follow_until_the_container_ends(platform: Cluster) -> None:
    platform.apply(_ticker("ticker"))
    _wait_phase(platform, "ticker", "Running")
    follower = _follow(platform, "ticker")
    assert follower.stdout is not None
    assert follower.stdout.readline() == "tick 0\n"
    assert platform.get_json("pod", "ticker")["status"]["phase"] == "Running"  # still going
    rest, _ = follower.communicate(timeout=30)  # ends by itself once the container exits
    assert follower.returncode == 0
    assert rest.splitlines() == [f"tick {n}" for n in range(1, 8)]
    assert platform.get_json("pod", "ticker")["status"]["phase"] == "Succeeded"


def test_logs_follow_with_tail(platform: Cluster) -> None:
    platform.apply(_ticker("ticker-tail"))
    _wait_phase(platform, "ticker-tail", "Running")
    _poll("three lines", lambda: "tick 2" in platform.kubectl("logs", "ticker-tail").stdout)
    follower = _follow(platform, "ticker-tail", "--tail=1")
    output, _ = follower.communicate(timeout=30)
    lines = output.splitlines()
    assert lines[-1] == "tick 7"
    assert 2 <= int(lines[0].split()[1]) <= 6  # from the last line written when it began
    assert lines == [f"tick {n}" for n in range(int(lines[0].split()[1]), 8)]


def test_logs_follow_ends_when_the_pod_is_deleted(platform: Cluster) -> None:
    script = "import time; print('up', flush=True); time.sleep(300)"
    platform.apply(_pod("sleeper", [sys.executable, "-c", script]))
    _wait_phase(platform, "sleeper", "Running")
    follower = _follow(platform, "sleeper")
    assert follower.stdout is not None
    assert follower.stdout.readline() == "up\n"
    platform.kubectl("delete", "pod", "sleeper", "--grace-period=1")
    rest, _ = follower.communicate(timeout=15)
    assert (follower.returncode, rest) == (0, "")


def test_a_tenant_sees_its_crash_loop_under_its_own_names(tmp_path: Path) -> None:
    """The tenant's pod shows the twin's CrashLoopBackOff, and the kubelet's texts name
    the tenant's pod (name, namespace, uid), not the host twin; its init container's
    status and log reach the tenant too."""
    with seed_platform(tmp_path, runtime="process") as tenancy:
        pod = _pod("crashy", ["sh", "-c", "echo crashing; exit 2"], restartPolicy="Always")
        del pod["spec"]["tolerations"]
        init = {"name": "prepare", "image": "busybox:1", "command": ["echo", "prepared"]}
        pod["spec"]["initContainers"] = [init]
        tenancy.as_tenant("legal-ai", "apply", "-f", "-", stdin=json.dumps(pod))

        def waiting() -> Any:
            status = tenancy.tenant_json("legal-ai", "pod", "crashy").get("status") or {}
            state = ((status.get("containerStatuses") or [{}])[0].get("state")) or {}
            return state.get("waiting") if "back-off 2s" in str(state) else None

        shown = tenancy.wait(waiting, "the tenant pod's 2 s back-off", timeout=30)
        uid = tenancy.tenant_json("legal-ai", "pod", "crashy")["metadata"]["uid"]
        assert shown == {
            "reason": "CrashLoopBackOff",
            "message": f"back-off 2s restarting failed container=main pod=crashy_default({uid})",
        }
        assert "CrashLoopBackOff" in tenancy.as_tenant("legal-ai", "get", "pod", "crashy").stdout
        # the current run's log: empty for a moment after a restart, before sh writes
        assert tenancy.as_tenant("legal-ai", "logs", "crashy").stdout in ("crashing\n", "")
        assert tenancy.as_tenant("legal-ai", "logs", "crashy", "--previous").stdout == "crashing\n"
        # its init container ran first; its status and log reach the tenant
        (init_status,) = tenancy.tenant_json("legal-ai", "pod", "crashy")["status"][
            "initContainerStatuses"
        ]
        assert init_status["state"]["terminated"]["reason"] == "Completed"
        prepared = tenancy.as_tenant("legal-ai", "logs", "crashy", "-c", "prepare").stdout
        assert prepared == "prepared\n"

        def back_off_event() -> str:
            return tenancy.as_tenant(
                "legal-ai", "get", "events", "--field-selector", "involvedObject.name=crashy"
            ).stdout

        events = tenancy.wait(
            lambda: "Back-off" in back_off_event() and back_off_event(), "BackOff event"
        )
        assert f"Back-off restarting failed container main in pod crashy_default({uid})" in events


def test_an_init_container_runs_first_and_keeps_its_log(platform: Cluster) -> None:
    """``kubectl get pod`` shows ``Init:0/1`` while the init container runs, then the
    pod runs and completes; ``kubectl logs -c`` and ``--all-containers`` read the init
    container's log."""
    pod = _pod("with-init", ["sh", "-c", "echo app ran"])
    pod["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox:1", "command": ["sh", "-c", "echo set up; sleep 1.5"]}
    ]
    platform.apply(pod)
    row = _poll(
        "Init:0/1",
        lambda: "Init:0/1" in platform.kubectl("get", "pod", "with-init").stdout,
        seconds=20,
    )
    assert row
    _wait_phase(platform, "with-init", "Succeeded")
    listed = platform.kubectl("get", "pod", "with-init").stdout.splitlines()[1].split()
    assert listed[1:3] == ["0/1", "Completed"]
    assert platform.kubectl("logs", "with-init", "-c", "setup").stdout == "set up\n"
    both = platform.kubectl("logs", "with-init", "--all-containers").stdout
    assert both.splitlines() == ["set up", "app ran"]
    status = platform.get_json("pod", "with-init")["status"]
    (init,) = status["initContainerStatuses"]
    assert init["state"]["terminated"]["reason"] == "Completed"
    assert init["ready"] is True
    assert init["containerID"].startswith("containerd://")
