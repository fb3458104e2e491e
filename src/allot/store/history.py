"""The retained watch history: what each cluster's events cost, and their compaction.

Every write appends its event, the whole object, to the ``events`` table, so that a watch
can resume from any resourceVersion still retained. Kept by count alone (the newest 50,000
of all clusters, as before), 48 rewrites of one tenant's 1 MB ConfigMap grew the store by
46 MiB, in no one's quota. So history is kept per cluster, as each vCluster keeps its own in
its own backing store, within two bounds:

- at most :data:`EVENT_RETENTION` events and the cluster's byte budget (``bound``; for a
  tenant a 16th of its storage quota, set by the tenant controller; else
  :data:`DEFAULT_BUDGET_BYTES`): past either, the cluster's oldest events are compacted
  away, down to :data:`COMPACT_TO` of the bound, as etcd compacts old revisions;
- the cluster's *compacted revision* rises with it: a watch of that cluster from an older
  resourceVersion gets 410 Expired (and relists, as a reflector does); a watch from a
  retained version resumes with every event after it, as before.

Compacted revisions live in the ``compactions`` table (so 410s survive a restart), each
event's size in its ``size`` column (with a covering index, compaction reads no bodies).
What a cluster's history retains counts against its tenant's storage quota
(:mod:`allot.tenancy.guard`). Used by :class:`allot.store.objects.Store` only, inside the
transaction of the write that made the history grow.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

EVENT_RETENTION = 50_000
"""The most events one cluster's history keeps."""
DEFAULT_BUDGET_BYTES = 64 * 2**20
"""The most bytes of events a cluster keeps unless ``bound`` says otherwise."""
COMPACT_TO = 0.75
"""A compaction keeps this share of the bound, so that it runs once per many writes."""
ANY_CLUSTER = "*"
"""The ``compactions`` row of a database from before per-cluster history: every cluster's
events up to it were compacted at once."""

Snapshot = tuple[int, dict[str, tuple[int, int, int]]]

SCHEMA = """
CREATE TABLE IF NOT EXISTS compactions (cluster TEXT PRIMARY KEY, rv INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_cluster ON events (cluster, rv, size);
"""


@dataclass
class Retained:
    """One cluster's history: its events, their bytes and its compacted revision."""

    events: int = 0
    size: int = 0
    compacted: int = 0


@dataclass
class History:
    """The per-cluster accounting of the ``events`` table, kept with every write."""

    db: sqlite3.Connection
    clusters: dict[str, Retained] = field(default_factory=dict)
    budgets: dict[str, int] = field(default_factory=dict)
    compacted: int = 0  # every cluster's events up to here are gone (older databases)

    @classmethod
    def load(cls, db: sqlite3.Connection) -> History:
        """The accounting of an opened database, migrated to per-cluster history."""
        columns = {row[1] for row in db.execute("PRAGMA table_info(events)")}
        if "size" not in columns:
            db.execute("ALTER TABLE events ADD COLUMN size INTEGER")
            db.execute("UPDATE events SET size = length(body)")
        fresh = db.execute("SELECT 1 FROM sqlite_master WHERE name='compactions'").fetchone()
        db.executescript(SCHEMA)
        history = cls(db)
        if fresh is None:  # kept by count alone until now: what is gone went for all
            first = db.execute("SELECT MIN(rv) FROM events").fetchone()[0]
            if first is not None and first > 1:
                db.execute("INSERT INTO compactions VALUES (?, ?)", (ANY_CLUSTER, first - 1))
        for cluster, rv in db.execute("SELECT cluster, rv FROM compactions"):
            if cluster == ANY_CLUSTER:
                history.compacted = rv
            else:
                history.clusters[cluster] = Retained(compacted=rv)
        for cluster, events, size in db.execute(
            "SELECT cluster, COUNT(*), SUM(size) FROM events GROUP BY cluster"
        ):
            retained = history.clusters.setdefault(cluster, Retained())
            retained.events, retained.size = events, size or 0
        return history

    def bound(self, cluster: str, size: int | None) -> None:
        """The most bytes of events ``cluster`` keeps (None: the default), compacting
        its history at once if it holds more."""
        if size is None:
            self.budgets.pop(cluster, None)
        else:
            self.budgets[cluster] = max(0, size)
        retained = self.clusters.get(cluster)
        if retained is not None:
            retained.events, retained.size = self._within(cluster, retained, 0)

    def floor(self, cluster: str) -> int:
        """The cluster's compacted revision: a watch from an older version gets 410."""
        retained = self.clusters.get(cluster)
        return max(self.compacted, retained.compacted if retained is not None else 0)

    def retained_bytes(self, cluster: str) -> int:
        retained = self.clusters.get(cluster)
        return retained.size if retained is not None else 0

    def snapshot(self) -> Snapshot:
        """What ``restore`` puts back should the transaction be lost."""
        return self.compacted, {
            name: (r.events, r.size, r.compacted) for name, r in self.clusters.items()
        }

    def restore(self, snapshot: Snapshot) -> None:
        self.compacted = snapshot[0]
        self.clusters = {name: Retained(*numbers) for name, numbers in snapshot[1].items()}

    def appended(self, cluster: str, size: int) -> None:
        """An event of ``size`` bytes was appended (in the open transaction): compact the
        cluster's history if that took it past a bound. The accounting changes only once
        the compaction's statements succeeded."""
        retained = self.clusters.get(cluster)
        if retained is None:
            retained = self.clusters[cluster] = Retained()
        retained.events, retained.size = self._within(cluster, retained, size)

    def _within(self, cluster: str, retained: Retained, size: int) -> tuple[int, int]:
        """The cluster's events and bytes with one more event of ``size`` bytes (0: none),
        compacted if that is past a bound."""
        events, total = retained.events + (1 if size else 0), retained.size + size
        budget = self.budgets.get(cluster, DEFAULT_BUDGET_BYTES)
        if events > EVENT_RETENTION or total > budget:
            return self._compact(cluster, retained, events, total, budget)
        return events, total

    def _compact(
        self, cluster: str, retained: Retained, events: int, total: int, budget: int
    ) -> tuple[int, int]:
        """Remove the cluster's oldest events until :data:`COMPACT_TO` of both bounds is
        left (all of them if need be: a watch from the newest version still resumes); the
        events and bytes left."""
        most_events, most_bytes = int(EVENT_RETENTION * COMPACT_TO), int(budget * COMPACT_TO)
        cutoff = 0
        rows = self.db.execute(
            "SELECT rv, size FROM events WHERE cluster=? ORDER BY rv", (cluster,)
        )
        for rv, row_size in rows:
            if events <= most_events and total <= most_bytes:
                break
            cutoff, events, total = rv, events - 1, total - (row_size or 0)
        rows.close()
        if cutoff:
            self.db.execute("DELETE FROM events WHERE cluster=? AND rv<=?", (cluster, cutoff))
            self.db.execute("INSERT OR REPLACE INTO compactions VALUES (?, ?)", (cluster, cutoff))
            retained.compacted = cutoff
        return events, total

    def forget(self, cluster: str) -> None:
        """A dropped cluster: its history goes with it (the next create starts afresh, its
        compacted revision kept so that an old watch of the name gets 410)."""
        retained = self.clusters.get(cluster)
        if retained is None or not retained.events:
            return
        last = self.db.execute("SELECT MAX(rv) FROM events WHERE cluster=?", (cluster,))
        cutoff = last.fetchone()[0] or 0
        self.db.execute("DELETE FROM events WHERE cluster=?", (cluster,))
        self.db.execute("INSERT OR REPLACE INTO compactions VALUES (?, ?)", (cluster, cutoff))
        retained.events, retained.size, retained.compacted = 0, 0, cutoff
