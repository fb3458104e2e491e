"""``resources.limits`` of a container and the node's per-pod process limit, applied to
its processes: cgroups where this machine lets allot write them, else rlimits.

Where this machine has a writable cgroup v2 hierarchy with the ``memory`` and ``cpu``
controllers (allot running as root on a systemd or container host), each pod gets a group
under ``/sys/fs/cgroup/allot.<pid>.<n>/<pod uid>/`` and each of its containers one below
it: ``memory.max`` from ``limits.memory`` and ``cpu.max`` from ``limits.cpu`` (a quota per
100 ms period), as the kubelet sets them; stopping a container kills its whole cgroup.
Elsewhere (cgroup v1, no permission) memory falls back to an address-space rlimit
(``RLIMIT_AS``, which CUDA programs exceed because they reserve large virtual ranges) and
CPU limits are not enforced.

The pod's processes (the kubelet's ``podPidsLimit``, ``allot up --pod-pids-limit``) are
bounded by ``pids.max`` on the pod's cgroup v2 group where the ``pids`` controller is
there too, else on a group of the cgroup v1 ``pids`` hierarchy where that is writable
(root on a cgroup v1 or hybrid host), counting every process of the pod's containers.
With neither, :attr:`ContainerLimits.sandbox_nproc` asks the sandbox to set
``RLIMIT_NPROC`` inside itself (``allot.controllers.sandbox``): the kernel counts it per
user namespace, so without root each container (its own user namespace) is bounded, and
as root per user id (pods of one ``runAsUser``, ``nobody`` by default, share it); the
unsandboxed runtime then has no process limit. :meth:`ContainerLimits.describe` says which
holds, for ``allot up``'s banner. Used by ``allot.controllers.runtimes``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
from collections.abc import Callable
from pathlib import Path
from typing import Any

from allot.api.quantity import Quantity
from allot.types import Obj

CGROUP_ROOT = Path("/sys/fs/cgroup")
MOUNTINFO = Path("/proc/self/mountinfo")
CPU_PERIOD_MICROS = 100_000
DEFAULT_POD_PIDS = 1024  # the kubelet's default is unlimited (-1); a tenant is no owner
_instances = itertools.count(1)  # several platforms in one process (tests) each own a base


class ContainerLimits:
    """Applies containers' limits and the per-pod process limit; one per process runtime.
    ``pod_pids`` of 0 or less is no process limit."""

    def __init__(
        self,
        root: Path = CGROUP_ROOT,
        pod_pids: int = DEFAULT_POD_PIDS,
        mountinfo: Path = MOUNTINFO,
    ) -> None:
        self.pod_pids = pod_pids if pod_pids > 0 else None
        self.base: Path | None = _cgroup_base(root)
        self.v2_pids = self.base is not None and "pids" in _enabled(self.base)
        # the cgroup v1 pids hierarchy, where this runtime's group is made at first use
        self.pids_mount: Path | None = None
        if self.pod_pids is not None and not self.v2_pids:
            self.pids_mount = _pids_v1_mount(mountinfo, writable=True)
        self._pids_base: Path | None = None

    @property
    def sandbox_nproc(self) -> int | None:
        """The process limit the sandbox must set itself: no cgroup holds it here."""
        if self.v2_pids or self.pids_mount is not None:
            return None
        return self.pod_pids

    @staticmethod
    def describe(
        root: Path = CGROUP_ROOT,
        pod_pids: int = DEFAULT_POD_PIDS,
        mountinfo: Path = MOUNTINFO,
        sandboxed: bool = True,
    ) -> str:
        """How limits will be applied here, without creating anything (for the banner)."""
        controllers = _controllers(root)
        v2 = {"memory", "cpu"} <= controllers and os.access(root, os.W_OK)
        limits = (
            "memory and cpu limits: cgroup v2"
            if v2
            else "memory limits: address-space rlimit; cpu limits: not enforced (no writable "
            "cgroup v2 with the memory and cpu controllers)"
        )
        if pod_pids <= 0:
            return f"{limits}; pod process limit: none"
        if v2 and "pids" in controllers:
            how = "cgroup v2 pids.max"
        elif _pids_v1_mount(mountinfo, writable=True) is not None:
            how = "cgroup v1 pids.max"
        elif sandboxed:
            how = "RLIMIT_NPROC in each sandbox (per container; per user id when allot is root)"
        else:
            how = "not enforced (unsandboxed, no writable pids cgroup)"
        return f"{limits}; pod process limit {pod_pids}: {how}"

    def prepare(self, pod: str, name: str, container: Obj) -> Callable[[], None] | None:
        """A function to run in the child before exec that puts it under the limits of
        its container and of its pod (``pod``: the pod's uid)."""
        limits = (container.get("resources") or {}).get("limits") or {}
        memory = _bytes(limits.get("memory"))
        steps: list[Callable[[], None]] = []
        if self.base is not None:
            steps.append(_joiner(self._container_group(pod, name, memory, limits)))
        elif memory is not None:
            steps.append(lambda: resource.setrlimit(resource.RLIMIT_AS, (memory, memory)))
        if self.pids_mount is not None and (group := self._pids_v1_group(pod)) is not None:
            steps.append(_joiner(group))
        if not steps:
            return None

        def before_exec() -> None:  # in the child
            for step in steps:
                step()

        return before_exec

    def _container_group(self, pod: str, name: str, memory: int | None, limits: Obj) -> Path:
        assert self.base is not None
        group = self.base / pod
        if not group.is_dir():
            with contextlib.suppress(FileExistsError):
                group.mkdir()
            (group / "cgroup.subtree_control").write_text("+memory +cpu")
            if self.v2_pids:
                (group / "pids.max").write_text(str(self.pod_pids or "max"))
        group = group / name
        with contextlib.suppress(FileExistsError):
            group.mkdir()
        (group / "memory.max").write_text(str(memory) if memory else "max")
        cpu = _millicores(limits.get("cpu"))
        quota = f"{cpu * CPU_PERIOD_MICROS // 1000} " if cpu else "max "
        (group / "cpu.max").write_text(f"{quota}{CPU_PERIOD_MICROS}")
        return group

    def _pids_v1_group(self, pod: str) -> Path | None:
        """The pod's group in the cgroup v1 pids hierarchy; None (and the sandbox's rlimit
        from now on) where it cannot be made after all."""
        assert self.pids_mount is not None
        try:
            if self._pids_base is None:
                base = self.pids_mount / f"allot.{os.getpid()}.{next(_instances)}"
                base.mkdir(exist_ok=True)
                self._pids_base = base
            group = self._pids_base / pod
            if not group.is_dir():
                with contextlib.suppress(FileExistsError):
                    group.mkdir()
                (group / "pids.max").write_text(str(self.pod_pids))
        except OSError:
            self.pids_mount = None
            return None
        return group

    def kill(self, pod: str, name: str) -> None:
        """Kill every process of the container's cgroup (background children too)."""
        if self.base is not None:
            with contextlib.suppress(OSError):
                (self.base / pod / name / "cgroup.kill").write_text("1")

    def release(self, pod: str, name: str) -> None:
        """Remove the container's group, and its pod's once no container is left in it."""
        for group in (
            *((self.base / pod / name, self.base / pod) if self.base else ()),
            *((self._pids_base / pod,) if self._pids_base else ()),
        ):
            with contextlib.suppress(OSError):  # busy: another container of the pod
                group.rmdir()

    def close(self) -> None:
        """Kill what is left in the containers' groups and remove them."""
        for base in (self.base, self._pids_base):
            if base is None or not base.is_dir():
                continue
            for pod in _children(base):
                for group in _children(pod):
                    self.kill(pod.name, group.name)
                    self.release(pod.name, group.name)
                with contextlib.suppress(OSError):
                    pod.rmdir()
            with contextlib.suppress(OSError):
                base.rmdir()


def _children(group: Path) -> list[Path]:
    try:
        return [p for p in group.iterdir() if p.is_dir()]
    except OSError:
        return []


def _joiner(group: Path) -> Callable[[], None]:
    procs = str(group / "cgroup.procs")

    def join_group() -> None:  # in the child, before exec
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))

    return join_group


def _controllers(root: Path) -> set[str]:
    try:
        return set((root / "cgroup.controllers").read_text().split())
    except OSError:
        return set()


def _enabled(group: Path) -> set[str]:
    """The controllers enabled for a group's children (read back without the ``+``)."""
    try:
        return {c.lstrip("+") for c in (group / "cgroup.subtree_control").read_text().split()}
    except OSError:
        return set()


def _cgroup_base(root: Path) -> Path | None:
    """``allot.<pid>.<n>`` under the cgroup v2 root with memory and cpu (and pids, where
    the root has it) delegated, or None."""
    controllers = _controllers(root)
    if not {"memory", "cpu"} <= controllers:
        return None
    wanted = ["memory", "cpu", *(["pids"] if "pids" in controllers else [])]
    enable = " ".join(f"+{c}" for c in wanted)
    try:
        if not set(wanted) <= _enabled(root):
            (root / "cgroup.subtree_control").write_text(enable)
        base = root / f"allot.{os.getpid()}.{next(_instances)}"
        base.mkdir(exist_ok=True)
        (base / "cgroup.subtree_control").write_text(enable)
    except OSError:
        return None
    return base


def _pids_v1_mount(mountinfo: Path, writable: bool) -> Path | None:
    """Where the cgroup v1 ``pids`` hierarchy is mounted, from ``/proc/self/mountinfo``
    (``writable``: only if allot may make groups in it)."""
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        mount, _, rest = line.partition(" - ")
        fields, described = mount.split(), rest.split()
        options = described[2].split(",") if len(described) > 2 else []
        if len(fields) > 4 and described[:1] == ["cgroup"] and "pids" in options:
            found = Path(fields[4])
            return found if not writable or os.access(found, os.W_OK) else None
    return None


def _bytes(value: Any) -> int | None:
    if value is None:
        return None
    return -(-Quantity.parse(str(value)).nanos // 10**9)  # whole bytes, rounded up


def _millicores(value: Any) -> int | None:
    if value is None:
        return None
    return max(1, -(-Quantity.parse(str(value)).nanos // 10**6))
