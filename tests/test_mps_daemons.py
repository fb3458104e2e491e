"""MPS control daemons on this machine (``allot.controllers.sharing``), with a stand-in for
``nvidia-cuda-mps-control`` that records what it is told: one daemon per shared claim with
its own pipe and log directories and its devices in ``CUDA_VISIBLE_DEVICES``, the driver's
commands written to it in order once it answers, a second pod of the claim finding it
running, ``quit`` and its directories removed when the claim is released; a daemon that
dies is the driver's "not yet ready". The sandboxed daemon's command line is checked as
built (the real-GPU test runs it)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from allot.controllers.sandbox import Confinement, HostMount, Sandbox
from allot.controllers.sharing import SharingApplier, SharingError, _Running
from allot.driver.configs import ChosenConfig
from allot.driver.sharing import ClaimSharing, plan
from tests.e2e.conftest import processes_naming

FAKE = """#!{python}
import os, pathlib, sys, time
pipe = pathlib.Path(os.environ["CUDA_MPS_PIPE_DIRECTORY"])
if "-f" in sys.argv:
    if pathlib.Path(sys.argv[0]).with_name("FAIL").exists():
        print("cannot start: no GPU", flush=True)
        sys.exit(3)
    log = pathlib.Path(os.environ["CUDA_MPS_LOG_DIRECTORY"])
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    (log / "control.log").write_text(f"started {{sys.argv[1:]}} devices {{visible}}\\n")
    (pipe / "control").write_text("")
    while not (pipe / "quit").exists():
        time.sleep(0.02)
    sys.exit(0)
command = sys.stdin.read().strip()
with open(pipe / "commands.log", "a") as out:
    out.write(command + "\\n")
if command == "quit":
    (pipe / "quit").write_text("")
"""


@pytest.fixture
def fake_control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tools = tmp_path / "bin"
    tools.mkdir()
    script = tools / "nvidia-cuda-mps-control"
    script.write_text(FAKE.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    return tools


def _plan(claim_uid: str, uuid: str, mps: dict[str, Any]) -> ClaimSharing:
    parameters = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "GpuConfig",
        "sharing": {"strategy": "MPS", "mpsConfig": mps},
    }
    chosen = [ChosenConfig("gpu-0", "gpu", "GpuConfig", parameters)]
    return plan(claim_uid, chosen, {"gpu-0": {"type": "gpu", "uuid": uuid}}, {})


def test_a_daemon_per_claim_told_the_drivers_commands_and_stopped_on_release(
    tmp_path: Path, fake_control: Path
) -> None:
    applier = SharingApplier(tmp_path / "mps", is_real=lambda uuid: True)
    try:
        _share_and_release(applier, tmp_path)
    finally:
        applier.release_all()


def _share_and_release(applier: SharingApplier, tmp_path: Path) -> None:
    first = _plan("uid-1", "GPU-aaaa", {"defaultActiveThreadPercentage": 50,
                                        "defaultPinnedDeviceMemoryLimit": "2Gi"})  # fmt: skip
    [line] = applier.apply("uid-1", first)
    daemon = first.daemons[0]
    assert line == (
        f"MPS control daemon {daemon.name} started for GPU-aaaa: "
        "set_default_active_thread_percentage 50; set_default_device_pinned_mem_limit "
        "GPU-aaaa 2048M (compute mode left as it is)"
    )
    root = tmp_path / "mps" / daemon.id
    assert (root / "log" / "control.log").read_text() == "started ['-f'] devices GPU-aaaa\n"
    assert (root / "pipe" / "commands.log").read_text().splitlines() == [
        "set_default_active_thread_percentage 50",
        "set_default_device_pinned_mem_limit GPU-aaaa 2048M",
    ]
    assert applier.apply("uid-1", first) == []  # the claim's second pod: already running
    second = _plan("uid-2", "GPU-bbbb", {})
    applier.apply("uid-2", second)
    other = tmp_path / "mps" / second.daemons[0].id
    assert other != root
    assert (other / "pipe" / "control").exists()
    assert applier.active() == {"uid-1": [daemon.name], "uid-2": [second.daemons[0].name]}
    assert processes_naming(str(root))  # the daemon runs
    applier.release("uid-1")
    assert not root.exists()
    deadline = time.monotonic() + 5
    while processes_naming(str(root)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not processes_naming(str(root))
    assert applier.active() == {"uid-2": [second.daemons[0].name]}
    applier.release_all()
    assert not other.exists()


def test_a_daemon_that_exits_is_not_ready(tmp_path: Path, fake_control: Path) -> None:
    (fake_control / "FAIL").write_text("")
    applier = SharingApplier(tmp_path / "mps", is_real=lambda uuid: True)
    with pytest.raises(SharingError) as refused:
        applier.apply("uid-1", _plan("uid-1", "GPU-aaaa", {}))
    assert str(refused.value) == (
        "error applying config: MPS control daemon is not yet ready: exited with 3 "
        "(cannot start: no GPU)"
    )
    assert applier.active() == {}
    assert not any((tmp_path / "mps").iterdir())


def test_simulated_devices_start_nothing_and_a_missing_binary_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    simulated = SharingApplier(tmp_path / "mps")
    [line] = simulated.apply("uid-1", _plan("uid-1", "GPU-aaaa", {}))
    assert "started (simulated) for GPU-aaaa" in line
    assert not (tmp_path / "mps").exists()
    monkeypatch.setenv("PATH", str(tmp_path))
    real = SharingApplier(tmp_path / "mps", is_real=lambda uuid: True)
    with pytest.raises(SharingError, match="nvidia-cuda-mps-control is not on PATH"):
        real.apply("uid-2", _plan("uid-2", "GPU-aaaa", {}))


def test_a_sandboxed_daemon_sees_its_directories_where_its_containers_do(tmp_path: Path) -> None:
    applier = SharingApplier(tmp_path / "mps", bwrap="/usr/bin/bwrap")
    daemon = _plan("uid-1", "GPU-aaaa", {"multiUser": True}).daemons[0]
    root = tmp_path / "mps" / daemon.id
    assert applier.mounts(daemon) == [
        (str(root / "pipe"), "/tmp/nvidia-mps"),
        (str(root / "shm"), "/dev/shm"),
    ]
    argv, inside = applier._daemon_command(_Running(daemon, root), "/usr/bin/mps")
    as_root = os.geteuid() == 0
    assert argv == [
        "/usr/bin/bwrap", "--die-with-parent", "--dev-bind", "/", "/",
        *([] if as_root else ["--unshare-user"]),
        "--tmpfs", "/tmp", "--bind", str(root / "pipe"), "/tmp/nvidia-mps",
        "--bind", str(root / "log"), "/tmp/nvidia-mps-log", "--bind", str(root / "shm"), "/dev/shm",
        "--", "/usr/bin/mps", "-f", "-M",
    ]  # fmt: skip
    assert inside == ("/tmp/nvidia-mps", "/tmp/nvidia-mps-log")


def test_a_container_binds_its_daemons_directories_over_its_private_tmp_and_shm(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox("/usr/bin/bwrap", "/usr/bin/setpriv", [])
    confinement = Confinement("p", tmp_path / "pod", tmp=tmp_path / "tmp")
    confinement.device_mounts = [
        HostMount("/data/mps/u-1/pipe", "/tmp/nvidia-mps", False),
        HostMount("/data/mps/u-1/shm", "/dev/shm", False),
    ]
    argv = sandbox.command(["python"], confinement)
    private_tmp = argv.index(str(tmp_path / "tmp")) - 1
    private_shm = argv.index("/dev/shm")  # the 64 MiB tmpfs comes first
    pipe = argv.index("/data/mps/u-1/pipe")
    shm = argv.index("/data/mps/u-1/shm")
    assert argv[pipe - 1 : pipe + 2] == ["--bind", "/data/mps/u-1/pipe", "/tmp/nvidia-mps"]
    assert argv[shm - 1 : shm + 2] == ["--bind", "/data/mps/u-1/shm", "/dev/shm"]
    assert private_tmp < pipe
    assert private_shm < shm
