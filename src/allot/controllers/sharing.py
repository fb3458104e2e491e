"""Carrying out a claim's sharing plan (:mod:`allot.driver.sharing`) on this machine.

The driver's kubelet plugin starts an MPS control daemon per shared claim and sets GPUs'
time-slices; :class:`SharingApplier` does the same for the node agent's
:class:`~allot.controllers.nodeagent.DevicePreparer`, and never changes a setting of a
GPU that others may share:

* **Real GPUs** (their UUID is on this machine): each MPS daemon runs as a child process
  (``nvidia-cuda-mps-control -f``, ``CUDA_VISIBLE_DEVICES`` its devices), with its own
  pipe, log and shared-memory directories under ``<data-dir>/mps/<id>/``; the thread
  percentage and pinned memory limits are written to it through its control pipe once it
  answers (``MPS control daemon is not yet ready`` otherwise); it is told ``quit`` (and
  killed if it does not go) when the claim is released. With a sandbox the daemon runs
  in a mount namespace of its own (bubblewrap: the host's root, but its directories at
  ``/tmp/nvidia-mps``, ``/tmp/nvidia-mps-log`` and ``/dev/shm``), so that it and the
  containers, which get the same binds, share pipes and shared memory as in the driver's
  daemon pod. The compute mode is left alone (the driver makes the GPU
  ``EXCLUSIVE_PROCESS``), and ``nvidia-smi compute-policy`` is never run: the commands the
  driver would run are reported instead.
* **Simulated devices**: nothing runs; the plan is what the containers' environment and
  simulated ``nvidia-smi`` show.

:meth:`apply` answers the lines the node agent records as Events. Called on the event
loop (a daemon's start waits a few seconds at most).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from allot.driver.sharing import MPS_PIPE, SHM, ClaimSharing, MpsDaemon, TimeSlicing

CONTROL = "nvidia-cuda-mps-control"
DAEMON_LOG = "/tmp/nvidia-mps-log"  # the log directory inside a sandboxed daemon
READY_SECONDS = 10.0
COMMAND_SECONDS = 5.0


class SharingError(Exception):
    """A sharing step failed on this machine; the message is the driver's wording."""


@dataclass
class _Running:
    daemon: MpsDaemon
    root: Path
    process: subprocess.Popen[bytes] | None = None  # None: simulated devices

    @property
    def pipe(self) -> Path:
        return self.root / "pipe"

    @property
    def log(self) -> Path:
        return self.root / "log"

    @property
    def shm(self) -> Path:
        return self.root / "shm"


@dataclass
class SharingApplier:
    """MPS daemons and time-slices of prepared claims (see the module's docstring).

    ``is_real(uuid)``: whether a GPU UUID is one of this machine's; ``bwrap``: the
    sandbox's bubblewrap, None where containers run unconfined."""

    directory: Path
    is_real: Callable[[str], bool] = lambda uuid: False
    bwrap: str | None = None
    _daemons: dict[str, list[_Running]] = field(default_factory=dict)  # by claim uid

    def apply(self, claim_uid: str, plan: ClaimSharing) -> list[str]:
        """Start what the plan asks for (once per claim: a second pod sharing the claim
        finds it running); the lines that say what was done."""
        if claim_uid in self._daemons:
            return []
        lines = [_time_slicing_line(t, self._real(t.gpu_uuids)) for t in plan.time_slicing]
        running: list[_Running] = []
        self._daemons[claim_uid] = running
        for daemon in plan.daemons:
            entry = _Running(daemon, self.directory / daemon.id)
            running.append(entry)  # released with the claim, even if it fails to start
            if self._real(daemon.gpus):
                try:
                    self._start(entry)
                except SharingError:
                    self.release(claim_uid)
                    raise
            lines.append(_mps_line(entry))
        return lines

    def active(self) -> dict[str, list[str]]:
        """The MPS daemons of prepared claims, by claim uid (their names)."""
        return {uid: [e.daemon.name for e in running] for uid, running in self._daemons.items()}

    def mounts(self, daemon: MpsDaemon) -> list[tuple[str, str]]:
        """What a container of the daemon's claim binds: (host path, container path)."""
        root = self.directory / daemon.id
        return [(str(root / "pipe"), MPS_PIPE), (str(root / "shm"), SHM)]

    def release(self, claim_uid: str) -> None:
        """The claim is released: its daemons are told to quit, their directories go."""
        for entry in self._daemons.pop(claim_uid, []):
            if entry.process is not None:
                self._stop(entry)
            shutil.rmtree(entry.root, ignore_errors=True)

    def release_all(self) -> None:
        for claim_uid in list(self._daemons):
            self.release(claim_uid)

    def _real(self, uuids: tuple[str, ...]) -> bool:
        return any(self.is_real(uuid) for uuid in uuids)

    # ------------------------------------------------------------- real daemons
    def _start(self, entry: _Running) -> None:
        control = shutil.which(CONTROL)
        if control is None:
            raise SharingError(
                f"error applying config: error starting MPS control daemon: {CONTROL} is not "
                "on PATH"
            )
        for directory in (entry.pipe, entry.log, entry.shm):
            directory.mkdir(parents=True, exist_ok=True)
            directory.chmod(0o1777)  # the daemon's servers run as the clients' users
        argv, inside = self._daemon_command(entry, control)
        environment = {
            "PATH": os.environ.get("PATH", os.defpath),
            "CUDA_VISIBLE_DEVICES": ",".join(entry.daemon.uuids),
            "CUDA_MPS_PIPE_DIRECTORY": inside[0],
            "CUDA_MPS_LOG_DIRECTORY": inside[1],
        }
        with (entry.log / "allot-daemon.log").open("ab") as output:
            entry.process = subprocess.Popen(
                argv,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._wait_ready(entry)
        for command in entry.daemon.control_commands():
            self._control(
                entry, command, "error applying config: error starting MPS control daemon"
            )

    def _daemon_command(self, entry: _Running, control: str) -> tuple[list[str], tuple[str, str]]:
        """The daemon's argv, and its pipe and log directories as it sees them."""
        foreground = [control, *entry.daemon.start_argv(foreground=True)[1:]]
        if self.bwrap is None:
            return foreground, (str(entry.pipe), str(entry.log))
        confined = [self.bwrap, "--die-with-parent", "--dev-bind", "/", "/"]
        if os.geteuid() != 0:
            confined.append("--unshare-user")
        confined += ["--tmpfs", "/tmp", "--bind", str(entry.pipe), MPS_PIPE]
        confined += ["--bind", str(entry.log), DAEMON_LOG, "--bind", str(entry.shm), SHM]
        return [*confined, "--", *foreground], (MPS_PIPE, DAEMON_LOG)

    def _wait_ready(self, entry: _Running) -> None:
        """Until the daemon's control pipe exists (it answers then), or it exits."""
        deadline = time.monotonic() + READY_SECONDS
        assert entry.process is not None
        while not (entry.pipe / "control").exists():
            if entry.process.poll() is not None or time.monotonic() > deadline:
                reason = (
                    f"exited with {entry.process.returncode}"
                    if entry.process.poll() is not None
                    else f"no control pipe after {READY_SECONDS:g}s"
                )
                raise SharingError(
                    f"error applying config: MPS control daemon is not yet ready: {reason}"
                    f"{_log_tail(entry.log)}"
                )
            time.sleep(0.05)

    def _control(self, entry: _Running, command: str, failure: str) -> None:
        environment = {
            "PATH": os.environ.get("PATH", os.defpath),
            "CUDA_MPS_PIPE_DIRECTORY": str(entry.pipe),
        }
        try:
            done = subprocess.run(
                [CONTROL],
                input=f"{command}\n".encode(),
                env=environment,
                capture_output=True,
                timeout=COMMAND_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise SharingError(f"{failure}: {command}: {err}") from None
        if done.returncode != 0:
            output = (done.stdout + done.stderr).decode(errors="replace").strip()
            raise SharingError(f"{failure}: {command}: exit status {done.returncode} {output}")

    def _stop(self, entry: _Running) -> None:
        process = entry.process
        assert process is not None
        if process.poll() is None:
            with contextlib.suppress(SharingError):
                self._control(entry, "quit", "quit")
        try:
            process.wait(timeout=COMMAND_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 9)
            process.wait(timeout=COMMAND_SECONDS)


def _time_slicing_line(slicing: TimeSlicing, real: bool) -> str:
    if not slicing.gpu_uuids:
        return "TimeSlicing on MIG devices: nothing to set (the driver sets no interval on MIG)"
    commands = "; ".join(" ".join(c) for c in slicing.commands())
    interval, gpus = slicing.interval, ", ".join(slicing.gpu_uuids)
    if real:
        return (
            f"TimeSlicing interval {interval}: not applied to {gpus} (the GPU may be shared "
            f"with others, and allot never changes a GPU-wide setting); the driver would run: "
            f"{commands}"
        )
    return f"TimeSlicing interval {interval} set on simulated {gpus} as the driver does: {commands}"


def _mps_line(entry: _Running) -> str:
    daemon = entry.daemon
    where = "" if entry.process is not None else " (simulated)"
    settings = "; ".join(daemon.control_commands()) or "no limits"
    return (
        f"MPS control daemon {daemon.name} started{where} for {', '.join(daemon.uuids)}: "
        f"{settings} (compute mode left as it is)"
    )


def _log_tail(log: Path) -> str:
    """The daemon's last log lines, for the refusal's reader."""
    lines: list[str] = []
    for name in ("control.log", "allot-daemon.log"):
        with contextlib.suppress(OSError):
            lines += (log / name).read_text(errors="replace").strip().splitlines()[-3:]
    return f" ({' | '.join(lines)})" if lines else ""
