"""When the bytes of a container's log were written, kept beside the log.

The kubelet's CRI log stores a time with every line, which ``kubectl logs --timestamps``,
``--since`` and ``--since-time`` read. allot's runtimes write a container's output as it
is (the process runtime hands the process the log file itself), so the times live in a
sidecar, ``<container>.times`` beside ``<container>.log``: one record per stretch of
bytes, ``<end offset> <unix nanoseconds>``, saying that the bytes up to that offset not
covered by an earlier record were seen at that time. Bytes no record covers were written at
the log's modification time: the simulated runtime writes its log once and keeps no
sidecar (a file less per container on the scheduler's hot path); the process runtime
records what its poll (every 0.1 s) finds the log has grown by, so a line's time is when
the node agent first saw it, within a poll.
The runtimes (:mod:`allot.controllers.runtimes`) write records; the API server's log
reader (``allot.apiserver.podlogs``) reads them.
"""

from __future__ import annotations

import bisect
import contextlib
import os
from pathlib import Path

Records = list[tuple[int, int]]


def times_path(log: Path) -> Path:
    """The sidecar of ``log``: ``c.log`` -> ``c.times``, ``c.previous.log`` ->
    ``c.previous.times``."""
    return log.with_suffix(".times")


def record(log: Path, end: int, nanos: int) -> None:
    """The bytes of ``log`` before ``end`` not yet recorded were seen at ``nanos``."""
    with times_path(log).open("a") as times:
        times.write(f"{end} {nanos}\n")


def forget(log: Path) -> None:
    """The log was written anew at once: no record, its modification time dates it (a
    sidecar of an earlier run is removed)."""
    with contextlib.suppress(FileNotFoundError):
        times_path(log).unlink()


def move(log: Path, to: Path) -> None:
    """The log's records follow it to its new name (a restarted container's run before);
    gone already is fine."""
    with contextlib.suppress(FileNotFoundError):
        os.replace(times_path(log), times_path(to))


def load(log: Path) -> Records:
    """The log's records in the order of their offsets (none: no sidecar)."""
    return Reader(log).records()


class Reader:
    """A log's records, read again only from where the last reading stopped (a followed
    log asks for them as it grows); a record that is not two integers, or a partly
    written last one, ends a reading."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.path = times_path(log)
        self.known: Records = []
        self.position = 0

    def records(self) -> Records:
        try:
            with self.path.open("rb") as times:
                times.seek(self.position)
                text = times.read()
        except FileNotFoundError:
            return self.known
        for line in text.split(b"\n")[:-1]:  # the part after the last newline is unfinished
            parts = line.split()
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                break
            self.position += len(line) + 1
            end, nanos = int(parts[0]), int(parts[1])
            if not self.known or end > self.known[-1][0]:
                self.known.append((end, nanos))
        return self.known


def seen_at(records: Records, offset: int) -> int | None:
    """When the byte at ``offset`` was seen (None: after the last record)."""
    index = bisect.bisect_right(records, offset, key=lambda r: r[0])
    return records[index][1] if index < len(records) else None
