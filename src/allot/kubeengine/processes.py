"""Supervising the real engine's processes: start each, know when it is up, stop them all.

Each component runs in its own process group (a Ctrl-C on the terminal reaches allot
only, which then stops the components in the reverse order of their start: kwok and the
controllers before kube-apiserver, etcd last) with its output in its own log file. Linux's
parent-death signal ends a component should allot itself be killed, so none outlives it.
A component that exits while the others run, or does not come up in time, is a
:class:`ComponentFailed` carrying the last lines of its log. Stopping sends SIGTERM, waits,
then SIGKILLs what is left, and reaps every child: no process is left (the tests check it
by PID). Called by :mod:`allot.kubeengine.cluster`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

STOP_SECONDS = 15.0
LOG_LINES = 12
PR_SET_PDEATHSIG = 1


class ComponentFailed(Exception):
    """A component exited or did not come up; the message ends with its log's last lines."""

    def __init__(self, component: str, what: str, log: Path) -> None:
        tail = last_lines(log)
        shown = "\n".join(f"  {line}" for line in tail) if tail else "  (its log is empty)"
        super().__init__(f"{component} {what}; the last lines of {log}:\n{shown}")
        self.component = component


def last_lines(path: Path, count: int = LOG_LINES) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if line.strip()][-count:]


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when allot's (forking) thread ends."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Component:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid


@dataclass
class Supervisor:
    """The running components, in the order they were started."""

    components: list[Component] = field(default_factory=list)

    def start(self, name: str, command: Sequence[str], log: Path) -> Component:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as output:
            process = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        component = Component(name, process, log)
        self.components.append(component)
        return component

    def wait_until(
        self, component: Component, ready: Callable[[], bool], timeout: float, every: float = 0.1
    ) -> None:
        """Poll ``ready`` until true; ComponentFailed if any component exits or time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            self.check()
            if ready():
                return
            if time.monotonic() > deadline:
                raise ComponentFailed(
                    component.name, f"did not become ready within {timeout:.0f}s", component.log
                )
            time.sleep(every)

    def check(self) -> None:
        """ComponentFailed for the first component that has exited."""
        for component in self.components:
            code = component.process.poll()
            if code is not None:
                raise ComponentFailed(component.name, f"exited with status {code}", component.log)

    def pids(self) -> dict[str, int]:
        return {component.name: component.pid for component in self.components}

    def stop(self) -> None:
        """SIGTERM each, newest first, waiting for each; SIGKILL whatever stays; reap all."""
        for component in reversed(self.components):
            _terminate(component.process)
        self.components.clear()


def _terminate(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
