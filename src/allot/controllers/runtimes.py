"""How the node agent runs a pod's containers: on a timer, or as real local processes.

``SimulatedRuntime`` runs nothing: containers "run" until the pod's
``allot.dev/simulated-runtime-seconds`` annotation says they exit; without it, a Job's pod
(label ``batch.kubernetes.io/job-name``) whose ``restartPolicy`` is ``Never`` or
``OnFailure`` exits after ``job_seconds`` (a batch job ends), every other pod runs until
stopped. They exit 0, or the code of ``allot.dev/simulated-exit-code``. Demos, benchmarks
and large fleets can so use any image. Each container still gets a log
(``kubectl logs`` works for every Running pod): a line saying it is simulated and what it
would run, then what ``nvidia-smi -L`` would print for exactly its devices.

``ProcessRuntime`` runs each container's ``command`` and ``args`` as a local process in its
own session and working directory, with a clean environment (``PATH``, ``HOME``, locale,
the container's ``env`` and ``envFrom`` values and its devices' ``CUDA_VISIBLE_DEVICES`` /
``NVIDIA_VISIBLE_DEVICES``), output in the log file ``kubectl logs`` reads (a restart
keeps the run before apart, for ``--previous``), and its ``resources.limits``
(``allot.controllers.limits``). With a :class:`Sandbox` (the default of ``allot up``)
each process runs confined by bubblewrap (``allot.controllers.sandbox``):
its own namespaces, no view of allot's data directory, exactly the device nodes of its
claimed GPUs, an unprivileged user. Without one (``--unsandboxed``) processes run as the
user running allot, with access to its files and network. Where the container's devices
are simulated, an ``nvidia-smi`` answering ``-L`` for them is put first on ``PATH``.
``restartPolicy`` is honoured with kubelet-like back-off (reported to the node agent as it
begins and as the container starts again); stopping a pod sends SIGTERM, then after the
deletion's grace period (:func:`grace_seconds`) SIGKILL to every process of it
(``allot.controllers.processes``: its tree and its environment marker), and reports it
stopped only once none is alive; ``holds`` says which pods may still have processes,
``forget`` removes a removed pod's logs and directories.

Both run a pod's init containers first, as the kubelet: one at a time in order, each to
exit 0 before the next (a failed one is started again with the same back-off, or fails
the pod under ``restartPolicy: Never``); a native sidecar (``restartPolicy: Always``) lets
the next one start as soon as it runs, keeps running beside the app containers (started
again whenever it exits) and is stopped after them, sidecars in reverse order. The
simulated runtime's init containers complete at once, with the same exit code.

Both report to the node agent (``allot.controllers.nodeagent``) through :class:`Reports`;
it owns pod status.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol

from allot.controllers import envsources, logtimes, processes
from allot.controllers.limits import ContainerLimits
from allot.controllers.localstorage import CHECK_SECONDS, StorageLimits, usage
from allot.controllers.sandbox import (
    TOOLS_DIR,
    WORKDIR,
    Confinement,
    ConfinementError,
    HostMount,
    Sandbox,
)
from allot.driver.devicenodes import DeviceNodes
from allot.driver.sharing import container_environment as sharing_environment
from allot.driver.smi import has_sharing, list_gpus, query, shim_script
from allot.types import Obj

ExitCallback = Callable[[Obj, dict[str, int]], None]
RestartCallback = Callable[[Obj, str, int], None]  # pod, container, restart count
# pod, container, restart count, exit code, seconds until the container is started again
BackOffCallback = Callable[[Obj, str, int, int, float], None]
ContainerCallback = Callable[[Obj, str], None]  # pod, container
# when to call what: seconds from now, the callback, its arguments (the loop's call_later)
Timer = Callable[..., object]
RUNTIME_ANNOTATION = "allot.dev/simulated-runtime-seconds"
EXIT_CODE_ANNOTATION = "allot.dev/simulated-exit-code"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
DEFAULT_JOB_SECONDS = 3.0  # how long a simulated Job pod runs (allot up --simulated-job-seconds)
POLL_SECONDS = 0.1
BACKOFF_START, BACKOFF_MAX = 1.0, 30.0  # kubelet: 10 s doubling to 5 min; shorter here
DEFAULT_GRACE_SECONDS = 30
EVICTION_GRACE_SECONDS = 1  # the kubelet's immediateEvictionGracePeriodSeconds
# Variables a process keeps from the agent's own environment; everything else comes from
# the pod, as in a container.
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


class ContainerStartError(Exception):
    """A container could not be started; the message says why, for the pod's status."""


@dataclass
class ContainerSetup:
    """What the node agent prepared for one container."""

    environment: dict[str, str] = field(default_factory=dict)
    devices: list[dict[str, str]] = field(default_factory=list)  # published attributes
    # (host path, container path): its MPS daemons' pipe and shared-memory directories
    mounts: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Reports:
    """Whom a pod's containers report to: the node agent's callbacks.

    ``on_back_off`` when a container exits and waits to be started again (its restart
    policy), ``on_restart`` when it is, ``on_exit`` once every app container has exited
    for good (and the sidecars are stopped), or an init container failed for good, with
    the exit codes of the containers that ran. For a pod with init containers:
    ``on_init_started`` as each starts the first time, ``on_init_completed`` as a regular
    one exits 0, ``on_initialized`` once all are done and the app containers started;
    ``on_cannot_run`` when a container could not be started after ``launch`` returned;
    ``on_evicted`` once the processes of a pod evicted for its local storage are gone,
    with the kubelet's message and every run's exit code."""

    on_exit: ExitCallback
    on_back_off: BackOffCallback
    on_restart: RestartCallback
    on_init_started: ContainerCallback
    on_init_completed: ContainerCallback
    on_initialized: Callable[[Obj], None]
    on_cannot_run: Callable[[Obj, str], None]
    on_evicted: Callable[[Obj, str, dict[str, int]], None]


class Runtime(Protocol):
    wants_devices: bool  # whether ``launch`` needs the containers' device setups

    def launch(self, pod: Obj, setups: dict[str, ContainerSetup], reports: Reports) -> None:
        """Start the pod's init containers, one at a time, then its containers, and
        tell ``reports`` how they fare."""

    def stop(self, pod: Obj, on_stopped: Callable[[], None]) -> None:
        """End the pod's processes; ``on_stopped`` runs on the loop once none is left."""

    def holds(self, pod_uid: str) -> bool:
        """Whether a process of the pod may still be alive (its devices are in use)."""

    def forget(self, pod: Obj) -> None:
        """Remove what the stopped, deleted pod left: its logs and working directories."""


class SimulatedRuntime:
    name = "simulated"

    def __init__(
        self,
        logs_dir: Path | None = None,
        job_seconds: float = DEFAULT_JOB_SECONDS,
        timer: Timer | None = None,
    ) -> None:
        self.logs_dir = logs_dir
        self.wants_devices = logs_dir is not None
        self.job_seconds = job_seconds
        self._timer = timer
        self._initializing: set[str] = set()  # uids of pods whose init containers run

    def _later(self, seconds: float, callback: Callable[..., object], *args: object) -> None:
        if self._timer is not None:
            self._timer(seconds, callback, *args)
        else:
            asyncio.get_running_loop().call_later(seconds, callback, *args)

    def launch(self, pod: Obj, setups: dict[str, ContainerSetup], reports: Reports) -> None:
        spec = pod["spec"]
        containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        if self.logs_dir is not None and containers:
            key = _key(pod)
            directory = self.logs_dir / key[0] / key[1]
            directory.mkdir(parents=True, exist_ok=True)  # once per pod, not per container
            for container in containers:
                log = directory / f"{container['name']}.log"
                setup = setups.get(container["name"]) or ContainerSetup()
                text = simulated_log(container, setup.devices, setup.environment).encode()
                log.write_bytes(text)
                logtimes.forget(log)
        if spec.get("initContainers"):
            self._initializing.add(_key(pod)[2])
            self._initialize(pod, reports, 0, 0)
        else:
            self._schedule_exit(pod, reports)

    def _schedule_exit(self, pod: Obj, reports: Reports) -> None:
        seconds = simulated_run_seconds(pod, self.job_seconds)
        if seconds is not None:
            code = simulated_exit_code(pod)
            codes = {c["name"]: code for c in pod["spec"].get("containers") or []}
            for spec in pod["spec"].get("initContainers") or []:
                if is_sidecar(spec):  # stopped after the app containers, exits 0
                    codes[spec["name"]] = 0
            self._later(seconds, reports.on_exit, pod, codes)

    def _initialize(self, pod: Obj, reports: Reports, position: int, restarts: int) -> None:
        """Run the init containers from ``position``, as the kubelet: each completes at
        once (exit 0, or ``allot.dev/simulated-exit-code``) before the next starts, a
        sidecar starts and keeps running; a failed one fails the pod (``Never``) or is
        started again after its back-off. Then the app containers start."""
        uid = _key(pod)[2]
        if uid not in self._initializing:
            return  # stopped meanwhile
        specs = pod["spec"]["initContainers"]
        code = simulated_exit_code(pod)
        while position < len(specs):
            name = specs[position]["name"]
            if restarts:
                reports.on_restart(pod, name, restarts)
            else:
                reports.on_init_started(pod, name)
            if is_sidecar(specs[position]) or code == 0:
                if not is_sidecar(specs[position]):
                    reports.on_init_completed(pod, name)
                position, restarts = position + 1, 0
                continue
            if pod["spec"].get("restartPolicy") == "Never":
                self._initializing.discard(uid)
                sidecars = {s["name"]: 0 for s in specs[:position] if is_sidecar(s)}
                reports.on_exit(pod, {**sidecars, name: code})
                return
            delay = back_off_delay(restarts)
            reports.on_back_off(pod, name, restarts, code, delay)
            self._later(delay, self._initialize, pod, reports, position, restarts + 1)
            return
        self._initializing.discard(uid)
        reports.on_initialized(pod)
        self._schedule_exit(pod, reports)

    def stop(self, pod: Obj, on_stopped: Callable[[], None]) -> None:
        self._initializing.discard(_key(pod)[2])
        self._later(0, on_stopped)

    def holds(self, pod_uid: str) -> bool:
        return False

    def forget(self, pod: Obj) -> None:
        if self.logs_dir is not None:
            _remove_pod_files(pod, [self.logs_dir])


def is_sidecar(container: Obj) -> bool:
    """A native sidecar: an init container with ``restartPolicy: Always`` (it starts in
    the init containers' order and keeps running beside the app containers)."""
    return container.get("restartPolicy") == "Always"


def back_off_delay(restarts: int) -> float:
    """How long a container that exited waits before its next start (after ``restarts``
    restarts): doubling from ``BACKOFF_START`` up to ``BACKOFF_MAX``."""
    return float(min(BACKOFF_MAX, BACKOFF_START * 2**restarts))


def simulated_exit_code(pod: Obj) -> int:
    """The code simulated containers exit with: ``allot.dev/simulated-exit-code``, else 0."""
    return int((pod["metadata"].get("annotations") or {}).get(EXIT_CODE_ANNOTATION) or 0)


def simulated_run_seconds(pod: Obj, job_seconds: float) -> float | None:
    """How long a simulated pod's containers run before they exit (None: until stopped):
    the annotation's seconds, else ``job_seconds`` for a Job's pod that is not restarted
    (``restartPolicy`` ``Never`` or ``OnFailure``)."""
    metadata = pod["metadata"]
    seconds = (metadata.get("annotations") or {}).get(RUNTIME_ANNOTATION)
    if seconds is not None:
        return float(seconds)
    is_job_pod = JOB_NAME_LABEL in (metadata.get("labels") or {})
    if is_job_pod and pod["spec"].get("restartPolicy") in ("Never", "OnFailure"):
        return job_seconds
    return None


def simulated_log(
    spec: Obj, devices: list[dict[str, str]], environment: dict[str, str] | None = None
) -> str:
    """What a simulated container's log holds: that it is simulated, its devices and, for
    shared devices, their sharing (``nvidia-smi -q``) and the variables the driver's
    sharing gives the container."""
    argv = list(spec.get("command") or []) + list(spec.get("args") or [])
    would_run = " ".join(argv) if argv else "the image's entrypoint"
    listing = list_gpus(devices) if devices else "No devices found.\n"
    shared = ""
    if has_sharing(devices):
        variables = sharing_environment(devices)
        shared = (
            f"[allot] their sharing, as nvidia-smi -q shows it:\n{query(devices)}"
            "[allot] its sharing variables:\n"
            + "".join(f"{k}={(environment or variables).get(k, v)}\n" for k, v in variables.items())
        )
    return (
        f"[allot] simulated container {spec['name']!r} (image {spec.get('image', '?')}): "
        f"no process runs; it would run: {would_run}\n"
        f"[allot] its devices, as nvidia-smi -L lists them:\n{listing}{shared}"
    )


APP, INIT, SIDECAR = "app", "init", "sidecar"  # a process-runtime container's role


@dataclass
class _Container:
    argv: list[str]  # what runs, sandbox included
    environment: dict[str, str]
    directory: Path
    log: Path
    group: tuple[str, str]  # its pod's and its own cgroup names under ContainerLimits
    marker: str  # its ALLOT_CONTAINER value (allot.controllers.processes)
    before_exec: Callable[[], None] | None
    process: subprocess.Popen[bytes]
    policy: str  # when it is started again: its pod's restartPolicy, or an init container's
    role: str = APP
    restarts: int = 0
    exit_code: int | None = None
    restart_at: float | None = None
    seen: int = 0  # how much of the log has a time (allot.controllers.logtimes)

    def stamp(self) -> None:
        """Record when the log's new output was seen: now, within a poll."""
        with contextlib.suppress(FileNotFoundError):
            size = self.log.stat().st_size
            if size > self.seen:
                logtimes.record(self.log, size, time.time_ns())
                self.seen = size

    def done(self) -> bool:
        """Exited, and not to be started again."""
        return self.exit_code is not None and self.restart_at is None


@dataclass
class _StorageWatch:
    """A pod with an ``ephemeral-storage`` limit: when its usage is measured next."""

    limits: StorageLimits
    due: float  # the loop's time
    measuring: bool = False


@dataclass
class _Initializing:
    """A pod whose init containers are not all done yet."""

    waiting: list[Obj]  # init containers not started yet, in order
    setups: dict[str, ContainerSetup]  # for them and the app containers
    current: str | None = None  # the regular init container that runs now


class ProcessRuntime:
    name = "process"
    wants_devices = True

    def __init__(
        self,
        logs_dir: Path,
        work_dir: Path,
        sandbox: Sandbox | None = None,
        tenant_namespace: Callable[[str], bool] = lambda namespace: False,
        device_nodes: DeviceNodes | None = None,
        limits: ContainerLimits | None = None,
    ) -> None:
        self.logs_dir = logs_dir
        self.work_dir = work_dir
        self.sandbox = sandbox
        self.tenant_namespace = tenant_namespace
        self.device_nodes = device_nodes or DeviceNodes()
        self.limits = limits or ContainerLimits()
        self.marker = processes.runtime_marker()
        self._running: dict[tuple[str, str, str], dict[str, _Container]] = {}
        self._initializing: dict[tuple[str, str, str], _Initializing] = {}
        # pods whose processes are being ended, with what to call once they are
        self._ending: dict[str, list[Callable[[], None]]] = {}
        # when the grace period of each pod being ended runs out (a later delete may
        # shorten it), read by the thread that ends it
        self._grace_until: dict[str, float] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._storage: dict[tuple[str, str, str], _StorageWatch] = {}
        self.storage_seconds = CHECK_SECONDS

    def launch(self, pod: Obj, setups: dict[str, ContainerSetup], reports: Reports) -> None:
        key = _key(pod)
        self._running[key] = {}
        init_containers = pod["spec"].get("initContainers")
        try:
            if init_containers:
                self._initializing[key] = _Initializing(list(init_containers), setups)
                self._advance(pod, reports)
            else:
                self._start_apps(pod, setups)
        except ContainerStartError:
            self._initializing.pop(key, None)
            self._kill(key)
            raise
        loop = asyncio.get_running_loop()
        limits = StorageLimits.of(pod)
        if limits is not None:
            self._storage[key] = _StorageWatch(limits, loop.time() + self.storage_seconds)
        loop.call_later(POLL_SECONDS, self._poll, pod, reports)

    def _start_apps(self, pod: Obj, setups: dict[str, ContainerSetup]) -> None:
        containers = self._running[_key(pod)]
        policy = pod["spec"].get("restartPolicy") or "Always"
        for spec in pod["spec"].get("containers") or []:
            containers[spec["name"]] = self._start(pod, spec, setups.get(spec["name"]), policy)

    def _advance(self, pod: Obj, reports: Reports) -> None:
        """Start init containers in order until a regular one runs (a sidecar, once
        started, lets the next begin); with none left, the app containers."""
        key = _key(pod)
        progress = self._initializing[key]
        containers = self._running[key]
        init_policy = "Never" if pod["spec"].get("restartPolicy") == "Never" else "OnFailure"
        while progress.current is None and progress.waiting:
            spec = progress.waiting.pop(0)
            name, sidecar = spec["name"], is_sidecar(spec)
            policy = "Always" if sidecar else init_policy
            container = self._start(pod, spec, progress.setups.get(name), policy)
            container.role = SIDECAR if sidecar else INIT
            containers[name] = container
            reports.on_init_started(pod, name)
            if not sidecar:
                progress.current = name
        if progress.current is None:
            del self._initializing[key]
            self._start_apps(pod, progress.setups)
            reports.on_initialized(pod)

    def _start(self, pod: Obj, spec: Obj, setup: ContainerSetup | None, policy: str) -> _Container:
        key = _key(pod)
        name = spec["name"]
        argv = list(spec.get("command") or []) + list(spec.get("args") or [])
        if not argv:
            raise ContainerStartError(
                f'container "{name}" has no command: the process runtime runs commands, not images'
            )
        setup = setup or ContainerSetup()
        group = (key[2] or key[1], name)
        before_exec = self.limits.prepare(*group, spec)  # first: it decides sandbox_nproc
        directory = self.work_dir / key[0] / key[1] / name
        confinement = self._confinement(pod, spec, setup, directory)
        environment = _clean_environment(setup.environment)
        if self.sandbox is None:  # no binds: the variables name the host's directories
            for source, target in setup.mounts:
                for name, value in environment.items():
                    if value == target:
                        environment[name] = source
        marker = f"{self.marker}/{key[2]}/{name}"
        environment[processes.MARKER] = marker
        if self.sandbox is not None:
            argv = self.sandbox.command(argv, confinement)
            environment.update(HOME=WORKDIR, TMPDIR="/tmp")
        else:
            environment["TMPDIR"] = str(confinement.tmp)
        tools = TOOLS_DIR if self.sandbox is not None else str(confinement.tools)
        if confinement.tools is not None:
            environment["PATH"] = f"{tools}{os.pathsep}{environment.get('PATH', os.defpath)}"
        log = self.logs_dir / key[0] / key[1] / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        process = _spawn(argv, environment, directory, log, before_exec)
        container = _Container(
            argv, environment, directory, log, group, marker, before_exec, process, policy
        )
        container.seen = log.stat().st_size  # an earlier run's output has its times
        return container

    def _confinement(
        self, pod: Obj, spec: Obj, setup: ContainerSetup, directory: Path
    ) -> Confinement:
        """What the container's sandbox holds: its directories (``/pod``, and ``/tmp``
        beside it, both its user's), device nodes, shim and process limit."""
        name = spec["name"]
        tmp = directory.parent / f".{name}.tmp"
        for made in (directory, tmp):
            made.mkdir(parents=True, exist_ok=True)
        tmp.chmod(0o1777)
        try:
            confinement = Confinement.of(pod, spec, directory, self.tenant_namespace(_key(pod)[0]))
        except ConfinementError as err:
            raise ContainerStartError(f'container "{name}": {err}') from None
        confinement.tmp = tmp
        confinement.nproc = self.limits.sandbox_nproc
        confinement.device_nodes = self.device_nodes.for_devices(setup.devices)
        confinement.gpu_buses = self.device_nodes.buses(setup.devices)
        confinement.device_mounts = [
            HostMount(source, target, False) for source, target in setup.mounts
        ]
        if setup.devices and not confinement.device_nodes:  # simulated: the shim answers
            confinement.tools = self._shim(directory.parent / f".{name}.bin", setup.devices)
        if self.sandbox is not None:
            user = self.sandbox.user_of(confinement)
            if user is not None:  # the working directory and /tmp belong to its user
                for owned in (directory, tmp):
                    os.chown(owned, *user)
        return confinement

    @staticmethod
    def _shim(tools: Path, devices: list[dict[str, str]]) -> Path:
        tools.mkdir(exist_ok=True)
        tools.chmod(0o755)  # read by the container's unprivileged user
        smi = tools / "nvidia-smi"
        smi.write_text(shim_script(devices))
        smi.chmod(0o755)
        return tools

    def _poll(self, pod: Obj, reports: Reports) -> None:
        key = _key(pod)
        containers = self._running.get(key)
        if containers is None:
            return  # stopped: the pod was deleted
        loop = asyncio.get_running_loop()
        for name, container in list(containers.items()):
            self._step(name, container, loop.time(), pod, reports)
        self._watch_storage(pod, reports, loop.time())
        if key in self._initializing:
            if not self._initialize(pod, reports):
                return
        elif all(c.done() for c in containers.values() if c.role == APP):
            self._finish_pod(pod, reports)
            return
        loop.call_later(POLL_SECONDS, self._poll, pod, reports)

    def _watch_storage(self, pod: Obj, reports: Reports, now: float) -> None:
        """Measure the pod's local storage when due, off the loop (a large tree takes a
        while), and evict it if it exceeds its limits."""
        watch = self._storage.get(_key(pod))
        if watch is None or watch.measuring or now < watch.due:
            return
        watch.measuring = True
        task = asyncio.get_running_loop().create_task(self._measure(pod, reports, watch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _measure(self, pod: Obj, reports: Reports, watch: _StorageWatch) -> None:
        key = _key(pod)
        spec = pod["spec"]
        names = [c["name"] for c in [*(spec.get("initContainers") or []), *spec["containers"]]]
        work, logs = self.work_dir / key[0] / key[1], self.logs_dir / key[0] / key[1]
        total, per_container = await asyncio.to_thread(usage, work, logs, names)
        watch.measuring = False
        watch.due = asyncio.get_running_loop().time() + self.storage_seconds
        message = watch.limits.violation(total, per_container)
        if message is not None and key in self._running and self._storage.get(key) is watch:
            self._evict(pod, reports, message)

    def _evict(self, pod: Obj, reports: Reports, message: str) -> None:
        """The kubelet's eviction of a pod over its local storage: its containers get
        SIGTERM and, after the eviction's 1 s grace period, SIGKILL (sidecars last), are
        not started again, their working directories and ``/tmp`` are removed (as the
        kubelet's container GC removes an evicted pod's containers; the logs stay until
        the pod goes), and the pod is reported evicted with every run's exit code."""
        key = _key(pod)
        containers = self._running.pop(key)
        self._initializing.pop(key, None)
        self._storage.pop(key, None)
        for container in containers.values():
            if container.role != SIDECAR and container.process.poll() is None:
                self._terminate(container)

        def evicted() -> None:
            codes = {name: _final_code(c) for name, c in containers.items()}
            reports.on_evicted(pod, message, codes)

        running, grace = list(containers.values()), EVICTION_GRACE_SECONDS
        remove = partial(self._remove_files, pod, [self.work_dir])
        self._end_in_thread(pod, running, grace, evicted, remove)

    def _initialize(self, pod: Obj, reports: Reports) -> bool:
        """The running init container's outcome: done with 0, the next ones start (or the
        app containers); failed for good (``Never``), the pod ends. False once it ended."""
        key = _key(pod)
        progress = self._initializing[key]
        current = self._running[key].get(progress.current or "")
        if current is None or not current.done():
            return True
        if current.exit_code != 0:
            del self._initializing[key]
            self._finish_pod(pod, reports)
            return False
        reports.on_init_completed(pod, str(progress.current))
        progress.current = None
        try:
            self._advance(pod, reports)
        except ContainerStartError as err:
            self._initializing.pop(key, None)
            self._kill(key)
            reports.on_cannot_run(pod, str(err))
            return False
        return True

    def _finish_pod(self, pod: Obj, reports: Reports) -> None:
        """The app containers are done (or an init container failed for good): the
        sidecars are stopped (reverse order, within the grace period), background
        children end, then the pod is reported finished with every run's exit code."""
        containers = self._running.pop(_key(pod))
        self._storage.pop(_key(pod), None)
        running = list(containers.values())
        sidecars = any(c.role == SIDECAR and c.exit_code is None for c in running)

        def finished() -> None:
            reports.on_exit(pod, {name: _final_code(c) for name, c in containers.items()})

        self._end_in_thread(pod, running, grace_seconds(pod) if sidecars else 0, finished)

    def _step(
        self, name: str, container: _Container, now: float, pod: Obj, reports: Reports
    ) -> None:
        container.stamp()
        if container.restart_at is not None:
            if now >= container.restart_at:
                container.restart_at = None
                container.exit_code = None
                container.restarts += 1
                with contextlib.suppress(FileNotFoundError):  # the run before is --previous
                    os.replace(container.log, previous_log(container.log))
                logtimes.move(container.log, previous_log(container.log))
                container.seen = 0
                container.process = _spawn(
                    container.argv,
                    container.environment,
                    container.directory,
                    container.log,
                    container.before_exec,
                )
                reports.on_restart(pod, name, container.restarts)
            return
        if container.exit_code is not None:
            return
        code = container.process.poll()
        if code is None:
            return
        container.stamp()  # what it wrote before it ended
        container.exit_code = _exit_code(code)
        processes.kill_now(self._members(container))  # its background children too
        policy = container.policy
        if policy == "Always" or (policy == "OnFailure" and container.exit_code != 0):
            delay = back_off_delay(container.restarts)
            container.restart_at = now + delay
            reports.on_back_off(pod, name, container.restarts, container.exit_code, delay)

    def holds(self, pod_uid: str) -> bool:
        return pod_uid in self._ending or any(key[2] == pod_uid for key in self._running)

    def forget(self, pod: Obj) -> None:
        self._remove_files(pod, [self.logs_dir, self.work_dir])

    def _remove_files(self, pod: Obj, roots: list[Path]) -> None:
        """The pod's files under ``roots``, unless a pod of its name runs again."""
        key = _key(pod)
        if not any(running[:2] == key[:2] for running in list(self._running)):
            _remove_pod_files(pod, roots)

    def stop(self, pod: Obj, on_stopped: Callable[[], None]) -> None:
        """SIGTERM to every container's processes, SIGKILL to all of them (tree and
        marker) after the grace period (the deletion's, see :func:`grace_seconds`; a
        later, shorter one shortens it); ``on_stopped`` once none is left."""
        key = _key(pod)
        containers = self._running.pop(key, None)
        self._storage.pop(key, None)
        grace = grace_seconds(pod)
        if key[2] in self._ending:  # already ending (finished, or stopped before)
            self._ending[key[2]].append(on_stopped)
            if key[2] in self._grace_until:
                until = time.monotonic() + grace
                self._grace_until[key[2]] = min(self._grace_until[key[2]], until)
            return
        if containers is None:
            asyncio.get_running_loop().call_soon(on_stopped)
            return
        self._initializing.pop(key, None)
        for container in containers.values():
            if container.role != SIDECAR and container.process.poll() is None:
                self._terminate(container)
        self._end_in_thread(pod, list(containers.values()), grace, on_stopped)

    def _end_in_thread(
        self,
        pod: Obj,
        containers: list[_Container],
        grace: float,
        then: Callable[[], None],
        cleanup: Callable[[], None] | None = None,
    ) -> None:
        """End ``containers`` off the loop (waiting ``grace`` seconds for them to exit
        first) and run ``cleanup`` there, then run ``then`` and whatever else waits for
        this pod, on the loop."""
        uid = _key(pod)[2]
        self._ending[uid] = [then]
        self._grace_until[uid] = time.monotonic() + grace

        async def end() -> None:
            await asyncio.to_thread(self._end, containers, lambda: self._grace_until.get(uid, 0.0))
            if cleanup is not None:
                await asyncio.to_thread(cleanup)
            self._grace_until.pop(uid, None)
            for callback in self._ending.pop(uid, []):
                callback()

        task = asyncio.get_running_loop().create_task(end(), name=f"end-pod-{uid}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _end(self, containers: list[_Container], grace_until: Callable[[], float]) -> None:
        """Wait for the containers until ``grace_until()`` (read again while waiting: it
        may come sooner), sidecars last: each gets SIGTERM once the others have exited, in
        the reverse of their order, as the kubelet stops them; then kill every process of
        theirs and wait until none is alive (however long an uninterruptible one takes)."""
        for container in containers:
            if container.role != SIDECAR:
                _wait_for(container.process, grace_until)
        for container in reversed(containers):
            if container.role == SIDECAR and container.process.poll() is None:
                self._terminate(container)
                _wait_for(container.process, grace_until)
        for container in containers:
            self.limits.kill(*container.group)
            processes.end_processes(partial(self._members, container), container.process.poll)
            with contextlib.suppress(subprocess.TimeoutExpired):  # reap it: killed (cgroup.kill)
                container.process.wait(timeout=5)  # leaders can be zombies not yet collected
            self.limits.release(*container.group)

    @staticmethod
    def _members(container: _Container) -> set[int]:
        """The container's live processes: its tree while its leader is not reaped (a
        reaped pid may be another process's already), and everything with its marker."""
        unreaped = container.process.returncode is None
        tree = processes.tree(container.process.pid) if unreaped else []
        return {*tree, *processes.marked(container.marker + "\0")}

    async def stop_all(self) -> None:
        """On shutdown: no process this runtime started outlives the platform, tracked or
        not (SIGTERM, then SIGKILL to everything carrying its marker after 2 s)."""
        containers = [c for running in self._running.values() for c in running.values()]
        self._running.clear()
        self._storage.clear()
        for container in containers:
            self._terminate(container)
        until = time.monotonic() + 2.0
        await asyncio.to_thread(self._end, containers, lambda: until)
        await asyncio.to_thread(
            processes.end_processes,
            lambda: processes.marked(self.marker + "/"),
            lambda: None,
            time.monotonic() + 10.0,
        )
        self.limits.close()

    def _kill(self, key: tuple[str, str, str]) -> None:
        self._storage.pop(key, None)
        containers = list((self._running.pop(key, None) or {}).values())
        self._end(containers, time.monotonic)

    def _terminate(self, container: _Container) -> None:
        """SIGTERM to the container's processes (inside its sandbox, where it has one)."""
        if self.sandbox is not None:
            self.sandbox.signal_contents(container.process.pid, signal.SIGTERM)
        else:
            _signal(container.process, signal.SIGTERM)


def _final_code(container: _Container) -> int:
    """The exit code of the container's last run (a stopped sidecar's included)."""
    if container.exit_code is not None:
        return container.exit_code
    code = container.process.poll()
    return 0 if code is None else _exit_code(code)


def previous_log(log: Path) -> Path:
    """Where a restarted container's run before the current one left its output
    (``kubectl logs --previous``): ``<container>.previous.log`` beside its log (a
    container's name has no dot, so no other container's log has this name)."""
    return log.with_name(f"{log.stem}.previous.log")


def grace_seconds(pod: Obj) -> int:
    """How long a deleted pod's processes get after SIGTERM, as the kubelet's
    ``calculateEffectiveGracePeriod``: the deletion's grace period
    (``metadata.deletionGracePeriodSeconds``: the delete's ``gracePeriodSeconds``, else
    the spec's), else ``terminationGracePeriodSeconds`` (a pod removed at once), else
    30 s; never less than 1 s."""
    for value in (
        pod["metadata"].get("deletionGracePeriodSeconds"),
        (pod.get("spec") or {}).get("terminationGracePeriodSeconds"),
    ):
        if value is not None:
            return max(1, int(value))
    return DEFAULT_GRACE_SECONDS


def _wait_for(process: subprocess.Popen[bytes], until: Callable[[], float]) -> None:
    """Wait for ``process`` to exit, at most until ``until()``, asked again every poll."""
    while (left := until() - time.monotonic()) > 0:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=min(left, POLL_SECONDS))
            return


def _key(pod: Obj) -> tuple[str, str, str]:
    """Namespace, name and uid: a pod re-created under the same name is another pod."""
    metadata = pod["metadata"]
    return (metadata.get("namespace", ""), metadata["name"], metadata.get("uid", ""))


def _remove_pod_files(pod: Obj, roots: list[Path]) -> None:
    """``<root>/<namespace>/<name>`` under each root (a pod's logs, its directories), and
    the namespace's directory once it is empty."""
    namespace, name, _ = _key(pod)
    for root in roots:
        shutil.rmtree(root / namespace / name, ignore_errors=True)
        with contextlib.suppress(OSError):  # other pods of the namespace still there
            (root / namespace).rmdir()


def _clean_environment(values: dict[str, str]) -> dict[str, str]:
    base = {k: os.environ[k] for k in INHERITED if k in os.environ}
    return {**base, **values}


def _spawn(
    argv: list[str],
    environment: dict[str, str],
    directory: Path,
    log: Path,
    before_exec: Callable[[], None] | None,
) -> subprocess.Popen[bytes]:
    with log.open("ab") as output:
        try:
            return subprocess.Popen(
                argv,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=directory,
                start_new_session=True,
                preexec_fn=before_exec,
            )
        except OSError as err:
            raise ContainerStartError(f"starting {argv[0]!r}: {err.strerror}") from err


def _signal(process: subprocess.Popen[bytes], number: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, number)


def _exit_code(code: int) -> int:
    """Exit status as Kubernetes reports it: 128 + signal for a killed process."""
    return 128 - code if code < 0 else code


def container_environment(
    container: Obj,
    pod: Obj,
    device_env: dict[str, str],
    lookup: envsources.SourceLookup | None = None,
) -> dict[str, str]:
    """The container's environment as the kubelet makes it: ``envFrom``'s ConfigMaps and
    Secrets, then ``env``: literal values, the downward API's ``fieldRef`` values read from
    the pod and ``configMapKeyRef``/``secretKeyRef`` values found through ``lookup``
    (:mod:`allot.controllers.envsources`; a missing one raises
    :class:`~allot.controllers.envsources.ContainerConfigError`); then the variables of
    its devices. Without a ``lookup`` (nothing to look them up in) and for
    ``resourceFieldRef`` the variables are left unset."""
    values = envsources.from_objects(container, lookup) if lookup is not None else {}
    namespace = str(pod["metadata"].get("namespace") or "")
    for item in container.get("env") or []:
        source = item.get("valueFrom")
        if source is None:
            values[item["name"]] = str(item.get("value", ""))
            continue
        field_path = (source.get("fieldRef") or {}).get("fieldPath")
        if field_path:
            value = pod_field(pod, field_path)
        else:
            value = envsources.key_value(source, namespace, lookup) if lookup else None
        if value is not None:
            values[item["name"]] = value
    return {**values, **device_env}


_DOWNWARD_FIELDS = {
    "metadata.name": ("metadata", "name"),
    "metadata.namespace": ("metadata", "namespace"),
    "metadata.uid": ("metadata", "uid"),
    "spec.nodeName": ("spec", "nodeName"),
    "spec.serviceAccountName": ("spec", "serviceAccountName"),
    "status.podIP": ("status", "podIP"),
    "status.hostIP": ("status", "hostIP"),
}


def pod_field(pod: Obj, path: str) -> str | None:
    """A downward-API ``fieldRef`` value of a pod: the fields above, and one label or
    annotation (``metadata.labels['k']``, ``metadata.annotations['k']``)."""
    for prefix in ("metadata.labels", "metadata.annotations"):
        if path.startswith(f"{prefix}['") and path.endswith("']"):
            key = path[len(prefix) + 2 : -2]
            found = pod["metadata"].get(prefix.split(".")[1]) or {}
            return str(found[key]) if key in found else None
    section, name = _DOWNWARD_FIELDS.get(path, ("", ""))
    value = (pod.get(section) or {}).get(name) if section else None
    return None if value is None else str(value)
