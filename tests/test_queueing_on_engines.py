"""Fair-sharing admission (allot.tenancy.queueing) on the client protocol, the same test
on each engine (tests/engines.py): a sharing tenant's gated pod twins on the host, its
cluster the engine's second one; the pod within the tenant's guaranteed share is admitted
(its gate removed, ``QuotaReserved`` True, an Event), the one over it waits with the
engine's message, and is admitted once the first is gone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from allot.api.tenancy import Tenant
from allot.client.protocol import Client
from allot.controllers.runtime import ControllerManager
from allot.dra import DraIndex
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import Publisher
from allot.tenancy import names
from allot.tenancy.directory import TenantDirectory, TenantEntry
from allot.tenancy.queueing import MANAGER, QUOTA_RESERVED, QueueingController
from allot.tenancy.translate import ADMISSION_GATE
from tests.engines import SERVER_FIELD_MANAGER, Engine, gpu_claim

pytestmark = pytest.mark.slow
TENANT = "research"
NAMESPACE = names.host_namespace(TENANT)
SHARING = {"cohort": "pool", "deviceClasses": [{"name": "gpu.nvidia.com", "guaranteed": "1"}]}


def _directory() -> TenantDirectory:
    tenant = {
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "Tenant",
        "metadata": {"name": TENANT},
        "spec": {"sharing": SHARING},
    }
    directory = TenantDirectory()
    directory.put(TenantEntry(Tenant.model_validate(tenant), ["gpu.nvidia.com"]))
    return directory


def _twin(name: str) -> dict[str, Any]:
    """A gated pod twin using its own claim, as the sync makes it for a sharing tenant."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {names.TENANT_LABEL: TENANT}},
        "spec": {
            "schedulingGates": [{"name": ADMISSION_GATE}],
            "resourceClaims": [{"name": "g", "resourceClaimName": name}],
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "g"}]}}],
        },
    }


def _reserved(client: Client, name: str) -> Any:
    pod = client.peek("Pod", NAMESPACE, name) or {}
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == QUOTA_RESERVED), None)


def _ours(event: dict[str, Any]) -> bool:
    return bool((event.get("source") or {}).get("component") == MANAGER)


def _gated(client: Client, name: str) -> bool:
    pod = client.peek("Pod", NAMESPACE, name) or {}
    return any(g.get("name") == ADMISSION_GATE for g in pod["spec"].get("schedulingGates") or [])


def test_a_sharing_tenants_pods_are_admitted_within_its_share(engine: Engine) -> None:
    assert engine.other_cluster is not None
    client = engine.client
    Publisher(client).reconcile(parse_fleet(SEED_000_FLEET))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    client.create(namespace, field_manager=SERVER_FIELD_MANAGER)
    for kind in ("Pod", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice"):
        client.inform(kind)
    index = DraIndex("host")
    with engine.other_cluster(TENANT) as tenant:
        queueing = QueueingController(client, lambda _: tenant, _directory(), index)

        async def main() -> None:
            manager = ControllerManager([queueing])
            manager.subscribe(client.dispatcher)
            await engine.start()
            index.refresh(client.list("ResourceSlice"), client.list("DeviceClass"), [])
            manager.start()
            try:
                await _admits_within_the_share(engine)
            finally:
                await manager.stop()
                await engine.stop()

        asyncio.run(main())


async def _admits_within_the_share(engine: Engine) -> None:
    client = engine.client
    for name in ("first", "second"):
        client.create(gpu_claim(name, NAMESPACE), field_manager=SERVER_FIELD_MANAGER)
        client.create(_twin(name), field_manager=SERVER_FIELD_MANAGER)
        await engine.until(lambda n=name: _reserved(client, n), f"{name} judged")  # type: ignore[misc]
    first, second = _reserved(client, "first"), _reserved(client, "second")
    assert (first["status"], first["reason"]) == ("True", QUOTA_RESERVED)
    assert not _gated(client, "first")
    assert (second["status"], second["reason"]) == ("False", "Pending")
    assert "gpu.nvidia.com" in second["message"]
    assert _gated(client, "second")
    events = client.list("Event", NAMESPACE)  # a real cluster's scheduler writes its own
    reasons = {(e["involvedObject"]["name"], e["reason"]) for e in events if _ours(e)}
    assert reasons == {("first", QUOTA_RESERVED), ("second", "Pending")}

    client.delete("Pod", NAMESPACE, "first", options={"gracePeriodSeconds": 0})
    await engine.until(  # remotely the gate goes first, then the condition: two requests
        lambda: (_reserved(client, "second") or {}).get("status") == "True",
        "second admitted once first is gone",
    )
    assert not _gated(client, "second")
