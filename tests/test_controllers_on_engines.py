"""allot's controllers that run on the client protocol, the same test on each engine
(tests/engines.py): the driver's publisher, the audit recorder driven by the dispatcher,
and the alert manager over the capacity view of the engine's cache."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from allot.controllers.runtime import ControllerManager
from allot.dra import DraIndex
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import Publisher
from allot.ops.alerts import AlertManager
from allot.ops.audit import AuditLog, AuditRecorder
from allot.ops.capacity import CapacityView
from allot.ops.rules import AlertSettings
from tests.engines import Engine, gpu_claim, set_allocated

pytestmark = pytest.mark.slow
MANAGER = "engine-test"
DRA = (
    "resourceslices.resource.k8s.io",
    "deviceclasses.resource.k8s.io",
    "resourceclaims.resource.k8s.io",
)


def _prepare(engine: Engine) -> DraIndex:
    """Watch the DRA kinds with the DRA index as an indexer; the fleet comes later."""
    index = DraIndex("host")
    for kind in ("ResourceSlice", "DeviceClass", "ResourceClaim", "Node"):
        engine.client.inform(kind)
    engine.client.add_indexer("dra-index", index.observe, DRA)
    return index


def _publish_and_namespace(engine: Engine) -> None:
    Publisher(engine.client).reconcile(parse_fleet(SEED_000_FLEET))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    engine.client.create(namespace, field_manager=MANAGER)


def test_the_publisher_brings_the_cluster_to_the_fleet(engine: Engine) -> None:
    client = engine.client
    fleet = parse_fleet(SEED_000_FLEET)
    report = Publisher(client).reconcile(fleet)
    assert report.nodes_created == ["a100-whole-pool-0", "a100-mig-1g5gb-pool-0", "cpu-pool-0"]
    assert (report.slices, report.devices) == (2, 8)
    again = Publisher(client).reconcile(fleet)
    assert (again.nodes_created, again.slices, again.slices_kept) == ([], 0, 2)
    classes = sorted(c["metadata"]["name"] for c in client.list("DeviceClass"))
    assert classes == ["gpu.nvidia.com", "mig.nvidia.com"]
    smaller = Publisher(client).reconcile(fleet.scaled("a100-whole-pool", 0))
    assert smaller.nodes_removed == ["a100-whole-pool-0"]
    assert client.get("Node", "", "a100-whole-pool-0") is None
    slices = client.list("ResourceSlice")
    assert [s["spec"]["nodeName"] for s in slices] == ["a100-mig-1g5gb-pool-0"]


def test_the_audit_records_each_allocation_and_release_once(engine: Engine, tmp_path: Path) -> None:
    index = _prepare(engine)
    log = AuditLog(tmp_path / "audit.db")
    recorder = AuditRecorder(engine.client, log, index=index)
    manager = ControllerManager([recorder])
    manager.subscribe(engine.client.dispatcher)

    def actions() -> list[tuple[str, str, int]]:
        return [(e.action, e.device, e.memory) for e in log.entries()]

    async def body() -> None:
        await engine.start()
        manager.start()
        try:
            _publish_and_namespace(engine)
            engine.client.create(gpu_claim("c"), field_manager=MANAGER)
            await engine.until(lambda: engine.client.peek("ResourceClaim", "team", "c"), "seen")
            set_allocated(engine.client, "c", True)
            await engine.until(lambda: actions(), "the allocation recorded")
            await engine.until(
                lambda: (engine.client.peek("ResourceClaim", "team", "c") or {}).get("status"),
                "the allocation seen",
            )
            set_allocated(engine.client, "c", False)
            await engine.until(lambda: len(actions()) == 2, "the release recorded")
        finally:
            await manager.stop()
            await engine.stop()

    asyncio.run(body())
    forty = 40 << 30
    assert actions() == [("allocate", "gpu-0", forty), ("release", "gpu-0", forty)]
    log.close()


def test_the_alert_manager_raises_and_clears_a_pending_claim(engine: Engine) -> None:
    index = _prepare(engine)
    capacity = CapacityView(engine.reads, index=index)
    alerts = AlertManager(
        engine.client, capacity, dict, dict, AlertSettings(pending_claim_seconds=1)
    )

    async def body() -> list[str]:
        await engine.start()
        try:
            _publish_and_namespace(engine)
            engine.client.create(gpu_claim("waiting"), field_manager=MANAGER)
            await engine.until(
                lambda: engine.client.peek("ResourceClaim", "team", "waiting"), "seen"
            )
            time.sleep(1.1)
            firing = alerts.evaluate_now()
            raised = [f.rule for f in firing]
            alert = engine.client.get("Alert", "", firing[0].name)
            assert alert is not None
            assert alert["status"]["state"] == "Firing"
            events = engine.client.list("Event", "team")
            assert [(e["reason"], e["type"]) for e in events] == [
                ("ClaimPendingTooLong", "Warning")
            ]
            engine.client.delete("ResourceClaim", "team", "waiting")
            await engine.until(lambda: not alerts.evaluate_now(), "the alert cleared")
            assert engine.client.get("Alert", "", firing[0].name) is None
            return raised
        finally:
            await engine.stop()

    assert asyncio.run(body()) == ["ClaimPendingTooLong"]
