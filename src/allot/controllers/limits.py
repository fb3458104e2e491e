"""``resources.limits`` of a container, applied to its process: cgroup v2, or an rlimit.

Where this machine has a writable cgroup v2 hierarchy with the ``memory`` and ``cpu``
controllers (allot running as root on a systemd or container host), each container runs in
its own cgroup under ``/sys/fs/cgroup/allot.<pid>.<n>/``: ``memory.max`` from
``limits.memory`` and ``cpu.max`` from ``limits.cpu`` (a quota per 100 ms period), as the
kubelet sets them; stopping a container kills its whole cgroup. Elsewhere (cgroup v1, no
permission) memory falls back to an address-space rlimit (``RLIMIT_AS``, which CUDA
programs exceed because they reserve large virtual ranges) and CPU limits are not
enforced; :attr:`ContainerLimits.description` says which, for ``allot up``'s banner.
Used by ``allot.controllers.runtimes``.
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
CPU_PERIOD_MICROS = 100_000
_instances = itertools.count(1)  # several platforms in one process (tests) each own a base


class ContainerLimits:
    """Applies containers' limits; one per process runtime."""

    def __init__(self, root: Path = CGROUP_ROOT) -> None:
        self.base: Path | None = _cgroup_base(root)

    @staticmethod
    def describe(root: Path = CGROUP_ROOT) -> str:
        """How limits will be applied here, without creating anything (for the banner)."""
        try:
            controllers = set((root / "cgroup.controllers").read_text().split())
        except OSError:
            controllers = set()
        if {"memory", "cpu"} <= controllers and os.access(root, os.W_OK):
            return "memory and cpu limits: cgroup v2"
        return (
            "memory limits: address-space rlimit; cpu limits: not enforced (no writable "
            "cgroup v2 with the memory and cpu controllers)"
        )

    def prepare(self, name: str, container: Obj) -> Callable[[], None] | None:
        """A function to run in the child before exec that puts it under the limits."""
        limits = (container.get("resources") or {}).get("limits") or {}
        memory = _bytes(limits.get("memory"))
        cpu = _millicores(limits.get("cpu"))
        if self.base is not None:
            group = self.base / name
            with contextlib.suppress(FileExistsError):
                group.mkdir()
            (group / "memory.max").write_text(str(memory) if memory else "max")
            quota = f"{cpu * CPU_PERIOD_MICROS // 1000} " if cpu else "max "
            (group / "cpu.max").write_text(f"{quota}{CPU_PERIOD_MICROS}")
            return _joiner(str(group / "cgroup.procs"))
        if memory is None:
            return None

        def limit_address_space() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

        return limit_address_space

    def kill(self, name: str) -> None:
        """Kill every process of the container's cgroup (background children too)."""
        if self.base is not None:
            with contextlib.suppress(OSError):
                (self.base / name / "cgroup.kill").write_text("1")

    def release(self, name: str) -> None:
        if self.base is not None:
            with contextlib.suppress(OSError):
                (self.base / name).rmdir()

    def close(self) -> None:
        """Kill what is left in the containers' groups and remove them."""
        if self.base is None:
            return
        with contextlib.suppress(OSError):
            for group in [p for p in self.base.iterdir() if p.is_dir()]:
                self.kill(group.name)
                self.release(group.name)
            self.base.rmdir()


def _joiner(procs: str) -> Callable[[], None]:
    def join_group() -> None:  # in the child, before exec
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))

    return join_group


def _cgroup_base(root: Path) -> Path | None:
    """``allot.<pid>`` under the cgroup v2 root with memory and cpu delegated, or None."""
    controllers = root / "cgroup.controllers"
    try:
        if not {"memory", "cpu"} <= set(controllers.read_text().split()):
            return None
        enabled = set((root / "cgroup.subtree_control").read_text().split())
        if not {"memory", "cpu"} <= enabled:
            (root / "cgroup.subtree_control").write_text("+memory +cpu")
        base = root / f"allot.{os.getpid()}.{next(_instances)}"
        base.mkdir(exist_ok=True)
        (base / "cgroup.subtree_control").write_text("+memory +cpu")
    except OSError:
        return None
    return base


def _bytes(value: Any) -> int | None:
    if value is None:
        return None
    return -(-Quantity.parse(str(value)).nanos // 10**9)  # whole bytes, rounded up


def _millicores(value: Any) -> int | None:
    if value is None:
        return None
    return max(1, -(-Quantity.parse(str(value)).nanos // 10**6))
