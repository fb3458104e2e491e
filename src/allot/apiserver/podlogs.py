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
import datetime as dt
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from allot.api.kinds import KindInfo
from allot.controllers import logtimes
from allot.controllers.runtimes import previous_log
from allot.registry.bodies import is_integer
from allot.registry.errors import BadRequest
from allot.statuses import InvalidObjectError
from allot.types import Obj
from allot.validation.field import FieldError, forbidden, invalid
from allot.validation.field import Path as FieldPath

LOG_OPTIONS = KindInfo("", "v1", "PodLogOptions", "", True, "subdomain", "allot.api.base:ApiModel")
"""What an invalid log request names (``PodLogOptions "p" is invalid: ...``)."""
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


@dataclass(frozen=True)
class Times:
    """What ``kubectl logs`` asks of the lines' times: only lines seen at or after
    ``since`` (unix nanoseconds; None: all), each prefixed with its time
    (``timestamps``)."""

    since: int | None = None
    timestamps: bool = False

    @property
    def needed(self) -> bool:
        return self.since is not None or self.timestamps


def requested_times(query: Mapping[str, str], pod: str, now: int) -> Times:
    """The times a log request asks for (``sinceSeconds``, ``sinceTime``,
    ``timestamps``; ``now``: unix nanoseconds), once its options are checked as the API
    server's ``ValidatePodLogOptions`` checks them: 422 naming every wrong option."""
    seconds, moment = query.get("sinceSeconds"), query.get("sinceTime")
    if seconds is not None and not is_integer(seconds):
        raise BadRequest(f'sinceSeconds: Invalid value: "{seconds}": must be an integer')
    errors = _option_errors(query)
    if errors:
        raise InvalidObjectError(LOG_OPTIONS, pod, errors)
    since = None if seconds is None else now - int(seconds) * 1_000_000_000
    if moment is not None:
        since = _since_time(moment)
    return Times(since, query.get("timestamps", "").lower() in ("true", "1"))


def _option_errors(query: Mapping[str, str]) -> list[FieldError]:
    """What ``ValidatePodLogOptions`` finds wrong, in its order (integers already parse)."""
    errors = []
    tail, limit = query.get("tailLines"), query.get("limitBytes")
    if tail is not None and int(tail) < 0:
        errors.append(
            invalid(FieldPath("tailLines"), int(tail), "must be greater than or equal to 0")
        )
    if limit is not None and int(limit) < 1:
        errors.append(invalid(FieldPath("limitBytes"), int(limit), "must be greater than 0"))
    seconds = query.get("sinceSeconds")
    if seconds is not None and query.get("sinceTime") is not None:
        only_one = "at most one of `sinceTime` or `sinceSeconds` may be specified"
        errors.append(forbidden(FieldPath(""), only_one))
    elif seconds is not None and int(seconds) < 1:
        errors.append(invalid(FieldPath("sinceSeconds"), int(seconds), "must be greater than 0"))
    return errors


def _since_time(text: str) -> int:
    """``sinceTime``: an RFC 3339 time, as unix nanoseconds."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f'sinceTime: Invalid value: "{text}": must be an RFC 3339 time') from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def read(path: Path, lines: int | None, limit: int | None = None, times: Times = Times()) -> bytes:
    """The log (its last ``lines`` lines, those seen since ``times.since``, with their
    times where asked, at most ``limit`` bytes of them, as the kubelet cuts a log at
    ``limitBytes``); empty when the file is not there."""
    try:
        with path.open("rb") as log:
            start = tail_offset(log, lines)
            log.seek(start)
            if not times.needed:
                return log.read() if limit is None else log.read(limit)
            data = log.read()
            written = os.fstat(log.fileno()).st_mtime_ns
    except FileNotFoundError:
        return b""
    lines_with_times = _timed_lines(data, start, logtimes.load(path), lambda: written)
    chosen = _chosen(lines_with_times, times)
    return chosen if limit is None else chosen[:limit]


def _timed_lines(
    data: bytes, start: int, records: logtimes.Records, unseen: Callable[[], int]
) -> Iterator[tuple[bytes, int]]:
    """Each line of ``data`` (read from offset ``start``) with when it was seen: when
    its last byte was, ``unseen()`` for bytes after the last record."""
    position = 0
    while position < len(data):
        end = data.find(b"\n", position)
        end = len(data) if end < 0 else end + 1
        moment = logtimes.seen_at(records, start + end - 1)
        yield data[position:end], unseen() if moment is None else moment
        position = end


def _chosen(lines: Iterable[tuple[bytes, int]], times: Times) -> bytes:
    """The lines seen since ``times.since``, each after its time where asked (the
    kubelet's RFC 3339 with nine fixed digits of fraction, and a space)."""
    kept = []
    for line, moment in lines:
        if times.since is not None and moment < times.since:
            continue
        kept.append(_stamp(moment) + line if times.timestamps else line)
    return b"".join(kept)


def _stamp(nanos: int) -> bytes:
    seconds, fraction = divmod(nanos, 1_000_000_000)
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{fraction:09d}Z ".encode()


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
    path: Path,
    lines: int | None,
    running: Callable[[], bool],
    stopping: asyncio.Event,
    times: Times = Times(),
) -> AsyncIterator[bytes]:
    """The log from its last ``lines`` lines on, then what is appended, while
    ``running()`` (asked whenever nothing new was read) says the container still runs and
    the server is not ``stopping``; what was written before the end is sent too. With
    ``times``, whole lines are sent as they are complete (a last line without its newline
    once the run ends), chosen and stamped as :func:`read` does: a line seen after the
    newest record gets the time it is read at."""
    stream = _follow_bytes(path, lines, running, stopping)
    if not times.needed:
        async for _, chunk in stream:
            yield chunk
        return
    start, pending, records = 0, b"", logtimes.Reader(path)
    async for offset, chunk in stream:
        if not pending:
            start = offset
        pending += chunk
        cut = pending.rfind(b"\n") + 1
        if not cut:
            continue
        sent = _chosen(_lines_now(records, pending[:cut], start), times)
        start, pending = start + cut, pending[cut:]
        if sent:
            yield sent
    if pending and (sent := _chosen(_lines_now(records, pending, start), times)):
        yield sent


def _lines_now(records: logtimes.Reader, data: bytes, start: int) -> Iterator[tuple[bytes, int]]:
    """Followed lines with their times: bytes not recorded yet were written at the log's
    modification time (now, if it is gone)."""
    modified = _modified(records.log)
    return _timed_lines(data, start, records.records(), lambda: modified)


def _modified(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return time.time_ns()


async def _follow_bytes(
    path: Path, lines: int | None, running: Callable[[], bool], stopping: asyncio.Event
) -> AsyncIterator[tuple[int, bytes]]:
    """The followed log's bytes as they are read, each chunk with its offset."""
    log = await _open_when_there(path, running, stopping)
    if log is None:
        return
    with log:
        log.seek(tail_offset(log, lines))
        while True:
            offset = log.tell()
            chunk = log.read(CHUNK_BYTES)
            if chunk:
                yield offset, chunk
                continue
            if stopping.is_set() or not running():
                break
            await _pause(stopping)
        while chunk := log.read(CHUNK_BYTES):  # written between the last read and the end
            yield log.tell() - len(chunk), chunk


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
