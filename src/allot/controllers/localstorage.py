"""A pod's local ephemeral storage against its limits, as the kubelet's eviction manager
checks it (``localStorageEviction`` in ``pkg/kubelet/eviction``).

On the process runtime a container's writable layer is its working directory (``/pod``),
its ``/tmp`` (a directory of its own beside it, not RAM) and its ``nvidia-smi`` shim, and
its logs are its log files; a pod's usage is all of these for all of its containers, in
bytes of disk used (blocks, each inode once, symbolic links not followed), as ``du``
measures. A pod whose usage exceeds the sum of its containers'
``limits.ephemeral-storage`` (``PodLimits``: init containers reuse what the app
containers get) is evicted with the kubelet's message, else a container whose own usage
exceeds its own limit. The process runtime (``allot.controllers.runtimes``) measures every
:data:`CHECK_SECONDS` (the kubelet every 10 s) off the loop and evicts; the node agent
reports it (``allot.controllers.nodeagent``). Pods without such a limit are not measured.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from allot.api.podresources import container_limits, pod_limits
from allot.api.quantity import Quantity
from allot.types import Obj

RESOURCE = "ephemeral-storage"
CHECK_SECONDS = 1.0
EVICTED = "Evicted"  # the kubelet's eviction reason (event and pod status)


@dataclass(frozen=True)
class StorageLimits:
    """A pod's ephemeral-storage limits: the pod's total (None: no container sets one)
    and each app container's own."""

    pod: Quantity | None
    containers: dict[str, Quantity]

    @classmethod
    def of(cls, pod: Obj) -> StorageLimits | None:
        """The pod's limits, or None when no container sets one (nothing to check)."""
        spec = pod.get("spec") or {}
        total = pod_limits(spec).get(RESOURCE)
        own = {
            c["name"]: limit
            for c in spec.get("containers") or []
            if (limit := container_limits(c).get(RESOURCE)) is not None and limit.sign() != 0
        }
        if total is None and not own:
            return None
        return cls(total, own)

    def violation(self, total: int, per_container: dict[str, int]) -> str | None:
        """The kubelet's eviction message for this usage in bytes, or None: the pod's
        total first (``podEphemeralStorageLimitEviction``), then each container's own
        (``containerEphemeralStorageLimitEviction``)."""
        if self.pod is not None and Quantity.from_int(total).compare(self.pod) > 0:
            return (
                "Pod ephemeral local storage usage exceeds the total limit of containers "
                f"{self.pod.canonical()}. "
            )
        for name, limit in self.containers.items():
            if Quantity.from_int(per_container.get(name, 0)).compare(limit) > 0:
                return (
                    f"Container {name} exceeded its local ephemeral storage limit "
                    f'"{limit.canonical()}". '
                )
        return None


def usage(work: Path, logs: Path, containers: list[str]) -> tuple[int, dict[str, int]]:
    """The bytes a pod uses under its working directory ``work`` and its logs directory
    ``logs``: in all, and per container (its directory, ``/tmp``, shim and log files)."""
    seen: set[tuple[int, int]] = set()
    per_container = {}
    for name in containers:
        paths = [work / name, work / f".{name}.tmp", work / f".{name}.bin"]
        paths += [logs / f"{name}.log", logs / f"{name}.previous.log"]
        per_container[name] = sum(disk_usage(p, seen) for p in paths)
    rest = disk_usage(work, seen) + disk_usage(logs, seen)  # what no container owns
    return sum(per_container.values()) + rest, per_container


def disk_usage(path: Path, seen: set[tuple[int, int]]) -> int:
    """Bytes of disk used by ``path`` and everything under it, inodes in ``seen``
    (counted already) left out and added; a vanished entry counts nothing."""
    total = 0
    stack = [str(path)]
    while stack:
        current = stack.pop()
        try:
            status = os.lstat(current)
        except OSError:
            continue
        inode = (status.st_dev, status.st_ino)
        if inode in seen:
            continue
        seen.add(inode)
        total += status.st_blocks * 512
        if os.path.isdir(current) and not os.path.islink(current):
            with contextlib.suppress(OSError):
                stack.extend(os.path.join(current, entry) for entry in os.listdir(current))
    return total
