"""The audit log: append-only, queries, usage sums checked by hand."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from allot.controllers.context import ControllerContext
from allot.ops import audit
from allot.ops.audit import AuditLog, Entry
from allot.ops.durations import parse_since
from allot.platform import build
from allot.store import Store

T0 = dt.datetime(2026, 11, 22, 8, 0, tzinfo=dt.UTC)
GIB = 1 << 30


def _entry(minutes: int, action: str, tenant: str, device: str, memory_gib: int, cls: str) -> Entry:
    moment = (T0 + dt.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return Entry(
        moment, action, tenant, f"tenant-{tenant}", f"claim-{device}", f"claim-{device}.default",
        f"uid-{device}", "pod", "node-0", "gpu.nvidia.com", "pool-0", device, cls, memory_gib * GIB,
        "default",
    )  # fmt: skip


ENTRIES = [
    _entry(0, "allocate", "legal", "gpu-0", 40, "gpu-whole"),  # 0:00 - 1:30 -> 1.5 h x 40 GiB
    _entry(30, "allocate", "research", "gpu-1-mig-0", 5, "gpu-slice"),  # 0:30 - still open
    _entry(90, "release", "legal", "gpu-0", 40, "gpu-whole"),
    _entry(120, "allocate", "legal", "gpu-0", 40, "gpu-whole"),  # 2:00 - still open
]


def test_the_log_is_append_only(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.db")
    log.append(ENTRIES)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log._db.execute("UPDATE entries SET tenant = 'someone-else'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log._db.execute("DELETE FROM entries")
    assert log.entries() == ENTRIES
    log.close()
    reader = AuditLog(tmp_path / "audit.db", read_only=True)
    assert reader.entries() == ENTRIES
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.append([replace(ENTRIES[1], action="release")])  # a change: it is written
    reader.close()


def test_a_log_written_before_the_tenant_namespace_column_is_read_and_extended(
    tmp_path: Path,
) -> None:
    """An older file: read-only, its rows read with an empty ``tenant_namespace``; opened for
    writing, the column is added (old rows keep it empty) and the log stays append-only."""
    path = tmp_path / "audit.db"
    old_schema = audit.SCHEMA.replace(",\n    tenant_namespace TEXT NOT NULL DEFAULT ''", "")
    assert "tenant_namespace" not in old_schema
    db = sqlite3.connect(str(path))
    db.executescript(old_schema)
    old_fields = [f for f in audit.FIELDS if f != "tenant_namespace"]
    row = [getattr(ENTRIES[0], f) for f in old_fields]
    db.execute(
        f"INSERT INTO entries ({', '.join(old_fields)}) VALUES ({', '.join('?' * len(row))})", row
    )
    db.commit()
    db.close()
    before = replace(ENTRIES[0], tenant_namespace="")
    reader = AuditLog(path, read_only=True)
    assert reader.entries() == [before]
    reader.close()
    log = AuditLog(path)
    log.append(ENTRIES[1:2])
    assert log.entries() == [before, ENTRIES[1]]
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log._db.execute("UPDATE entries SET tenant_namespace = 'x'")
    log.close()


def test_open_allocations_survive_reopening(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.db")
    log.append(ENTRIES)
    log.close()
    held = AuditLog(tmp_path / "audit.db").open_allocations()
    assert sorted(key[3] for key in held) == ["gpu-0", "gpu-1-mig-0"]


def test_queries_by_tenant_device_and_time() -> None:
    assert [e.action for e in audit.query(ENTRIES, tenant="legal")] == [
        "allocate",
        "release",
        "allocate",
    ]
    assert len(audit.query(ENTRIES, device="pool-0/gpu-0")) == 3
    assert len(audit.query(ENTRIES, device="gpu.nvidia.com/pool-0/gpu-1-mig-0")) == 1
    assert len(audit.query(ENTRIES, since=T0 + dt.timedelta(minutes=60))) == 2


def test_usage_sums_match_hand_computation() -> None:
    until = T0 + dt.timedelta(hours=3)
    by_tenant = {
        r.key: r for r in audit.usage(ENTRIES, since=T0, until=until, by=audit.GROUPINGS["tenant"])
    }
    # legal: 1.5 h + (3 - 2) h = 2.5 device-hours, x 40 GiB = 100 GiB-hours
    assert by_tenant["legal"].device_hours == pytest.approx(2.5)
    assert by_tenant["legal"].memory_gib_hours == pytest.approx(100.0)
    # research: 0:30 -> 3:00 = 2.5 h x 5 GiB = 12.5 GiB-hours
    assert by_tenant["research"].device_hours == pytest.approx(2.5)
    assert by_tenant["research"].memory_gib_hours == pytest.approx(12.5)
    window = audit.usage(
        ENTRIES, since=T0 + dt.timedelta(hours=1), until=until, by=audit.GROUPINGS["class"]
    )
    by_class = {r.key: r.device_hours for r in window}
    assert by_class == {"gpu-whole": pytest.approx(1.5), "gpu-slice": pytest.approx(2.0)}


def test_a_release_without_allocation_is_ignored() -> None:
    orphan = replace(ENTRIES[2], claim_uid="other")
    rows = audit.usage(
        [orphan], since=T0, until=T0 + dt.timedelta(hours=1), by=audit.GROUPINGS["tenant"]
    )
    assert rows == []


def test_since_parsing() -> None:
    assert parse_since("90m", T0) == T0 - dt.timedelta(minutes=90)
    assert parse_since("2026-11-22T07:00:00Z", T0) == T0 - dt.timedelta(hours=1)
    with pytest.raises(ValueError, match="expected a duration like 30m"):
        parse_since("yesterday", T0)


def test_the_recorder_catches_up_after_a_restart_without_duplicates(tmp_path: Path) -> None:
    """Allocated while up, deleted while down: the release is recorded at the next start,
    once; a further restart adds nothing. Each entry names the claim's namespace as its
    tenant (or the host) sees it."""

    async def run_platform(work: Callable[[ControllerContext], None] | None = None) -> None:
        api = build(tmp_path)
        for hook in api.server.startup_hooks:
            await hook()
        host = ControllerContext(
            "host", api.registry.store, api.registry.handlers, api.registry.clock
        )
        if work is not None:
            work(host)
        await api.controllers.idle()
        await asyncio.sleep(0.05)
        for hook in api.server.shutdown_hooks:
            await hook()
        api.registry.close()

    def allocate(host: ControllerContext) -> None:
        host.create(
            "Namespace",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-a"}},
            "t",
        )
        twin = {"namespace": "tenant-a", "labels": {"allot.dev/tenant-namespace": "ml"}}
        for device, metadata in (("dev-0", twin), ("dev-1", {"namespace": "default"})):
            claim = host.create(
                "ResourceClaim",
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": "c", **metadata},
                    "spec": {
                        "devices": {
                            "requests": [{"name": "g", "exactly": {"deviceClassName": "x"}}]
                        }
                    },
                },
                "t",
            )
            result = {"request": "g", "driver": "d.example.com", "pool": "p", "device": device}
            claim["status"] = {"allocation": {"devices": {"results": [result]}}}
            host.update_status("ResourceClaim", claim, "t")

    asyncio.run(run_platform(allocate))
    store = Store(tmp_path / "state.db")
    store.drop_cluster("host")  # everything gone while the platform is down
    store.close()
    asyncio.run(run_platform())
    asyncio.run(run_platform())
    log = AuditLog(tmp_path / "audit.db", read_only=True)
    assert [(e.action, e.tenant, e.device, e.tenant_namespace) for e in log.entries()] == [
        ("allocate", "a", "dev-0", "ml"),  # a twin: the namespace in its tenant
        ("allocate", "", "dev-1", "default"),  # the host's own
        ("release", "", "dev-1", "default"),
        ("release", "a", "dev-0", "ml"),
    ]
    log.close()


def test_the_hosts_own_claims_are_tenant_host_everywhere() -> None:
    """One spelling for the host's claims: ``host``, as the metrics' label has it (the
    usage said ``<host>`` and ``allot audit --tenant host`` found nothing)."""
    own = replace(_entry(0, "allocate", "", "gpu-7", 80, "gpu-whole"), namespace="default")
    until = T0 + dt.timedelta(hours=1)
    by_tenant = audit.usage([own], since=T0, until=until, by=audit.GROUPINGS["tenant"])
    assert [r.key for r in by_tenant] == ["host"]
    assert audit.query([own, *ENTRIES], tenant="host") == [own]


def test_appends_are_idempotent_across_writers(tmp_path: Path) -> None:
    """Two writers of one log (a replica that took over, a restart): an allocation or a
    release the file already shows is not written again, so usage is counted once."""
    first, second = AuditLog(tmp_path / "audit.db"), AuditLog(tmp_path / "audit.db")
    held = ENTRIES[0]
    assert first.append([held]) == [held]
    assert second.append([held]) == []  # the other writer recorded it already
    released = replace(held, action="release", time=ENTRIES[2].time)
    assert second.append([released, released]) == [released]
    assert first.append([released]) == []
    assert [e.action for e in first.entries()] == ["allocate", "release"]
    first.close()
    second.close()
