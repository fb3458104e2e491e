"""The GPU-memory quota on real Kubernetes 1.36 (issue 19's engine, the real kube-scheduler):
``allot controller --webhook-port`` serves and registers its validating webhook on
``resourceclaims/status``; an allocation that would take a tenant past its
``spec.quota.gpuMemory`` is refused, so the claim stays unallocated and its pod waits with
the reason in a ``FailedScheduling`` Event, while the same device goes to a claim outside
any tenant. Skips without ``make kube``."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from allot.apiserver.security import ensure_tls
from allot.client.errors import ClientError
from allot.cluster.controller import ClusterController
from allot.cluster.crd import tenant_crd
from allot.cluster.webhook import NAME, WebhookSettings
from allot.kube.remote import RemoteClient
from allot.tenancy import entitlement, names
from tests.e2e.conftest import wait_until
from tests.e2e.test_driver_passthrough_health import claim_and_pod
from tests.realkube import RealKube, needs_real_kube, running_real_kube

pytestmark = [pytest.mark.slow, needs_real_kube]
FLEET = {"pools": [{"name": "h100", "nodes": 1, "gpu": "H100-80GB-HBM3", "gpusPerNode": 2}]}
TENANT = "research"
MANAGER = "test"
ENTITLED = {"matchLabels": {"allot.dev/test-class": "gpu"}}


def _tenant(gpu_memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "Tenant",
        "metadata": {"name": TENANT},
        "spec": {"deviceClassSelector": ENTITLED, "quota": {"gpuMemory": gpu_memory}},
    }


def _running(controller: ClusterController) -> Iterator[None]:
    """``controller`` leading on a loop of its own (the webhook judges on it)."""
    started: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def main() -> None:
        stop = asyncio.Event()
        started.append((asyncio.get_running_loop(), stop))
        await controller.run(stop)

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    wait_until(lambda: controller.running is not None, "the controller leading", 60)
    try:
        yield
    finally:
        loop, stop = started[0]
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[RealKube]:
    with running_real_kube(tmp_path, FLEET) as running:
        api = running.client()
        try:
            client = RemoteClient(api)
            client.create(tenant_crd(), field_manager=MANAGER)
            wait_until(lambda: _lists(client, "Tenant"), "the Tenant kind served", 60)
            labels = {"metadata": {"labels": ENTITLED["matchLabels"]}}
            client.patch("DeviceClass", "", "gpu.nvidia.com", labels, field_manager=MANAGER)
            client.create(_tenant("100Gi"), field_manager=MANAGER)
            client.create(entitlement.namespace(TENANT), field_manager=MANAGER)
            tls = ensure_tls(tmp_path / "controller" / "webhook")
            webhook = WebhookSettings(0, tls.ca_cert, tls.server_cert, tls.server_key)
            controller = ClusterController(api, tmp_path / "controller", webhook=webhook)
            for _ in _running(controller):
                yield running
        finally:
            api.close()


def _lists(client: RemoteClient, kind: str) -> bool:
    try:
        client.list(kind)
    except ClientError:  # not served yet
        return False
    return True


def _claim_in(kube: RealKube, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kube.get_json("resourceclaim", name, "-n", namespace)
    return found


def _apply_in(kube: RealKube, namespace: str, documents: list[dict[str, Any]]) -> None:
    text = "\n---\n".join(json.dumps(d) for d in documents)
    kube.kubectl("apply", "-n", namespace, "-f", "-", stdin=text)


def test_an_allocation_over_the_tenants_gpu_memory_is_refused(kube: RealKube) -> None:
    registered = kube.get_json("validatingwebhookconfiguration", NAME)
    (webhook,) = registered["webhooks"]
    assert webhook["clientConfig"]["url"].startswith("https://127.0.0.1:")
    assert webhook["rules"][0]["resources"] == ["resourceclaims/status"]

    tenant_ns = names.host_namespace(TENANT)
    _wait_for_service_account(kube, tenant_ns)
    _apply_in(kube, tenant_ns, claim_and_pod("first", "gpu.nvidia.com"))
    first = wait_until(
        lambda: (_claim_in(kube, tenant_ns, "first").get("status") or {}).get("allocation"),
        "the first claim allocated (80Gi of 100Gi)",
        60,
    )
    assert first["devices"]["results"][0]["device"] in ("gpu-0", "gpu-1")

    _apply_in(kube, tenant_ns, claim_and_pod("second", "gpu.nvidia.com"))
    refused = "the second allocation refused"
    refusal = wait_until(lambda: _failed_scheduling(kube, tenant_ns), refused, 60)
    assert refusal == (  # the H100's published memory is 81559Mi
        'running PreBind plugin "DynamicResources": add allocation and reservation to claim '
        f'{tenant_ns}/second: admission webhook "gpu-memory-quota.allot.dev" denied the '
        'request: resourceclaims "second" is forbidden: would exceed the GPU memory quota of '
        f"tenant '{TENANT}' (81559Mi allocated + 81559Mi requested > 100Gi)"
    )
    assert not (_claim_in(kube, tenant_ns, "second").get("status") or {}).get("allocation")
    pod = kube.get_json("pod", "second", "-n", tenant_ns)
    assert not pod["spec"].get("nodeName")

    _wait_for_service_account(kube, "default")
    _apply_in(kube, "default", claim_and_pod("outside", "gpu.nvidia.com"))
    outside = wait_until(
        lambda: (_claim_in(kube, "default", "outside").get("status") or {}).get("allocation"),
        "the free GPU allocated outside the tenant",
        60,
    )
    assert outside["devices"]["results"][0]["device"] != first["devices"]["results"][0]["device"]


def _wait_for_service_account(kube: RealKube, namespace: str) -> None:
    """Pods need the namespace's ``default`` ServiceAccount (kube-controller-manager's)."""
    command = ("get", "serviceaccount", "default", "-n", namespace)
    wait_until(
        lambda: kube.kubectl(*command, check=False).returncode == 0,
        f"the default ServiceAccount of {namespace}",
        60,
    )


def _failed_scheduling(kube: RealKube, namespace: str) -> str:
    events = kube.get_json(
        "events", "-n", namespace, "--field-selector", "involvedObject.name=second"
    )
    return "\n".join(
        e.get("message") or ""
        for e in events["items"]
        if e.get("reason") == "FailedScheduling" and "GPU memory quota" in (e.get("message") or "")
    )
