"""The process runtime with the real kubectl: containers run as local processes that see
exactly their allocated devices, report exit codes, write logs and die with their pod."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from allot.driver.fleet import SEED_000_FLEET
from allot.platform import build
from tests.e2e.conftest import Cluster, running_platform

pytestmark = pytest.mark.slow
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
SHOW_DEVICES = "import os; print(os.environ['CUDA_VISIBLE_DEVICES'], os.environ['MODE'])"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_platform(
        tmp_path_factory.mktemp("process-runtime"), SEED_000_FLEET, runtime="process"
    ) as cluster:
        cluster.apply(_template())
        yield cluster


def _template() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "slice"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "mig.nvidia.com"}}]
                }
            }
        },
    }


def _pod(name: str, command: list[str] | None, claim: bool = True) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": "python:3.12",
        "env": [{"name": "MODE", "value": "check"}],
    }
    if command is not None:
        container["command"] = command
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "tolerations": TOLERATE,
        "containers": [container],
    }
    if claim:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "slice"}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _wait_phase(cluster: Cluster, pod: str, phase: str) -> None:
    cluster.kubectl(
        "wait", f"--for=jsonpath={{.status.phase}}={phase}", f"pod/{pod}", "--timeout=30s"
    )


def _mig_uuids(cluster: Cluster, node: str) -> set[str]:
    """UUIDs of the MIG devices the driver published for ``node``."""
    return {
        device["attributes"]["uuid"]["string"]
        for slice_ in cluster.get_json("resourceslices")["items"]
        if slice_["spec"].get("nodeName") == node
        for device in slice_["spec"]["devices"]
        if device["attributes"]["type"]["string"] == "mig"
    }


def test_process_sees_its_devices_and_logs(platform: Cluster) -> None:
    platform.apply(_pod("gpu-check", [sys.executable, "-c", SHOW_DEVICES]))
    _wait_phase(platform, "gpu-check", "Succeeded")
    pod = platform.get_json("pod", "gpu-check")
    visible, mode = platform.kubectl("logs", "gpu-check").stdout.split()
    assert mode == "check"
    assert visible in _mig_uuids(platform, pod["spec"]["nodeName"])  # exactly one device
    state = platform.get_json("pod", "gpu-check")["status"]["containerStatuses"][0]["state"]
    assert state["terminated"]["exitCode"] == 0
    assert state["terminated"]["reason"] == "Completed"


def test_exit_code_fails_the_pod(platform: Cluster) -> None:
    platform.apply(_pod("exits-3", [sys.executable, "-c", "raise SystemExit(3)"], False))
    _wait_phase(platform, "exits-3", "Failed")
    terminated = platform.get_json("pod", "exits-3")["status"]["containerStatuses"][0]["state"][
        "terminated"
    ]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")


def test_container_without_command_cannot_run(platform: Cluster) -> None:
    platform.apply(_pod("no-command", None, claim=False))
    _wait_phase(platform, "no-command", "Failed")
    status = platform.get_json("pod", "no-command")["status"]
    assert status["reason"] == "ContainerCannotRun"
    assert status["message"] == (
        'container "main" has no command: the process runtime runs commands, not images'
    )
    events = platform.kubectl(
        "get", "events", "--field-selector", "involvedObject.name=no-command"
    ).stdout
    assert "Warning" in events
    assert "Failed" in events
    assert "has no command" in events


def test_deleting_the_pod_kills_its_process(platform: Cluster) -> None:
    script = "import time; print('up', flush=True); time.sleep(120)  # sleeper"
    platform.apply(_pod("sleeper", [sys.executable, "-c", script], claim=False))
    _wait_phase(platform, "sleeper", "Running")
    pid = _host_pid(platform, "sleeper", "# sleeper")
    os.kill(pid, 0)  # alive
    platform.kubectl("delete", "pod", "sleeper", "--wait=true")
    _wait_gone(pid)


def test_nvidia_smi_lists_the_claimed_mig_device(platform: Cluster) -> None:
    """Simulated devices keep their shim, also where the machine has a real nvidia-smi."""
    platform.apply(_pod("smi", ["nvidia-smi", "-L"]))
    _wait_phase(platform, "smi", "Succeeded")
    lines = platform.kubectl("logs", "smi").stdout.splitlines()
    node = platform.get_json("pod", "smi")["spec"]["nodeName"]
    parent = next(
        d["attributes"]["parentUUID"]["string"]
        for s in platform.get_json("resourceslices")["items"]
        if s["spec"].get("nodeName") == node
        for d in s["spec"]["devices"]
    )
    assert lines[0] == f"GPU 0: NVIDIA A100-SXM4-40GB (UUID: {parent})"
    assert re.fullmatch(r"  MIG 1g\.5gb      Device  0: \(UUID: MIG-[0-9a-f-]{36}\)", lines[1])
    assert lines[1].split("UUID: ")[1].rstrip(")") in _mig_uuids(platform, node)
    assert len(lines) == 2


def test_sigterm_then_sigkill_after_the_grace_period(platform: Cluster) -> None:
    script = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('up', flush=True); time.sleep(120)  # stubborn"
    )
    pod = _pod("stubborn", [sys.executable, "-c", script], claim=False)
    pod["spec"]["terminationGracePeriodSeconds"] = 1
    platform.apply(pod)
    _wait_phase(platform, "stubborn", "Running")
    pid = _host_pid(platform, "stubborn", "# stubborn")
    started = time.monotonic()
    platform.kubectl("delete", "pod", "stubborn", "--wait=false")
    time.sleep(0.5)
    os.kill(pid, 0)  # ignored SIGTERM: still alive within the grace period
    terminating = platform.get_json("pod", "stubborn")["metadata"]  # graceful: still there
    assert terminating["deletionGracePeriodSeconds"] == 1
    _wait_gone(pid)
    assert time.monotonic() - started >= 1.0


def test_restart_policy_on_failure_restarts_until_success(platform: Cluster) -> None:
    script = (
        "import os, sys; first = not os.path.exists('ran'); open('ran', 'w').close(); "
        "print('first' if first else 'again'); sys.exit(1 if first else 0)"
    )
    pod = _pod("flaky", [sys.executable, "-c", script], claim=False)
    pod["spec"]["restartPolicy"] = "OnFailure"
    platform.apply(pod)
    _wait_phase(platform, "flaky", "Succeeded")
    status = platform.get_json("pod", "flaky")["status"]["containerStatuses"][0]
    assert status["restartCount"] == 1
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert status["state"]["terminated"]["exitCode"] == 0
    # as the kubelet's: the log is the current run's, the run before is --previous
    assert platform.kubectl("logs", "flaky").stdout == "again\n"
    assert platform.kubectl("logs", "flaky", "--previous").stdout == "first\n"
    # each run's lines with the time the node agent saw them (the sidecar moved with the log)
    first = platform.kubectl("logs", "flaky", "--previous", "--timestamps").stdout.split()
    again = platform.kubectl("logs", "flaky", "--timestamps").stdout.split()
    assert [first[1], again[1]] == ["first", "again"]
    assert first[0] < again[0], (first, again)  # RFC 3339 of fixed width: ordered as text


def _host_pid(cluster: Cluster, pod: str, marker: str) -> int:
    """The host PID of the container's process, once it has logged: inside its sandbox
    it has a PID of its own namespace. Found by the marker in its command line (bwrap's
    own processes carry the same argv and are skipped)."""
    deadline = time.monotonic() + 10
    while not cluster.kubectl("logs", pod).stdout.strip() and time.monotonic() < deadline:
        time.sleep(0.1)
    bwrap = os.path.realpath(shutil.which("bwrap") or "bwrap")
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            command = (entry / "cmdline").read_bytes().decode(errors="replace")
            if marker in command and os.path.realpath(entry / "exe") != bwrap:
                return int(entry.name)
        except OSError:
            continue
    raise AssertionError(f"no process of pod {pod} found")


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"process {pid} outlived its pod")


def test_stopping_the_platform_stops_its_processes(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    script = "import time; print('up', flush=True); time.sleep(120)  # long-job"
    root = tmp_path_factory.mktemp("shutdown")
    with running_platform(root, SEED_000_FLEET, runtime="process") as cluster:
        cluster.apply(_pod("long-job", [sys.executable, "-c", script], claim=False))
        _wait_phase(cluster, "long-job", "Running")
        pid = _host_pid(cluster, "long-job", "# long-job")
    _wait_gone(pid)


def test_unknown_runtime_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match="unknown runtime 'docker' \\(known: simulated, process\\)"
    ):
        build(tmp_path, runtime="docker")


def test_config_the_driver_refuses_is_a_prepare_event(platform: Cluster) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "mps-slice"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "mig.nvidia.com"}}],
                "config": [
                    {
                        "requests": ["gpu"],
                        "opaque": {
                            "driver": "gpu.nvidia.com",
                            "parameters": {
                                "apiVersion": "resource.nvidia.com/v1beta1",
                                "kind": "MigDeviceConfig",
                                "sharing": {"strategy": "MPS"},
                            },
                        },
                    }
                ],
            }
        },
    }
    pod = _pod("mps-user", [sys.executable, "-c", "print('never')"], claim=False)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "mps-slice"}]
    platform.apply(claim, pod)
    platform.kubectl("wait", "--for=jsonpath={.spec.nodeName}", "pod/mps-user", "--timeout=30s")
    uid = platform.get_json("resourceclaim", "mps-slice")["metadata"]["uid"]
    expected = (
        f"error preparing devices for claim default/mps-slice:{uid}: prepare devices failed: "
        'error validating config: "MPS" is selected as the GPU sharing strategy, but the '
        '"MPSSupport" feature gate is not enabled'
    )
    deadline = time.monotonic() + 10
    messages: list[str] = []
    while expected not in messages and time.monotonic() < deadline:
        events = platform.get_json("events", "--field-selector", "involvedObject.name=mps-user")
        messages = [
            e["message"]
            for e in events["items"]
            if e["reason"] == ("FailedPrepareDynamicResources")
        ]
        time.sleep(0.1)
    assert expected in messages
    assert platform.get_json("pod", "mps-user")["status"]["phase"] == "Pending"


def test_memory_limit_stops_a_container_that_exceeds_it(platform: Cluster) -> None:
    """``limits.memory`` holds: cgroup v2 ``memory.max`` (the kernel's OOM kill, 137) where
    writable, else the address-space rlimit (Python's MemoryError); within it, work fits."""
    script = (
        "import sys; small = bytearray(16 * 2**20); print('16Mi fits', flush=True); "
        "big = bytearray(1024 * 2**20); big[::4096] = b'x' * len(big[::4096]); print('1Gi fits')"
    )
    pod = _pod("greedy", [sys.executable, "-c", script], claim=False)
    pod["spec"]["containers"][0]["resources"] = {"limits": {"memory": "256Mi"}}
    platform.apply(pod)
    _wait_phase(platform, "greedy", "Failed")
    log = platform.kubectl("logs", "greedy").stdout
    code = platform.get_json("pod", "greedy")["status"]["containerStatuses"][0]["state"]
    assert log.startswith("16Mi fits\n")
    assert "1Gi fits" not in log
    assert code["terminated"]["exitCode"] == 137 or "MemoryError" in log


def test_a_missing_config_map_holds_the_pod_until_it_is_created(platform: Cluster) -> None:
    """The kubelet's ``CreateContainerConfigError``: the pod waits, ``kubectl get`` and
    ``describe`` say why; once the ConfigMap and Secret exist it runs with their values."""
    show = "import os; print(os.environ['V'], os.environ['DB_token'], os.environ['MODE'])"
    pod = _pod("needs-config", [sys.executable, "-c", show], claim=False)
    container = pod["spec"]["containers"][0]
    container["env"].append(
        {"name": "V", "valueFrom": {"configMapKeyRef": {"name": "nosuch", "key": "k"}}}
    )
    container["envFrom"] = [{"secretRef": {"name": "creds"}, "prefix": "DB_"}]
    platform.apply(pod)
    platform.kubectl(
        "wait",
        "--for=jsonpath={.status.containerStatuses[0].state.waiting.reason}"
        "=CreateContainerConfigError",
        "pod/needs-config",
        "--timeout=30s",
    )
    assert "CreateContainerConfigError" in platform.kubectl("get", "pod", "needs-config").stdout
    described = platform.kubectl("describe", "pod", "needs-config").stdout
    assert 'Error: secret "creds" not found' in described  # envFrom is resolved first
    platform.kubectl("create", "secret", "generic", "creds", "--from-literal=token=s3cr3t")
    platform.kubectl(
        "wait",
        "--for=jsonpath={.status.containerStatuses[0].state.waiting.message}"
        '=configmap "nosuch" not found',
        "pod/needs-config",
        "--timeout=30s",
    )
    platform.kubectl("create", "configmap", "nosuch", "--from-literal=k=from-map")
    _wait_phase(platform, "needs-config", "Succeeded")
    assert platform.kubectl("logs", "needs-config").stdout.split() == [
        "from-map",
        "s3cr3t",
        "check",
    ]
