"""The admission audit: what ``validationActions: [Audit]`` records, per cluster, bounded.

Every cluster's policies may audit (a tenant's too), and a record carries the policy's
message, which a tenant writes: three writes under one tenant policy put 2.6 MiB into the
one shared file, and enough of them pushed every other cluster's records out of it. So each
cluster's records go to its own file, ``<data-dir>/audit/admission/<cluster>.jsonl`` (one
JSON line each, append-only), and per cluster, as upstream's audit backends bound theirs
(``--audit-log-truncate-max-event-size``, ``--audit-webhook-batch-throttle-qps`` and
``-burst``):

- a record's text fields are cut at :data:`FIELD_CHARACTERS`, marked ``... [N characters
  cut]``;
- at most :data:`RATE` records a second, :data:`BURST` at once; the records over it are
  dropped, and the next record kept says how many (``droppedBefore``);
- past its cap the file becomes ``<cluster>.jsonl.1`` (replacing the one before), so a
  cluster keeps at most twice its cap: a tenant's is a 64th of its storage quota (``bound``,
  from the tenant controller), any other cluster's :data:`DEFAULT_CAP_BYTES`.

What a cluster's files hold counts against its tenant's storage quota (``size``). Owned by
:class:`allot.registry.clusters.Registry`: its policy plugin records, removing a cluster
forgets its files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from allot.types import Clock

FIELD_CHARACTERS = 1024
RATE, BURST = 10.0, 100
DEFAULT_CAP_BYTES = 4 * 2**20


@dataclass
class _Bucket:
    """One cluster's allowance of records (a token bucket) and what it dropped."""

    tokens: float
    since: dt.datetime
    dropped: int = 0


class AdmissionAudit:
    """The per-cluster admission audit files under ``directory``."""

    def __init__(self, directory: Path, clock: Clock) -> None:
        self.directory = directory
        self.clock = clock
        self._caps: dict[str, int] = {}
        self._sizes: dict[str, int] = {}
        self._buckets: dict[str, _Bucket] = {}

    def path(self, cluster: str) -> Path:
        return self.directory / f"{cluster}.jsonl"

    def bound(self, cluster: str, cap: int | None) -> None:
        """The most bytes of one of the cluster's two files (None: the default)."""
        if cap is None:
            self._caps.pop(cluster, None)
        else:
            self._caps[cluster] = max(1, cap)

    def size(self, cluster: str) -> int:
        """Bytes the cluster's records take on disk."""
        known = self._sizes.get(cluster)
        if known is None:
            known = self._sizes[cluster] = sum(_size(p) for p in self._files(cluster))
        return known

    def record(self, record: dict[str, Any]) -> None:
        """Append one record of ``record["cluster"]``, cut to size, unless it is over the
        cluster's rate (then counted, as dropped)."""
        cluster = str(record.get("cluster") or "")
        now = self.clock()
        bucket = self._allowance(cluster, now)
        if bucket.tokens < 1:
            bucket.dropped += 1
            return
        bucket.tokens -= 1
        stamped: dict[str, Any] = {"time": now.isoformat(), **_cut(record)}
        if bucket.dropped:
            stamped["droppedBefore"], bucket.dropped = bucket.dropped, 0
        line = json.dumps(stamped, sort_keys=True) + "\n"
        self._append(cluster, line.encode())

    def forget(self, cluster: str) -> None:
        """A removed cluster: its records go."""
        for path in self._files(cluster):
            path.unlink(missing_ok=True)
        for kept in (self._sizes, self._buckets, self._caps):
            kept.pop(cluster, None)

    def _files(self, cluster: str) -> tuple[Path, Path]:
        current = self.path(cluster)
        return current, current.with_name(current.name + ".1")

    def _allowance(self, cluster: str, now: dt.datetime) -> _Bucket:
        bucket = self._buckets.get(cluster)
        if bucket is None:
            bucket = self._buckets[cluster] = _Bucket(float(BURST), now)
        elapsed = max(0.0, (now - bucket.since).total_seconds())
        bucket.tokens, bucket.since = min(float(BURST), bucket.tokens + elapsed * RATE), now
        return bucket

    def _append(self, cluster: str, line: bytes) -> None:
        current, previous = self._files(cluster)
        size = self.size(cluster)
        with contextlib.suppress(FileNotFoundError):
            if current.stat().st_size + len(line) > self._caps.get(cluster, DEFAULT_CAP_BYTES):
                size -= _size(previous)
                current.replace(previous)
        self.directory.mkdir(parents=True, exist_ok=True)
        with current.open("ab") as sink:
            sink.write(line)
        self._sizes[cluster] = size + len(line)


def _cut(record: dict[str, Any]) -> dict[str, Any]:
    """The record with each text longer than :data:`FIELD_CHARACTERS` cut, marked."""
    cut = {}
    for key, value in record.items():
        if isinstance(value, str) and len(value) > FIELD_CHARACTERS:
            over = len(value) - FIELD_CHARACTERS
            value = f"{value[:FIELD_CHARACTERS]}... [{over} characters cut]"
        cut[key] = value
    return cut


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
