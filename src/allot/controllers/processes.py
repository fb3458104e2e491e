"""Every process of a container, and ending them all before its devices are freed.

A container's processes are more than the one the runtime started: background children
keep running after their parent exits, and ``setsid`` takes a process out of the group
that ``killpg`` reaches. The process runtime (``allot.controllers.runtimes``) therefore
finds them two ways, from ``/proc``:

* the **tree** under the process it started (a sandbox's PID namespace keeps every orphan
  under bubblewrap's init, so inside a sandbox the tree is the whole container);
* the **marker**: ``ALLOT_CONTAINER=<runtime>/<pod uid>/<container>`` in the environment
  of the container's first process, inherited by everything it starts, ``setsid`` or not
  (the unsandboxed runtime, and ``hostPID`` pods, have no PID namespace to hold orphans).

:func:`end_processes` kills both sets and waits until none is left, so the node agent
frees a claim only when no process that could hold its devices is alive. A process that
clears its environment *and* leaves the tree escapes the unsandboxed runtime only (it has
no isolation at all, see the user guide); cgroup v2, where writable, kills the container's
cgroup as well (``allot.controllers.limits``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

MARKER = "ALLOT_CONTAINER"
PROC = Path("/proc")
POLL_SECONDS = 0.02
LOG = logging.getLogger("allot.controllers")
_runtimes = itertools.count(1)


def runtime_marker() -> str:
    """A prefix unique to one runtime of this process (tests run several platforms)."""
    return f"{os.getpid()}.{next(_runtimes)}"


def marked(prefix: str) -> list[int]:
    """Live processes whose ``ALLOT_CONTAINER`` value starts with ``prefix``."""
    needle = f"\0{MARKER}={prefix}".encode()
    found = []
    for entry in PROC.glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if needle in b"\0" + (entry / "environ").read_bytes() and not _zombie(entry):
                found.append(int(entry.name))
    return found


def _live_stats() -> Iterator[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every live process, from ``/proc/<pid>/stat``
    (zombies left out)."""
    for entry in PROC.glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                yield int(entry.name), int(fields[1]), int(fields[2])


def group_members(group: int) -> list[int]:
    """The live processes of a process group."""
    return [pid for pid, _, pgrp in _live_stats() if pgrp == group]


def tree(root: int) -> list[int]:
    """``root`` and its live descendants, from the parent pids in ``/proc/<pid>/stat``."""
    children: dict[int, list[int]] = {}
    live = set()
    for pid, parent, _ in _live_stats():
        children.setdefault(parent, []).append(pid)
        live.add(pid)
    if root not in live:
        return []
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        found.append(pid)
        frontier.extend(children.get(pid, []))
    return found


def kill_now(pids: Iterable[int]) -> None:
    """SIGKILL without waiting (a restarting container's leftovers)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def end_processes(
    members: Callable[[], Iterable[int]],
    reap: Callable[[], object],
    deadline: float | None = None,
) -> bool:
    """SIGKILL every process ``members`` lists until it lists none; ``reap`` collects the
    runtime's own children (so they do not linger as zombies). Waits past ``deadline``
    (a ``time.monotonic`` value) only while it is None; True when none is left."""
    warned = time.monotonic() + 10
    while True:
        reap()
        alive = set(members())
        if not alive:
            return True
        kill_now(alive)
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            LOG.error("processes %s did not end after SIGKILL", sorted(alive))
            return False
        if now >= warned:  # uninterruptible (a GPU driver call): the devices stay held
            LOG.warning("still waiting for processes %s to end", sorted(alive))
            warned = now + 10
        time.sleep(POLL_SECONDS)


def _zombie(entry: Path) -> bool:
    with contextlib.suppress(OSError, IndexError):
        return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    return True
