"""The GPU-memory quota webhook's judgement (allot.cluster.webhook) over each engine's
client (tests/engines.py): a tenant's first allocation within its quota is admitted, a
second one that the first would push past it is refused even before the first reaches the
cache, and updates that allocate nothing new, or claims outside tenants, are not judged.
The webhook on the real API server with kube-scheduler: tests/e2e/test_gpu_memory_webhook.py."""

from __future__ import annotations

from typing import Any

import pytest

from allot.cluster.webhook import GpuMemoryQuota
from allot.dra import DraIndex
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import Publisher
from allot.tenancy import names
from tests.engines import SERVER_FIELD_MANAGER, Engine

pytestmark = pytest.mark.slow
TENANT = "research"
NAMESPACE = names.host_namespace(TENANT)


def _review(
    name: str, device: str, pool: str, *, namespace: str = NAMESPACE, was: bool = False
) -> Any:
    result = {"request": "g", "driver": "gpu.nvidia.com", "pool": pool, "device": device}
    allocated = {"allocation": {"devices": {"results": [result]}}}
    claim = {"metadata": {"name": name, "namespace": namespace}, "status": allocated}
    old = {"metadata": claim["metadata"], "status": allocated if was else {}}
    request = {"uid": f"uid-{name}", "subResource": "status", "namespace": namespace}
    return {"request": {**request, "object": claim, "oldObject": old}}


def test_the_quota_counts_what_it_admitted(engine: Engine) -> None:
    client = engine.client
    Publisher(client).reconcile(parse_fleet(SEED_000_FLEET))
    tenant = {
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "Tenant",
        "metadata": {"name": TENANT},
        "spec": {"quota": {"gpuMemory": "42Gi"}},
    }
    client.create(tenant, field_manager=SERVER_FIELD_MANAGER)
    index = DraIndex("host")
    index.refresh(client.list("ResourceSlice"), client.list("DeviceClass"), [])
    quota = GpuMemoryQuota(client, index)
    mig = next(k for k in index.device_memory() if k[1] == "a100-mig-1g5gb-pool-0")

    first = quota.review(_review("a", "gpu-0", "a100-whole-pool-0"))["response"]
    assert first == {"uid": "uid-a", "allowed": True}
    second = quota.review(_review("b", mig[2], mig[1]))["response"]
    assert second["allowed"] is False
    assert second["status"]["code"] == 403
    assert second["status"]["message"].startswith(
        'resourceclaims "b" is forbidden: would exceed the GPU memory quota of tenant '
        f"'{TENANT}' (40Gi allocated + "
    )
    assert second["status"]["message"].endswith(" requested > 42Gi)")
    again = quota.review(_review("a", "gpu-0", "a100-whole-pool-0", was=True))["response"]
    assert again["allowed"] is True  # allocated before: nothing new to count
    outside = quota.review(_review("c", mig[2], mig[1], namespace="default"))["response"]
    assert outside["allowed"] is True
