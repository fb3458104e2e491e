"""How the node agent runs a pod's containers: on a timer, or as real local processes.

``SimulatedRuntime`` runs nothing: containers "run" until the pod's
``allot.dev/simulated-runtime-seconds`` annotation says they exit (never, without it), so
demos and tests can use any image. ``ProcessRuntime`` runs each container's ``command`` and
``args`` as a local process, in its own session, with the container's ``env`` values and
the environment of the devices it was given (``CUDA_VISIBLE_DEVICES``,
``NVIDIA_VISIBLE_DEVICES``); output goes to the log file ``kubectl logs`` reads. Images
are ignored: the process runs in this machine's environment. Both report exit codes back
to the node agent (``allot.controllers.nodeagent``), which owns the pod's status.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

Obj = dict[str, Any]
ExitCallback = Callable[[Obj, dict[str, int]], None]
RUNTIME_ANNOTATION = "allot.dev/simulated-runtime-seconds"
POLL_SECONDS = 0.1
# Variables a process keeps from the agent's own environment; everything else comes from
# the pod, as in a container.
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")


class ContainerStartError(Exception):
    """A container could not be started; the message says why, for the pod's status."""


class Runtime(Protocol):
    wants_devices: bool  # whether ``launch`` needs the containers' device environments

    def launch(
        self, pod: Obj, environments: dict[str, dict[str, str]], on_exit: ExitCallback
    ) -> None: ...

    def stop(self, namespace: str, name: str) -> None: ...


class SimulatedRuntime:
    name = "simulated"
    wants_devices = False

    def launch(
        self, pod: Obj, environments: dict[str, dict[str, str]], on_exit: ExitCallback
    ) -> None:
        seconds = (pod["metadata"].get("annotations") or {}).get(RUNTIME_ANNOTATION)
        if seconds is not None:
            codes = {c["name"]: 0 for c in pod["spec"].get("containers") or []}
            asyncio.get_running_loop().call_later(float(seconds), on_exit, pod, codes)

    def stop(self, namespace: str, name: str) -> None:
        return None


class ProcessRuntime:
    name = "process"
    wants_devices = True

    def __init__(self, logs_dir: Path) -> None:
        self.logs_dir = logs_dir
        self._running: dict[tuple[str, str], dict[str, subprocess.Popen[bytes]]] = {}

    def launch(
        self, pod: Obj, environments: dict[str, dict[str, str]], on_exit: ExitCallback
    ) -> None:
        key = (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
        directory = self.logs_dir / key[0] / key[1]
        directory.mkdir(parents=True, exist_ok=True)
        processes: dict[str, subprocess.Popen[bytes]] = {}
        self._running[key] = processes
        for container in pod["spec"].get("containers") or []:
            argv = list(container.get("command") or []) + list(container.get("args") or [])
            if not argv:
                self.stop(*key)
                raise ContainerStartError(
                    f'container "{container["name"]}" has no command: the process runtime '
                    "runs commands, not images"
                )
            processes[container["name"]] = _spawn(
                argv, environments[container["name"]], directory / f"{container['name']}.log"
            )
        asyncio.get_running_loop().call_later(POLL_SECONDS, self._poll, pod, on_exit)

    def _poll(self, pod: Obj, on_exit: ExitCallback) -> None:
        key = (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
        processes = self._running.get(key)
        if processes is None:
            return  # stopped: the pod was deleted
        codes = {name: process.poll() for name, process in processes.items()}
        if any(code is None for code in codes.values()):
            asyncio.get_running_loop().call_later(POLL_SECONDS, self._poll, pod, on_exit)
            return
        del self._running[key]
        on_exit(pod, {name: _exit_code(code) for name, code in codes.items()})

    def stop(self, namespace: str, name: str) -> None:
        for process in (self._running.pop((namespace, name), None) or {}).values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _spawn(argv: list[str], environment: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    base = {k: os.environ[k] for k in INHERITED if k in os.environ}
    with log.open("ab") as output:
        try:
            return subprocess.Popen(
                argv,
                env={**base, **environment},
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=log.parent,
                start_new_session=True,
            )
        except OSError as err:
            raise ContainerStartError(f"starting {argv[0]!r}: {err.strerror}") from err


def _exit_code(code: int | None) -> int:
    """Exit status as Kubernetes reports it: 128 + signal for a killed process."""
    assert code is not None
    return 128 - code if code < 0 else code


def container_environment(container: Obj, device_env: dict[str, str]) -> dict[str, str]:
    """The container's literal ``env`` values, then the variables of its devices."""
    values = {
        item["name"]: str(item.get("value", ""))
        for item in container.get("env") or []
        if "valueFrom" not in item
    }
    return {**values, **device_env}
