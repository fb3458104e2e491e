"""What a tenant makes the host keep beyond its objects is bounded and counted (issue 28,
item 11): the watch history of its writes is compacted per cluster as etcd compacts
revisions (watches resume within what is retained, 410 before it), its admission policies'
audit records are cut, rate-bounded and capped per cluster, and both count against its
storage quota.

The store and the audit are exercised directly; the quota in an in-process platform
(``tests.queueing_platform``), the tenant writing as its own user so the guard judges it."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from allot.platform import Platform
from allot.registry.admission import AdmissionDenied
from allot.registry.admissionaudit import BURST, FIELD_CHARACTERS, AdmissionAudit
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.store import Resource, Store
from allot.store.errors import Expired
from tests.queueing_platform import host, run_with_platform, settle

NAMESPACES = Resource("", "namespaces", "Namespace", False)
MAPS = Resource("", "configmaps", "ConfigMap", True)
TENANT = "legal-ai"
MIB = 2**20
Obj = dict[str, Any]


def _map(name: str, size: int, fill: str = "x") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"k": fill * size},
    }


def _stored_history(path: Path, cluster: str) -> int:
    with sqlite3.connect(path) as db:
        found = db.execute("SELECT SUM(length(body)) FROM events WHERE cluster=?", (cluster,))
        return int(found.fetchone()[0] or 0)


def test_rewrites_of_a_large_object_leave_a_bounded_history(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = Store(path, seed=1)
    for cluster in ("host", TENANT):
        store.create(cluster, NAMESPACES, {"metadata": {"name": "default"}})
    store.bound_history(TENANT, MIB)
    created = store.create(TENANT, MAPS, _map("big", 200_000))
    current = created
    for round_ in range(48):  # 9.6 MB of events if every one were kept
        current = store.update(TENANT, MAPS, _map("big", 200_000, chr(ord("a") + round_ % 26)))
    assert store.retained_history(TENANT) == _stored_history(path, TENANT) <= MIB
    assert path.stat().st_size < 4 * MIB  # compacted pages are reused
    last = int(current["metadata"]["resourceVersion"])
    resumed = store.events_since(TENANT, MAPS, last - 1)
    assert [(e.type, e.rv) for e in resumed] == [("MODIFIED", last)]
    with pytest.raises(Expired, match="too old resource version"):
        store.events_since(TENANT, MAPS, int(created["metadata"]["resourceVersion"]))
    host_namespaces = store.events_since("host", NAMESPACES, 0)  # another cluster's own
    assert [e.type for e in host_namespaces] == ["ADDED"]
    store.close()
    reopened = Store(path)  # the compacted revision survives a restart
    assert reopened.retained_history(TENANT) == _stored_history(path, TENANT)
    with pytest.raises(Expired):
        reopened.events_since(TENANT, MAPS, int(created["metadata"]["resourceVersion"]))
    reopened.close()


def test_audit_records_are_cut_and_rate_bounded_per_cluster(tmp_path: Path) -> None:
    now = [dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)]
    audit = AdmissionAudit(tmp_path, lambda: now[0])
    huge = "m" * 900_000
    for _ in range(BURST + 20):  # one instant: the burst, then nothing
        audit.record({"cluster": TENANT, "policy": "noisy", "message": huge})
    audit.record({"cluster": "host", "policy": "own"})  # another cluster's allowance
    now[0] += dt.timedelta(seconds=1)  # ten more a second
    audit.record({"cluster": TENANT, "policy": "noisy", "message": "after"})
    lines = [json.loads(line) for line in audit.path(TENANT).read_text().splitlines()]
    assert len(lines) == BURST + 1
    cut = f"{'m' * FIELD_CHARACTERS}... [{900_000 - FIELD_CHARACTERS} characters cut]"
    assert {line["message"] for line in lines[:-1]} == {cut}
    assert (lines[-1]["message"], lines[-1]["droppedBefore"]) == ("after", 20)
    assert audit.size(TENANT) == audit.path(TENANT).stat().st_size < BURST * 2 * 1024
    assert [json.loads(x)["policy"] for x in audit.path("host").read_text().splitlines()] == ["own"]


def _as_tenant(api: Platform, verb: str, obj: Obj) -> None:
    resource = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    name = None if verb == "create" else obj["metadata"]["name"]
    options = WriteOptions("test", "Strict", False, user=f"system:allot:{TENANT}")
    write = api.registry.handlers.create if verb == "create" else api.registry.handlers.update
    write(TENANT, Target(resource, namespace, name, ""), obj, options)


def _noisy_policy(message: str) -> list[Obj]:
    group = "admissionregistration.k8s.io"
    rule = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": ["configmaps"],
    }
    return [
        {
            "apiVersion": f"{group}/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "noisy"},
            "spec": {
                "matchConstraints": {"resourceRules": [rule]},
                "validations": [{"expression": "false", "message": message}],
            },
        },
        {
            "apiVersion": f"{group}/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "noisy"},
            "spec": {"policyName": "noisy", "validationActions": ["Audit"]},
        },
    ]


def test_a_tenants_history_and_audit_count_against_its_storage_quota() -> None:
    async def scenario(api: Platform) -> None:
        tenant = {
            "apiVersion": "allot.dev/v1alpha1",
            "kind": "Tenant",
            "metadata": {"name": TENANT},
            "spec": {
                "deviceClassSelector": {"matchLabels": {"x": "y"}},
                "storage": {"bytes": "4Mi"},
            },
        }
        host(api).create("Tenant", tenant, "test")
        await settle(api)
        for policy in _noisy_policy("m" * 900_000):
            _as_tenant(api, "create", policy)
        for index in range(3):
            _as_tenant(api, "create", _map(f"audited-{index}", 10))
        _as_tenant(api, "create", _map("big", 100_000))
        for round_ in range(48):
            _as_tenant(api, "update", _map("big", 100_000, chr(ord("a") + round_ % 26)))
        await settle(api)
        store, audit = api.registry.store, api.registry.admission_audit
        assert store.retained_history(TENANT) <= 4 * MIB // 16  # a 16th of its quota
        assert 0 < audit.size(TENANT) < 3 * 2 * FIELD_CHARACTERS  # three records, cut
        retained = api.registry.retained_bytes(TENANT)
        assert retained == store.retained_history(TENANT) + audit.size(TENANT)
        fillers = 0
        while (room := 4 * MIB - store.usage(TENANT)[1] - retained) > 600_000:
            _as_tenant(api, "create", _map(f"filler-{fillers}", min(800_000, room - 300_000)))
            fillers += 1
            retained = api.registry.retained_bytes(TENANT)
        with pytest.raises(AdmissionDenied) as refused:  # would fit beside the objects alone
            _as_tenant(api, "create", _map("more", room + retained // 2))
        assert "exceeded quota: tenant-storage, requested: bytes=" in refused.value.cause
        assert "their watch history and the admission audit" in refused.value.cause

    run_with_platform(scenario)
