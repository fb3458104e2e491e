"""Alert rules on hand-built snapshots, and the alert manager with a fake clock."""

from __future__ import annotations

import asyncio
import datetime as dt
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from allot.api.quantity import Quantity
from allot.api.tenancy import TenantAlerts, TenantQuota, TenantSpec
from allot.cli.main import main as allot
from allot.controllers.context import ControllerContext
from allot.fairshare.books import Standing
from allot.fairshare.report import SharingSummary, TenantReport
from allot.ops import alerts, audit
from allot.ops.capacity import ClaimInfo, DeviceInfo, PoolInfo, SliceSummary, Snapshot
from allot.ops.metrics import MetricSources, PlatformMetrics
from allot.ops.rules import AlertSettings, Firing, RuleInputs, evaluate, prometheus_rule
from allot.platform import build
from allot.types import rfc3339

NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)
GIB = 1 << 30


def _device(
    name: str, classes: tuple[str, ...] = ("gpu-whole",), memory: int = 40 * GIB
) -> DeviceInfo:
    return DeviceInfo("n1", "gpu.nvidia.com", "p1", name, classes, memory, "gpu", "", "", ())


def _claim(name: str, tenant: str, minutes_ago: float, allocated: bool = False) -> ClaimInfo:
    return ClaimInfo(
        f"tenant-{tenant}", f"{name}.default", tenant, name, "default", ("gpu-whole",),
        allocated, NOW - dt.timedelta(minutes=minutes_ago),
    )  # fmt: skip


def _snapshot(claims: list[ClaimInfo], allocated: dict[Any, ClaimInfo] | None = None,
              pools: list[PoolInfo] | None = None) -> Snapshot:  # fmt: skip
    devices = {("gpu.nvidia.com", "p1", n): _device(n) for n in ("gpu-0", "gpu-1")}
    summary = SliceSummary(
        list(devices.values()), {}, Counter({("n1", "p1", "gpu.nvidia.com", "gpu-whole"): 2})
    )
    return Snapshot(
        NOW, devices, allocated or {}, {}, {}, claims,
        pools or [PoolInfo("gpu.nvidia.com", "p1", 1, 1, 1, "n1")], ["gpu-whole"], [summary],
    )  # fmt: skip


def _inputs(snapshot: Snapshot, **overrides: Any) -> RuleInputs:
    values: dict[str, Any] = {
        "snapshot": snapshot,
        "tenants": {"legal": TenantSpec(), "research": TenantSpec()},
        "quotas": [],
        "nodes": {"n1"},
        "sync_errors": {},
        "pending_reason": lambda claim: "0/1 nodes are available: 1 cannot allocate all claims.",
    }
    values.update(overrides)
    return RuleInputs(**values)


def _rules(inputs: RuleInputs, settings: AlertSettings | None = None) -> list[str]:
    return sorted(f.rule for f in evaluate(inputs, settings or AlertSettings()))


def test_pending_claim_fires_after_the_threshold_and_tenants_override_it() -> None:
    snapshot = _snapshot([_claim("a", "legal", 4.9), _claim("b", "research", 5.1)])
    found = evaluate(_inputs(snapshot), AlertSettings())
    assert [(f.rule, f.subject_name) for f in found] == [("ClaimPendingTooLong", "b.default")]
    assert found[0].message == (
        "claim b of tenant research has been pending since "
        f"{rfc3339(NOW - dt.timedelta(seconds=306))} (threshold 300s): "
        "0/1 nodes are available: 1 cannot allocate all claims."
    )
    quick = {"legal": TenantSpec(alerts=TenantAlerts(pending_claim_seconds=60))}
    assert len(evaluate(_inputs(snapshot, tenants=quick), AlertSettings())) == 2


def test_a_released_claim_is_pending_since_its_release() -> None:
    snapshot = _snapshot([_claim("a", "legal", 30)])  # created 30 minutes ago
    released = {("tenant-legal", "a.default"): NOW - dt.timedelta(minutes=1)}
    assert _rules(_inputs(snapshot, pending_since=released)) == []
    found = evaluate(_inputs(snapshot), AlertSettings())
    assert f"pending since {rfc3339(NOW - dt.timedelta(minutes=30))} " in found[0].message


def test_the_manager_counts_pending_time_from_a_release(tmp_path: Path) -> None:
    api = build(tmp_path / "data", clock=FakeClock())
    try:
        manager = api.operations.alerts
        held = _claim("a", "legal", 30, allocated=True)
        assert manager._released(_snapshot([held])) == {}
        later = _snapshot([_claim("a", "legal", 30)])
        assert manager._released(later) == {("tenant-legal", "a.default"): NOW}
        assert manager._released(_snapshot([])) == {}  # gone: forgotten
    finally:
        api.registry.close()


def test_a_class_with_no_free_device_fires() -> None:
    claim = _claim("a", "legal", 1, allocated=True)
    allocated = {("gpu.nvidia.com", "p1", d): claim for d in ("gpu-0", "gpu-1")}
    assert _rules(_inputs(_snapshot([claim], allocated))) == ["DeviceClassLowFree"]
    one = {("gpu.nvidia.com", "p1", "gpu-0"): claim}
    assert _rules(_inputs(_snapshot([claim], one))) == []
    assert _rules(_inputs(_snapshot([claim], one)), AlertSettings(class_free_below=2)) == [
        "DeviceClassLowFree"
    ]


def test_quota_use_and_gpu_memory_fire_at_the_threshold() -> None:
    key = "count/resourceclaims.resource.k8s.io"
    labels = {"allot.dev/tenant": "legal"}
    quota = {
        "metadata": {"name": "q", "namespace": "tenant-legal", "labels": labels},
        "status": {"hard": {key: "10"}, "used": {key: "9"}},
    }
    found = evaluate(_inputs(_snapshot([]), quotas=[quota]), AlertSettings())
    assert [f.message for f in found] == [
        "tenant legal uses 9 of 10 count/resourceclaims.resource.k8s.io (90%, threshold 90%)"
    ]
    claim = _claim("a", "legal", 1, allocated=True)
    device = ("gpu.nvidia.com", "p1", "gpu-0")
    claim.devices, claim.memory = [device], {device: 40 * GIB}  # what CapacityView records
    held = {device: claim}
    spec = TenantSpec(quota=TenantQuota(gpu_memory=Quantity.parse("40Gi")))
    found = evaluate(_inputs(_snapshot([claim], held), tenants={"legal": spec}), AlertSettings())
    assert [f.message for f in found] == [
        "tenant legal holds 40Gi of its 40Gi GPU memory quota (100%, threshold 90%)"
    ]


def test_incomplete_and_stale_pools_and_sync_errors() -> None:
    pools = [PoolInfo("gpu.nvidia.com", "p1", 2, 1, 2, "gone")]
    found = evaluate(
        _inputs(_snapshot([], pools=pools), sync_errors={("legal", "Pod", "default", "x"): "no"}),
        AlertSettings(),
    )
    assert sorted(f.rule for f in found) == [
        "DeviceClassLowFree",  # the allocator skips an incomplete pool: nothing can be allocated
        "SlicePoolIncomplete",
        "SlicePoolStale",
        "TenantSyncError",
    ]


def test_an_allocation_of_a_revoked_class_fires_until_entitled_again() -> None:
    claim = _claim("a", "legal", 1, allocated=True)
    held = {("gpu.nvidia.com", "p1", "gpu-0"): claim}
    snapshot = _snapshot([claim, _claim("b", "legal", 1)], held)
    found = evaluate(_inputs(snapshot, entitled={"legal": ["gpu-slice"]}), AlertSettings())
    assert [(f.rule, f.tenant, f.subject_name) for f in found] == [
        ("RevokedClassAllocated", "legal", "a.default")
    ]
    assert found[0].message == (
        "claim a of tenant legal holds devices of class gpu-whole, which is no longer in its "
        "entitlement (entitled: gpu-slice); its pods keep them until they end, and no new pod "
        "may use the claim"
    )
    assert _rules(_inputs(snapshot, entitled={"legal": ["gpu-whole"]})) == []
    assert _rules(_inputs(snapshot)) == []  # a tenant whose params are unknown: not judged


def test_a_tenant_kept_below_its_guarantee_fires_after_the_threshold() -> None:
    waited_since = NOW.timestamp() - 150
    report = TenantReport(
        "legal",
        "pool",
        {"a100": Standing(2, 1, 0, 1), "gpuMemory": Standing(80 * GIB, 40 * GIB, 0, 0)},
        admitted=1,
        waiting=1,
        below_guarantee_since=waited_since,
    )
    found = evaluate(_inputs(_snapshot([]), sharing={"legal": report}), AlertSettings())
    assert [(f.rule, f.tenant, f.subject_kind) for f in found] == [
        ("TenantBelowGuarantee", "legal", "Tenant")
    ]
    assert found[0].message == (
        "tenant legal has had work inside its guarantee waiting since "
        f"{rfc3339(NOW - dt.timedelta(seconds=150))} (threshold 120s) "
        "while it holds 1 of 2 a100, 40Gi of 80Gi gpuMemory"
    )
    patient = {"legal": TenantSpec(alerts=TenantAlerts(below_guarantee_seconds=600))}
    assert _rules(_inputs(_snapshot([]), tenants=patient, sharing={"legal": report})) == []
    served = replace(report, below_guarantee_since=None)
    assert _rules(_inputs(_snapshot([]), sharing={"legal": served})) == []


def test_the_rules_render_as_a_prometheus_rule() -> None:
    rule = prometheus_rule(AlertSettings(pending_claim_seconds=120))
    assert rule["kind"] == "PrometheusRule"
    alerts = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
    assert alerts["ClaimPendingTooLong"]["expr"].endswith("> 120")
    assert set(alerts) >= {"ClaimPendingTooLong", "DeviceClassLowFree", "TenantQuotaHigh"}
    assert alerts["RevokedClassAllocated"]["expr"].startswith("max by (tenant) (allot_alert")
    below = alerts["TenantBelowGuarantee"]
    assert below["for"] == "120s"
    assert "kueue_cluster_queue_nominal_quota" in below["expr"]


class FakeClock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> dt.datetime:
        return self.now


def test_the_manager_raises_and_clears_with_a_fake_clock() -> None:
    async def scenario() -> None:
        clock = FakeClock()
        with tempfile.TemporaryDirectory() as directory:
            api = build(Path(directory), clock=clock)
            for hook in api.server.startup_hooks:
                await hook()
            host = ControllerContext("host", api.registry.store, api.registry.handlers, clock)
            host.create(
                "Namespace",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
                "t",
            )
            request = {"name": "g", "exactly": {"deviceClassName": "none"}}
            claim = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "waiting", "namespace": "team"},
                "spec": {"devices": {"requests": [request]}},
            }
            host.create("ResourceClaim", claim, "t")
            manager = api.operations.alerts
            assert manager.evaluate_now() == []
            clock.now = NOW + dt.timedelta(minutes=6)
            firing = manager.evaluate_now()
            assert [(f.rule, f.tenant) for f in firing] == [("ClaimPendingTooLong", "host")]
            assert [a["spec"]["rule"] for a in host.list("Alert")] == ["ClaimPendingTooLong"]
            reasons = [e["reason"] for e in host.list("Event", "team")]
            assert "ClaimPendingTooLong" in reasons
            scraped = api.operations.metrics.render()
            assert b'allot_alert{rule="ClaimPendingTooLong"' in scraped
            # a host claim's alert carries tenant="host", as its allot_claims series does
            assert b'subject="ResourceClaim/team/waiting",tenant="host"} 1.0' in scraped
            assert b'allot_claims{class="none",state="pending",tenant="host"} 1.0' in scraped
            host.delete("ResourceClaim", "team", "waiting")
            assert manager.evaluate_now() == []
            assert host.list("Alert") == []
            await api.server.shutdown_hooks[-1]()
            api.registry.close()

    asyncio.run(scenario())


def test_an_alert_whose_facts_change_says_so_in_its_object() -> None:
    """A claim pending with no pod, then with a pod that waits: the Alert object that
    ``allot alerts`` and ``kubectl get alerts`` print follows the new reason, as the
    dashboard does, without a second Warning Event."""

    async def scenario() -> None:
        clock = FakeClock()
        with tempfile.TemporaryDirectory() as directory:
            api = build(Path(directory), clock=clock)
            host = ControllerContext("host", api.registry.store, api.registry.handlers, clock)
            host.create(
                "Namespace",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
                "t",
            )
            request = {"name": "g", "exactly": {"deviceClassName": "none"}}
            host.create(
                "ResourceClaim",
                {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "waiting", "namespace": "team"},
                 "spec": {"devices": {"requests": [request]}}},
                "t",
            )  # fmt: skip
            manager = api.operations.alerts
            clock.now = NOW + dt.timedelta(minutes=6)
            [before] = manager.evaluate_now()
            assert "no pod uses it yet" in before.message
            host.create(
                "Pod",
                {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "user", "namespace": "team"},
                 "spec": {"resourceClaims": [{"name": "g", "resourceClaimName": "waiting"}],
                          "containers": [{"name": "c", "image": "x"}]}},
                "t",
            )  # fmt: skip
            [after] = manager.evaluate_now()
            assert "pod user is waiting to be scheduled" in after.message
            [alert] = host.list("Alert")
            assert alert["spec"]["message"] == after.message
            reasons = [e["reason"] for e in host.list("Event", "team")]
            assert reasons.count("ClaimPendingTooLong") == 1
            api.registry.close()

    asyncio.run(scenario())


def test_a_claim_generated_for_a_tenant_pod_is_named_as_its_tenant_sees_it() -> None:
    """A tenant pod's claim from a template is generated on the host for the pod's twin
    (``train.default-gpu-x7k2p``); the tenant knows it as ``default/train-gpu-x7k2p``. The
    dashboard's pending panel and fleet view and the alert say the tenant's name, as they
    do for the tenant's own claims and as the audit does."""
    clock = FakeClock()
    with tempfile.TemporaryDirectory() as directory:
        api = build(Path(directory), clock=clock)
        host = ControllerContext("host", api.registry.store, api.registry.handlers, clock)
        host.create(
            "Namespace",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-legal"}},
            "t",
        )
        owner = {"apiVersion": "v1", "kind": "Pod", "name": "train.default", "controller": True,
                 "uid": "0b6d1c9e-7c4f-4a8e-9d4e-2f1f8e1b7a11"}  # fmt: skip
        request = {"name": "g", "exactly": {"deviceClassName": "none"}}
        host.create(
            "ResourceClaim",
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "train.default-gpu-x7k2p", "namespace": "tenant-legal",
                          "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                          "ownerReferences": [owner]},
             "spec": {"devices": {"requests": [request]}}},
            "t",
        )  # fmt: skip
        [pending] = api.operations.capacity_document()["pending"]
        assert (pending["namespace"], pending["claim"]) == ("default", "train-gpu-x7k2p")
        clock.now = NOW + dt.timedelta(minutes=6)
        [firing] = api.operations.alerts.evaluate_now()
        assert firing.message.startswith("claim train-gpu-x7k2p of tenant legal has been")
        api.registry.close()


def test_the_oldest_pending_age_counts_from_a_release_as_the_alert_does() -> None:
    """A claim made 30 minutes ago, allocated, and released a minute ago has waited a
    minute: ``allot_oldest_pending_claim_age_seconds`` (which the PrometheusRule's
    ClaimPendingTooLong reads) says 60, not 1800, so the rule fires when the embedded alert
    does."""
    snapshot = _snapshot([_claim("a", "legal", 30)])
    released = {("tenant-legal", "a.default"): NOW - dt.timedelta(minutes=1)}
    sources = MetricSources(lambda: snapshot, list, list, dict, SharingSummary, lambda: released)
    families = text_string_to_metric_families(PlatformMetrics(sources).render().decode())
    [age] = [f for f in families if f.name == "allot_oldest_pending_claim_age_seconds"]
    assert [(s.labels, s.value) for s in age.samples] == [({"tenant": "legal"}, 60.0)]
    fresh = MetricSources(lambda: snapshot, list, list, dict)  # never allocated: since creation
    assert b'allot_oldest_pending_claim_age_seconds{tenant="legal"} 1800.0' in (
        PlatformMetrics(fresh).render()
    )


def test_a_claim_released_before_a_restart_waits_from_its_release() -> None:
    """The audit log says the claim released its GPU ten minutes ago, before the platform started:
    the alert and ``/metrics`` count its wait from that release, as they would have without
    the restart, not from the claim's creation."""
    clock = FakeClock()
    with tempfile.TemporaryDirectory() as directory:
        api = build(Path(directory), clock=clock)
        host = ControllerContext("host", api.registry.store, api.registry.handlers, clock)
        host.create(
            "Namespace",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
            "t",
        )
        request = {"name": "g", "exactly": {"deviceClassName": "none"}}
        claim = host.create(
            "ResourceClaim",
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "kept", "namespace": "team"},
             "spec": {"devices": {"requests": [request]}}},
            "t",
        )  # fmt: skip
        clock.now = NOW + dt.timedelta(hours=1)
        released = NOW + dt.timedelta(minutes=50)
        entry = {"tenant": "", "namespace": "team", "claim": "kept", "host_claim": "kept",
                 "claim_uid": claim["metadata"]["uid"], "pod": "p", "node": "n",
                 "driver": "gpu.nvidia.com", "pool": "p", "device": "gpu-0",
                 "device_class": "none", "memory": 0, "tenant_namespace": "team"}  # fmt: skip
        api.operations.log.append(
            [
                audit.Entry(rfc3339(NOW), "allocate", **entry),
                audit.Entry(rfc3339(released), "release", **entry),
            ]
        )
        [firing] = api.operations.alerts.evaluate_now()
        assert f"has been pending since {rfc3339(released)} " in firing.message
        scraped = api.operations.metrics.render()
        assert b'allot_oldest_pending_claim_age_seconds{tenant="host"} 600.0' in scraped
        api.registry.close()


def test_allot_alerts_prints_the_prometheus_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert allot(["alerts", "--prometheus-rule"]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    assert document["kind"] == "PrometheusRule"
    names = [r["alert"] for r in document["spec"]["groups"][0]["rules"]]
    assert names == [
        "ClaimPendingTooLong",
        "DeviceClassLowFree",
        "TenantQuotaHigh",
        "SlicePoolIncomplete",
        "TenantSyncError",
        "TenantBelowGuarantee",
        "RevokedClassAllocated",
        "DeviceTainted",
    ]


def test_the_timed_evaluation_gives_the_loop_back_and_evaluate_now_finishes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """200 stale pools raise 200 alerts: the loop's evaluation yields between them (other
    tasks run meanwhile); an ``evaluate_now`` in the middle completes it, raising none twice."""

    monkeypatch.setattr(alerts, "HOLD_SECONDS", 0.0)  # a yield after every step

    async def scenario() -> None:
        clock = FakeClock()
        with tempfile.TemporaryDirectory() as directory:
            api = build(Path(directory), clock=clock)
            host = ControllerContext("host", api.registry.store, api.registry.handlers, clock)
            for index in range(200):
                pool = {"name": f"n{index}", "generation": 1, "resourceSliceCount": 1}
                spec = {"driver": "gpu.nvidia.com", "nodeName": f"n{index}", "pool": pool}
                host.create(
                    "ResourceSlice",
                    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                     "metadata": {"name": f"n{index}"}, "spec": {**spec, "devices": []}},
                    "t",
                )  # fmt: skip
            manager = api.operations.alerts
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0)

            other = asyncio.create_task(ticker())
            timed = asyncio.create_task(manager.evaluate())
            while not manager.firing:
                await asyncio.sleep(0)
            assert 0 < len(manager.firing) < 200
            assert ticks > 0
            assert len(manager.evaluate_now()) == 200
            assert len(await timed) == 200
            assert len(host.list("Alert")) == 200
            other.cancel()
            api.registry.close()

    asyncio.run(scenario())


def test_a_capacity_alert_lasts_through_a_release_the_next_allocation_undoes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 28: the demo logged DeviceClassLowFree twice: one claim released the class's
    last device, the next took it half a second later, and an evaluation in between ended
    the alert, which the next raised again. A settling rule's alert ends only once its
    condition has stayed gone for ``settle_seconds``; a pending claim's ends at once."""
    low = Firing("DeviceClassLowFree", "warning", "", "DeviceClass", "", "gpu", "0 free")
    pending = Firing("ClaimPendingTooLong", "warning", "t", "ResourceClaim", "n", "c", "p")
    script: list[list[Firing]] = [[low, pending], [], [low], [], [], []]
    monkeypatch.setattr(alerts, "evaluate", lambda inputs, settings: script.pop(0))
    clock = FakeClock()
    with tempfile.TemporaryDirectory() as directory:
        api = build(Path(directory), clock=clock)
        host = ControllerContext("host", api.registry.store, api.registry.handlers, clock)
        manager = api.operations.alerts
        rules = []
        for seconds in (0, 0.5, 1, 1.5, 11, 11.6):
            clock.now = NOW + dt.timedelta(seconds=seconds)
            rules.append(sorted(f.rule for f in manager.evaluate_now()))
            assert len(host.list("Alert")) == len(rules[-1])
        assert rules == [
            ["ClaimPendingTooLong", "DeviceClassLowFree"],
            ["DeviceClassLowFree"],  # the claim's alert ends at once
            ["DeviceClassLowFree"],
            ["DeviceClassLowFree"],  # gone since 1.5 s ...
            ["DeviceClassLowFree"],  # ... 9.5 s: settling
            [],  # 10.1 s: ended
        ]
        raised = [r.getMessage() for r in caplog.records if r.getMessage().startswith("alert ")]
        assert raised == ["alert DeviceClassLowFree: 0 free", "alert ClaimPendingTooLong: p"]
        api.registry.close()


def test_a_tainted_device_fires_naming_the_device_its_taint_and_the_claims_on_it() -> None:
    held = replace(
        _claim("train", "legal", 1, allocated=True), devices=[("gpu.nvidia.com", "p1", "gpu-0")]
    )
    snapshot = _snapshot([held, _claim("idle", "research", 1)])
    snapshot.devices[("gpu.nvidia.com", "p1", "gpu-0")] = replace(
        _device("gpu-0"), taints=("gpu.nvidia.com/xid=79:NoSchedule",)
    )
    snapshot.devices[("gpu.nvidia.com", "p1", "gpu-1")] = replace(
        _device("gpu-1"), taints=("gpu.nvidia.com/xid=13:None",)
    )
    found = [f for f in evaluate(_inputs(snapshot), AlertSettings()) if f.rule == "DeviceTainted"]
    assert [(f.severity, f.subject_kind, f.subject_namespace, f.subject_name) for f in found] == [
        ("critical", "Device", "gpu.nvidia.com/p1", "gpu-0"),
        ("warning", "Device", "gpu.nvidia.com/p1", "gpu-1"),
    ]
    assert found[0].message == (
        "device gpu-0 of driver gpu.nvidia.com on node n1 is tainted "
        "gpu.nvidia.com/xid=79:NoSchedule: new claims that do not tolerate it cannot be "
        "allocated it; claims allocated on it: tenant-legal/train.default (tenant legal: train)"
    )
    assert found[1].message.endswith(
        "tainted gpu.nvidia.com/xid=13:None: it stays allocatable (the taint informs); "
        "claims allocated on it: <none>"
    )
    untainted = _snapshot([held])
    assert "DeviceTainted" not in _rules(_inputs(untainted))
