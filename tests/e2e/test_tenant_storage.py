"""A tenant cannot fill the platform's store: its cluster holds at most ``spec.storage``
objects and bytes (every kind, the mirrored catalogue included), refused past the limit in
the tenant's own request with a quota-style message, and room comes back on delete."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.e2e.tenancy import Tenancy, seed_platform

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    with seed_platform(tmp_path_factory.mktemp("storage")) as running:
        yield running


def _limit(tenancy: Tenancy, **storage: object) -> None:
    patch = json.dumps({"spec": {"storage": storage}})
    tenancy.cluster.kubectl("patch", "tenant", "research-ai", "--type", "merge", "-p", patch)
    tenancy.wait(lambda: _observed(tenancy), "the tenant controller to see the new limits")


def _settled_usage(tenancy: Tenancy) -> tuple[int, int]:
    """research-ai's usage once the sync has stopped mirroring into its cluster (the same
    for a whole second)."""
    store = tenancy.cluster.server.api.registry.store
    seen = [store.usage("research-ai")]
    deadline = time.monotonic() + 20
    while len(seen) < 10 or len(set(seen[-10:])) > 1:
        assert time.monotonic() < deadline, f"research-ai's cluster keeps changing: {seen[-10:]}"
        time.sleep(0.1)
        seen.append(store.usage("research-ai"))
    return seen[-1]


def _observed(tenancy: Tenancy) -> bool:
    tenant = tenancy.host_json("tenant", "research-ai")
    observed = (tenant.get("status") or {}).get("observedGeneration")
    return bool(observed == tenant["metadata"]["generation"])


def _config_map(name: str, size: int = 1) -> str:
    document = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    document["data"] = {"x": "y" * size}
    return json.dumps(document)


def test_objects_past_the_limit_are_refused_until_some_are_deleted(tenancy: Tenancy) -> None:
    held, _ = _settled_usage(tenancy)
    _limit(tenancy, objects=held + 2)
    for name in ("first", "second"):
        tenancy.as_tenant("research-ai", "create", "-f", "-", stdin=_config_map(name))
    refused = tenancy.as_tenant(
        "research-ai", "create", "-f", "-", stdin=_config_map("third"), check=False
    )
    assert refused.returncode == 1
    assert (
        'configmaps "third" is forbidden: exceeded quota: tenant-storage, requested: '
        f"objects=1, used: objects={held + 2}, limited: objects={held + 2} "
        "(spec.storage.objects of Tenant research-ai" in refused.stderr
    )
    tenancy.as_tenant("research-ai", "delete", "configmap", "first")
    tenancy.as_tenant("research-ai", "create", "-f", "-", stdin=_config_map("third"))
    tenancy.as_tenant("research-ai", "delete", "configmap", "second", "third")


def test_bytes_past_the_limit_are_refused(tenancy: Tenancy) -> None:
    _, size = _settled_usage(tenancy)
    _limit(tenancy, objects=10_000, bytes=str(size + 4000))
    tenancy.as_tenant("research-ai", "create", "-f", "-", stdin=_config_map("small", 100))
    refused = tenancy.as_tenant(
        "research-ai", "create", "-f", "-", stdin=_config_map("big", 8000), check=False
    )
    assert refused.returncode == 1
    assert "exceeded quota: tenant-storage, requested: bytes=" in refused.stderr
    assert "(spec.storage.bytes of Tenant research-ai" in refused.stderr
    assert tenancy.as_tenant("research-ai", "get", "configmap", "big", check=False).returncode
