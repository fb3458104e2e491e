"""The audit log: every allocation and release of a device, append-only, and chargeback.

One row per device and action in its own SQLite file (``<data-dir>/audit.db``, not part
of the API's store, so nothing served can change it; triggers refuse UPDATE and DELETE):
time, action (``allocate`` or ``release``), tenant, namespace, claim (the tenant's name
for it), host claim and uid, pod, node, driver, pool, device, class, GPU memory, and the
claim's namespace as its tenant sees it (two claims of one name in two namespaces of a
tenant share the host namespace ``tenant-<name>``; a column added later, so older rows have
it empty and it is added to an older file when it is opened for writing).
:class:`AuditRecorder` is the controller that writes it from host claim events; it keeps
the open allocations per claim and compares them with the claim on every change, so a
restart records exactly the releases and allocations it missed (stamped with the time it
noticed them) and never twice. :func:`query` answers "who had this GPU when" and "what did
this tenant hold"; :func:`usage` sums device-hours and GPU-memory GiB-hours per tenant or
class for chargeback. Used by the platform and ``allot audit`` / ``allot usage``.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from allot.api import claims
from allot.client.protocol import HOST_CLUSTER, Client, WatchEvent
from allot.dra import DraIndex
from allot.tenancy import generated, names
from allot.tenancy.translate import tenant_object_name
from allot.types import Obj

CLAIMS = "resourceclaims.resource.k8s.io"
GIB = 1 << 30
HOST_TENANT = HOST_CLUSTER
"""The tenant every output names the host's own claims by (no tenant may be named ``host``):
the audit, usage, ``allot top``, the dashboard and the metrics' ``tenant`` label."""
SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, action TEXT NOT NULL,
    tenant TEXT NOT NULL, namespace TEXT NOT NULL, claim TEXT NOT NULL,
    host_claim TEXT NOT NULL, claim_uid TEXT NOT NULL, pod TEXT NOT NULL, node TEXT NOT NULL,
    driver TEXT NOT NULL, pool TEXT NOT NULL, device TEXT NOT NULL,
    device_class TEXT NOT NULL, memory INTEGER NOT NULL,
    tenant_namespace TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS entries_by_device ON entries (driver, pool, device);
CREATE INDEX IF NOT EXISTS entries_by_tenant ON entries (tenant, time);
CREATE INDEX IF NOT EXISTS entries_by_holding ON entries (claim_uid, driver, pool, device, seq);
CREATE TRIGGER IF NOT EXISTS entries_no_update BEFORE UPDATE ON entries
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS entries_no_delete BEFORE DELETE ON entries
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"""


@dataclass(frozen=True)
class Entry:
    time: str
    action: str
    tenant: str
    namespace: str
    claim: str
    host_claim: str
    claim_uid: str
    pod: str
    node: str
    driver: str
    pool: str
    device: str
    device_class: str
    memory: int
    tenant_namespace: str  # the claim's namespace as its tenant (or the host) sees it

    @property
    def device_key(self) -> tuple[str, str, str, str]:
        return self.claim_uid, self.driver, self.pool, self.device


FIELDS = list(Entry.__dataclass_fields__)


class AuditLog:
    """The append-only file; ``read_only`` opens an existing log for queries."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        if read_only:
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        else:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # as the store: WAL survives crashes
            self._db.executescript(SCHEMA)
            if "tenant_namespace" not in self._columns():  # a file written before it
                self._db.execute(
                    "ALTER TABLE entries ADD COLUMN tenant_namespace TEXT NOT NULL DEFAULT ''"
                )

    def _columns(self) -> set[str]:
        return {row[1] for row in self._db.execute("PRAGMA table_info(entries)")}

    def close(self) -> None:
        self._db.close()

    def append(self, entries: Iterable[Entry]) -> list[Entry]:
        """Append the entries that change what the file says a device is doing: an
        ``allocate`` of a device (of a claim) the file shows allocated, or a ``release`` of
        one it does not, is dropped. Judged against the file itself inside one write
        transaction, so two recorders (a replica that took over from another, one that
        restarted) never count an allocation twice. Returns what was written."""
        entries = list(entries)
        if not entries:
            return []
        columns = ", ".join(FIELDS)
        marks = ", ".join("?" for _ in FIELDS)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            written = self._changes(entries)
            self._db.executemany(
                f"INSERT INTO entries ({columns}) VALUES ({marks})",
                [tuple(asdict(e).values()) for e in written],
            )
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
        return written

    def _changes(self, entries: list[Entry]) -> list[Entry]:
        """The entries, in order, that change a device's state as the file holds it."""
        state: dict[tuple[str, str, str, str], str] = {}
        kept = []
        for entry in entries:
            key = entry.device_key
            if key not in state:
                row = self._db.execute(
                    "SELECT action FROM entries WHERE claim_uid=? AND driver=? AND pool=? "
                    "AND device=? ORDER BY seq DESC LIMIT 1",
                    key,
                ).fetchone()
                state[key] = row[0] if row else "release"
            if (entry.action == "allocate") == (state[key] == "allocate"):
                continue  # allocated twice, or released while not held: already recorded
            state[key] = entry.action
            kept.append(entry)
        return kept

    def entries(self) -> list[Entry]:
        stored = self._columns()  # a file opened read-only may predate a column
        columns = ", ".join(f if f in stored else f"'' AS {f}" for f in FIELDS)
        cursor = self._db.execute(f"SELECT {columns} FROM entries ORDER BY seq")
        return [Entry(*row) for row in cursor]

    def open_allocations(self) -> dict[tuple[str, str, str, str], Entry]:
        """Devices allocated and not yet released, keyed by (claim uid, driver, pool, device)."""
        held: dict[tuple[str, str, str, str], Entry] = {}
        for entry in self.entries():
            if entry.action == "allocate":
                held[entry.device_key] = entry
            else:
                held.pop(entry.device_key, None)
        return held


class AuditRecorder:
    """The controller that turns host claim changes into audit entries."""

    name = "audit"
    watches = frozenset({CLAIMS})  # the resources keys_for answers for

    def __init__(
        self,
        context: Client,
        log: AuditLog,
        on_entries: Callable[[list[Entry]], None] | None = None,
        index: DraIndex | None = None,
    ) -> None:
        """``index``: the DRA index of ``context``'s cluster fed from its events (device
        memory comes from it); without one the recorder refreshes its own from listings."""
        self.context = context
        self.index = index if index is not None else DraIndex(context.cluster)
        self._own_index = index is None
        self.log = log
        self.on_entries = on_entries  # e.g. the allocation and release counters
        self.open: dict[str, dict[tuple[str, str, str], Entry]] = defaultdict(dict)
        self._claims: dict[str, tuple[str, str]] = {}  # uid -> namespace, name
        for entry in log.open_allocations().values():
            self.open[entry.claim_uid][(entry.driver, entry.pool, entry.device)] = entry
            self._claims[entry.claim_uid] = (entry.namespace, entry.host_claim)

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.cluster != HOST_CLUSTER or event.resource != CLAIMS:
            return []
        metadata = event.object["metadata"]
        return [(metadata.get("namespace", ""), metadata["name"], metadata.get("uid", ""))]

    def initial_keys(self) -> list[Hashable]:
        keys: set[Hashable] = set()
        for claim in self.context.list("ResourceClaim"):
            metadata = claim["metadata"]
            keys.add((metadata.get("namespace", ""), metadata["name"], metadata.get("uid", "")))
        keys |= {(ns, name, uid) for uid, (ns, name) in self._claims.items()}
        return sorted(keys, key=str)

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        namespace, name, uid = key
        claim = self.context.peek("ResourceClaim", namespace, name)
        if claim is not None and claim["metadata"].get("uid") != uid:
            claim = None  # a newer claim of the same name: its own key records it
        now = _stamp(self.context.now())
        current = claims.allocated_devices(claim) if claim is not None else {}
        held = self.open[uid]
        released = [
            _with(held.pop(device), now, "release") for device in sorted(set(held) - set(current))
        ]
        allocated = []
        if claim is not None:
            for device in sorted(set(current) - set(held)):
                entry = self._entry(claim, device, current[device], now)
                held[device] = entry
                allocated.append(entry)
            self._claims[uid] = (namespace, name)
        if not held:
            self.open.pop(uid, None)
            self._claims.pop(uid, None)
        written = self.log.append([*released, *allocated])
        if self.on_entries is not None and written:
            self.on_entries(written)

    def _entry(self, claim: Obj, device: tuple[str, str, str], request: str, now: str) -> Entry:
        metadata = claim["metadata"]
        namespace = metadata.get("namespace", "")
        annotations = metadata.get("annotations") or {}
        pod, node = self._consumer(claim)
        return Entry(
            time=now,
            action="allocate",
            tenant=names.tenant_of_namespace(namespace) or "",
            namespace=namespace,
            claim=annotations.get(names.NAME_ANNOTATION) or self._generated_name(claim),
            host_claim=metadata["name"],
            claim_uid=metadata.get("uid", ""),
            pod=pod,
            node=node,
            driver=device[0],
            pool=device[1],
            device=device[2],
            device_class=claims.request_class(claim, request),
            memory=self._memory_of(claim, device),
            tenant_namespace=self._tenant_namespace(claim),
        )

    def _tenant_namespace(self, claim: Obj) -> str:
        """The claim's namespace in its tenant: a twin's label (a claim generated from a
        template twin made before templates carried it: its pod twin's), the host's own."""
        metadata = claim["metadata"]
        namespace: str = metadata.get("namespace", "")
        if names.tenant_of_namespace(namespace) is None:
            return namespace
        label = (metadata.get("labels") or {}).get(names.TENANT_NAMESPACE_LABEL)
        if label:
            return str(label)
        for owner in metadata.get("ownerReferences") or []:
            pod = self.context.peek("Pod", namespace, owner.get("name", ""))
            if owner.get("kind") == "Pod" and pod is not None:
                return str(
                    (pod["metadata"].get("labels") or {}).get(names.TENANT_NAMESPACE_LABEL, "")
                )
        return ""

    def _generated_name(self, claim: Obj) -> str:
        """A host claim's name as its tenant sees it: a claim generated on the host for a
        tenant pod's twin has the name the tenant's mirror of it has; any other claim keeps
        its own."""
        metadata = claim["metadata"]
        twin_name = next(
            (
                o.get("name", "")
                for o in metadata.get("ownerReferences") or []
                if o.get("kind") == "Pod" and o.get("controller")
            ),
            "",
        )
        twin = self.context.peek("Pod", metadata.get("namespace", ""), twin_name)
        origin = tenant_object_name(twin) if twin is not None else None
        entry = generated.generated_for(twin, claim) if twin is not None else None
        if origin is None or entry is None:
            return str(metadata["name"])
        return generated.tenant_claim_name(origin[1], entry, metadata["name"])

    def _consumer(self, claim: Obj) -> tuple[str, str]:
        """The first reserving pod (its tenant name if synced) and its node."""
        namespace = claim["metadata"].get("namespace", "")
        for consumer in (claim.get("status") or {}).get("reservedFor") or []:
            pod = self.context.peek("Pod", namespace, consumer.get("name", ""))
            if pod is None:
                continue
            annotations = pod["metadata"].get("annotations") or {}
            node = (pod.get("spec") or {}).get("nodeName") or ""
            return annotations.get(names.NAME_ANNOTATION, pod["metadata"]["name"]), node
        return "", _selected_node(claim)

    def _memory_of(self, claim: Obj, device: tuple[str, str, str]) -> int:
        """The GPU memory the claim holds of a device (its ``memory`` capacity from the
        DRA index, or the share it consumed of a device shared by capacity)."""
        if self._own_index:
            self.index.refresh(slices=self.context.list("ResourceSlice"))
        allocation = (claim.get("status") or {}).get("allocation")
        return claims.held_memory(allocation, self.index.device_memory()).get(device, 0)


def _selected_node(claim: Obj) -> str:
    selector = ((claim.get("status") or {}).get("allocation") or {}).get("nodeSelector") or {}
    for term in selector.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                return str(field["values"][0])
    return ""


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _with(entry: Entry, time: str, action: str) -> Entry:
    return Entry(**{**asdict(entry), "time": time, "action": action})


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# ------------------------------------------------------------------- queries
def query(
    entries: list[Entry],
    *,
    tenant: str | None = None,
    device: str | None = None,
    since: dt.datetime | None = None,
) -> list[Entry]:
    """Entries of a tenant and/or a device (``name``, ``pool/name`` or
    ``driver/pool/name``), at or after ``since``."""
    found = []
    for entry in entries:
        if tenant is not None and (entry.tenant or HOST_TENANT) != tenant:
            continue
        if device is not None and device not in (
            entry.device,
            f"{entry.pool}/{entry.device}",
            f"{entry.driver}/{entry.pool}/{entry.device}",
        ):
            continue
        if since is not None and parse_time(entry.time) < since:
            continue
        found.append(entry)
    return found


def last_releases(entries: list[Entry]) -> dict[str, dt.datetime]:
    """Claim uid -> when it last released a device, for claims whose last entry is a
    release (they hold nothing now): where a pending claim's wait began before a restart."""
    last: dict[str, Entry] = {}
    for entry in entries:
        last[entry.claim_uid] = entry
    return {uid: parse_time(entry.time) for uid, entry in last.items() if entry.action == "release"}


@dataclass
class UsageRow:
    key: str
    device_hours: float
    memory_gib_hours: float

    def document(self, by: str) -> dict[str, str | float]:
        """The row as ``allot usage -o json`` and ``/allot/v1/usage`` give it: the group
        (``tenant`` or ``class``), device-hours and GPU-memory GiB-hours, to 6 decimals."""
        return {
            by: self.key,
            "device_hours": round(self.device_hours, 6),
            "gpu_memory_gib_hours": round(self.memory_gib_hours, 6),
        }


def usage(
    entries: list[Entry],
    *,
    since: dt.datetime,
    until: dt.datetime,
    by: Callable[[Entry], str],
) -> list[UsageRow]:
    """Device-hours and GPU-memory GiB-hours within [since, until], grouped by ``by``;
    an allocation still open counts until ``until``."""
    opened: dict[tuple[str, str, str, str], Entry] = {}
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for entry in entries:
        if entry.action == "allocate":
            opened[entry.device_key] = entry
            continue
        start = opened.pop(entry.device_key, None)
        if start is not None:
            _add(
                totals,
                by(start),
                start,
                parse_time(start.time),
                parse_time(entry.time),
                since,
                until,
            )
    for start in opened.values():
        _add(totals, by(start), start, parse_time(start.time), until, since, until)
    return [UsageRow(k, v[0], v[1]) for k, v in sorted(totals.items())]


def _add(
    totals: dict[str, list[float]],
    key: str,
    entry: Entry,
    start: dt.datetime,
    end: dt.datetime,
    since: dt.datetime,
    until: dt.datetime,
) -> None:
    hours = (min(end, until) - max(start, since)).total_seconds() / 3600
    if hours <= 0:
        return
    totals[key][0] += hours
    totals[key][1] += hours * entry.memory / GIB


GROUPINGS: dict[str, Callable[[Entry], str]] = {
    "tenant": lambda entry: entry.tenant or HOST_TENANT,
    "class": lambda entry: entry.device_class or "<unknown>",
}
