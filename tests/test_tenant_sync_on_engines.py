"""The tenant sync on the client protocol, between two clusters of each engine
(tests/engines.py): in process, two clusters of one registry; remote, two API servers
through their informers, their changes on one dispatcher. A tenant claim gets its host
twin, the host's slices are mirrored trimmed to the tenant's classes, the twin's
allocation flows back into the tenant's status, and a deleted tenant claim takes its twin."""

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
from allot.tenancy.sync import TenantSync
from tests.engines import Engine, gpu_claim, set_allocated

pytestmark = pytest.mark.slow
TENANT = "research"
MANAGER = "engine-test"
DRA = (
    "resourceslices.resource.k8s.io",
    "deviceclasses.resource.k8s.io",
    "resourceclaims.resource.k8s.io",
)


def _namespace(client: Client, name: str) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    client.create(namespace, field_manager=MANAGER)


def _directory() -> TenantDirectory:
    tenant: dict[str, Any] = {
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "Tenant",
        "metadata": {"name": TENANT},
        "spec": {},
    }
    directory = TenantDirectory()
    directory.put(TenantEntry(Tenant.model_validate(tenant), ["gpu.nvidia.com"]))
    return directory


def _twin(engine: Engine, name: str) -> Any:
    host_ns = names.host_namespace(TENANT)
    return engine.client.peek("ResourceClaim", host_ns, names.host_name(name, "team"))


def test_the_sync_runs_between_any_two_clients(engine: Engine) -> None:
    assert engine.other_cluster is not None
    Publisher(engine.client).reconcile(parse_fleet(SEED_000_FLEET))
    _namespace(engine.client, names.host_namespace(TENANT))
    index = DraIndex("host")
    engine.client.inform("ResourceSlice")
    engine.client.inform("DeviceClass")
    engine.client.inform("ResourceClaim")
    engine.client.add_indexer("dra-index", index.observe, DRA)
    with engine.other_cluster(TENANT) as tenant:
        _namespace(tenant, "team")
        sync = TenantSync(engine.client, lambda _: tenant, _directory(), index)
        sync.inform()

        async def main() -> None:
            manager = ControllerManager([sync])
            manager.subscribe(engine.client.dispatcher)
            await engine.start()
            index.refresh(
                engine.client.list("ResourceSlice"),
                engine.client.list("DeviceClass"),
                engine.client.list("ResourceClaim"),
            )
            manager.start()
            try:
                await _converges(engine, tenant)
            finally:
                await manager.stop()
                await engine.stop()

        asyncio.run(main())


async def _converges(engine: Engine, tenant: Client) -> None:
    mirrored = await engine.until(
        lambda: tenant.list("ResourceSlice"), "the host's slices mirrored into the tenant"
    )
    assert [s["spec"]["nodeName"] for s in mirrored] == ["a100-whole-pool-0"]  # not the MIG one
    assert [d["name"] for d in mirrored[0]["spec"]["devices"]] == ["gpu-0"]
    assert [c["metadata"]["name"] for c in tenant.list("DeviceClass")] == ["gpu.nvidia.com"]

    tenant.create(gpu_claim("train"), field_manager=MANAGER)
    twin = await engine.until(lambda: _twin(engine, "train"), "the claim's host twin")
    assert (
        twin["metadata"]["annotations"][names.UID_ANNOTATION]
        == (tenant.get("ResourceClaim", "team", "train") or {})["metadata"]["uid"]
    )
    await engine.until(
        lambda: (
            (tenant.peek("ResourceClaim", "team", "train") or {})["metadata"]
            .get("annotations", {})
            .get(names.HOST_UID_ANNOTATION)
            == twin["metadata"]["uid"]
        ),
        "the twin's uid recorded on the tenant claim",
    )

    set_allocated(engine.client, twin["metadata"]["name"], True, twin["metadata"]["namespace"])
    allocated = await engine.until(
        lambda: ((tenant.peek("ResourceClaim", "team", "train") or {}).get("status") or {}).get(
            "allocation"
        ),
        "the twin's allocation in the tenant claim's status",
    )
    assert allocated["devices"]["results"][0]["device"] == "gpu-0"

    tenant.delete("ResourceClaim", "team", "train")
    await engine.until(lambda: _twin(engine, "train") is None, "the twin deleted with its claim")
