"""One platform per data directory: the lock ``allot up`` holds while it serves.

A second ``allot up`` on the same directory would rewrite every kubeconfig to its own port
and leave the first platform unreachable, so ``serve`` takes an exclusive ``flock`` on
``<data-dir>/allot.lock`` before it writes anything, and records its pid and URL there once
the port is bound. The kernel drops the lock when the process dies, so a crash leaves no
stale lock behind. The CLI reads the same file (``running``) to tell "not running" from
"running at this address" without touching the network.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

LOCK_NAME = "allot.lock"


@dataclass(frozen=True)
class Holder:
    """The process serving a data directory, as written in its lock file."""

    pid: int
    url: str
    ready: bool = False  # serving, and (``allot up``) its fleet published


class DataDirLocked(Exception):
    """Another ``allot up`` serves this data directory."""

    def __init__(self, data_dir: Path, holder: Holder | None) -> None:
        where = f" at {holder.url} (pid {holder.pid})" if holder and holder.url else ""
        super().__init__(
            f"the platform in {data_dir} is already running{where}; stop it first "
            "or choose another --data-dir"
        )
        self.holder = holder


class DataDirUnwritable(Exception):
    """The data directory cannot be written: a read-only filesystem, no permission, or
    no space left."""

    REFUSALS = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC)

    def __init__(self, data_dir: Path, err: OSError) -> None:
        reason = err.strerror or str(err)
        super().__init__(
            f"the data directory {data_dir} is not writable ({reason}): allot keeps its "
            "store, tokens and logs there; choose a writable --data-dir (or $ALLOT_DATA_DIR)"
        )


class DataDirLock:
    """The exclusive lock of one data directory, held until ``release`` or process exit."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / LOCK_NAME
        self._fd: int | None = None
        self._created: list[Path] = []  # what ``acquire`` made, for ``abandon``

    def acquire(self) -> DataDirLock:
        """Take the lock or raise ``DataDirLocked``; creates the directory if needed.
        ``DataDirUnwritable`` when it cannot be written (the first write of a start)."""
        try:
            fd = self._open()
        except OSError as err:
            if err.errno in DataDirUnwritable.REFUSALS:
                raise DataDirUnwritable(self.data_dir, err) from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirLocked(self.data_dir, _read(self.path)) from None
        self._fd = fd
        try:
            self.record("")
        except OSError as err:  # opened, but a full or read-only disk refuses the write
            self.abandon()
            raise DataDirUnwritable(self.data_dir, err) from None
        return self

    def _open(self) -> int:
        if not self.data_dir.exists():
            self._created.append(self.data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            self._created.insert(0, self.path)
        return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)

    def record(self, url: str, *, ready: bool = False) -> None:
        """Write this process's pid, (once bound) URL and (once started) readiness into
        the held lock file."""
        if self._fd is None:
            raise RuntimeError("the data directory lock is not held")
        text = json.dumps({"pid": os.getpid(), "url": url, "ready": ready}).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, text, 0)

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def abandon(self) -> None:
        """Release and remove what ``acquire`` created: a start that failed writes nothing."""
        held = self._fd is not None
        created, self._created = self._created, []
        if held:
            for path in created:
                with contextlib.suppress(OSError):  # not empty, or already gone
                    if path.is_dir():
                        path.rmdir()
                    else:
                        path.unlink()
        self.release()


def running(data_dir: Path) -> Holder | None:
    """The process serving ``data_dir`` now, or ``None`` (no lock file, or nobody holds it)."""
    path = data_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read(path) or Holder(0, "")
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read(path: Path) -> Holder | None:
    try:
        data = json.loads(path.read_text() or "{}")
        return Holder(int(data["pid"]), str(data.get("url", "")), bool(data.get("ready")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
