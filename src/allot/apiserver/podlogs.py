"""Pod logs as the kubelet serves them: which container states have a log, and the log's
bytes, whole, tailed (``tailLines``), cut after ``limitBytes``, followed (``follow=true``)
or of the run before a restart (``previous=true``).

The kubelet answers ``kubectl logs`` from the container's state (its
``validateContainerLogStatus``): a running container, a terminated one and one waiting to
be started again after an earlier run have a log (possibly empty); one waiting to start
for the first time has none (``container "c" in pod "p" is waiting to start: <reason>``),
nor has a terminated one without a container id (``... is terminated``). A followed log
is sent as it grows, in chunks of at most :data:`CHUNK_BYTES` (memory stays bounded
whatever the log's size), until the container's run ends (its state is no longer
``running`` with the same container id), the pod goes, or the server stops. Used by
:mod:`allot.apiserver.app` for the ``log`` subresource; the files are written by the node
agent's runtimes (``allot.controllers.runtimes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import BinaryIO

from allot.controllers.runtimes import previous_log
from allot.types import Obj

CHUNK_BYTES = 64 * 1024
FOLLOW_POLL_SECONDS = 0.2
# waiting reasons the kubelet words its own way
_WAITING_TEXTS = {
    "ErrImagePull": "image can't be pulled",
    "ImagePullBackOff": "trying and failing to pull image",
}


def container_status(pod: Obj, container: str) -> Obj | None:
    """The container's entry in the pod's status (regular or init container)."""
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for entry in status.get(key) or []:
            if entry.get("name") == container:
                return dict(entry)
    return None


def locate(
    directory: Path, container: str, status: Obj | None, pod_name: str, previous: bool
) -> tuple[Path, str | None]:
    """The container's log file under its pod's ``directory``, and why the kubelet would
    serve none (None: it serves that file, empty when it is not there). ``previous``:
    the run before, which exists once the container has terminated (``lastState``); while
    the container waits to restart, that run is the one in its log."""
    current = directory / f"{container}.log"
    subject = f'container "{container}" in pod "{pod_name}"'
    if previous:
        last = ((status or {}).get("lastState") or {}).get("terminated") or {}
        if not last.get("containerID"):
            return current, f"previous terminated {subject} not found"
        waiting = "waiting" in ((status or {}).get("state") or {})
        return (current if waiting else previous_log(current)), None
    if status is None:  # no status written yet: a log file means it started
        if current.exists():
            return current, None
        return current, f"{subject} is waiting to start: ContainerCreating"
    return current, refusal(status, container, pod_name)


def refusal(status: Obj, container: str, pod_name: str) -> str | None:
    """Why the kubelet serves no log for a container in this state (None: it does)."""
    state = status.get("state") or {}
    last = (status.get("lastState") or {}).get("terminated")
    subject = f'container "{container}" in pod "{pod_name}"'
    if "running" in state:
        return None
    if "terminated" in state:
        ids = (state["terminated"] or {}).get("containerID") or (last or {}).get("containerID")
        return None if ids else f"{subject} is terminated"
    if last is not None:
        return None if last.get("containerID") else f"{subject} is terminated"
    if "waiting" in state:
        reason = str((state["waiting"] or {}).get("reason") or "")
        return f"{subject} is waiting to start: {_WAITING_TEXTS.get(reason, reason)}"
    return f"{subject} is waiting to start - no logs yet"


def tail_offset(log: BinaryIO, lines: int | None) -> int:
    """Where the last ``lines`` lines of the open file start (0 for None: all of it),
    found by reading backwards a chunk at a time; a last line without its newline
    counts as a line."""
    end = log.seek(0, os.SEEK_END)
    if lines is None:
        return 0
    if lines == 0:
        return end
    position, seen = end, 0
    while position > 0:
        start = max(0, position - CHUNK_BYTES)
        log.seek(start)
        block = log.read(position - start)
        for index in range(len(block) - 1, -1, -1):
            if block[index] != ord("\n") or start + index == end - 1:
                continue
            seen += 1
            if seen == lines:
                return start + index + 1
        position = start
    return 0


def read(path: Path, lines: int | None, limit: int | None = None) -> bytes:
    """The log (its last ``lines`` lines, at most ``limit`` bytes of them, as the kubelet
    cuts a log at ``limitBytes``); empty when the file is not there."""
    try:
        with path.open("rb") as log:
            log.seek(tail_offset(log, lines))
            return log.read() if limit is None else log.read(limit)
    except FileNotFoundError:
        return b""


async def limited(stream: AsyncIterator[bytes], limit: int | None) -> AsyncIterator[bytes]:
    """``stream`` until ``limit`` bytes were sent (None: all of it): a followed log with
    ``limitBytes`` ends there, as the kubelet's does."""
    left = limit
    async for chunk in stream:
        if left is None:
            yield chunk
            continue
        yield chunk[:left]
        left -= min(left, len(chunk))
        if left == 0:
            return


async def follow(
    path: Path, lines: int | None, running: Callable[[], bool], stopping: asyncio.Event
) -> AsyncIterator[bytes]:
    """The log from its last ``lines`` lines on, then what is appended, while
    ``running()`` (asked whenever nothing new was read) says the container still runs and
    the server is not ``stopping``; what was written before the end is sent too."""
    log = await _open_when_there(path, running, stopping)
    if log is None:
        return
    with log:
        log.seek(tail_offset(log, lines))
        while True:
            chunk = log.read(CHUNK_BYTES)
            if chunk:
                yield chunk
                continue
            if stopping.is_set() or not running():
                break
            await _pause(stopping)
        while chunk := log.read(CHUNK_BYTES):  # written between the last read and the end
            yield chunk


async def _open_when_there(
    path: Path, running: Callable[[], bool], stopping: asyncio.Event
) -> BinaryIO | None:
    """The log file open for reading once it exists (None: the run ended without one)."""
    while True:
        try:
            return path.open("rb")
        except FileNotFoundError:
            if stopping.is_set() or not running():
                return None
            await _pause(stopping)


async def _pause(stopping: asyncio.Event) -> None:
    """Wait one poll, or less when the server stops."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), FOLLOW_POLL_SECONDS)
