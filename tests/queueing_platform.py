"""An in-process platform (no HTTP) with seed 000's fleet and classes and tenants in
fair-sharing mode, for the admission controller's tests (``test_tenancy_queueing``): the
store, handlers, admission and controllers run on the test's asyncio loop."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml

from allot.controllers.context import ControllerContext
from allot.driver.fleet import SEED_000_FLEET, expand, parse_fleet
from allot.driver.publisher import device_classes, node_object
from allot.driver.slices import node_slices
from allot.platform import Platform, build
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.tenancy import names

Obj = dict[str, Any]
CLASSES = Path(__file__).resolve().parents[1] / "examples" / "tenancy" / "platform-classes.yaml"
NVIDIA = {"matchLabels": {"kubernetes.io/device.class": "nvidia"}}


async def start(data: Path) -> Platform:
    api = build(data)
    for hook in api.server.startup_hooks:
        await hook()
    return api


async def stop(api: Platform) -> None:
    for hook in api.server.shutdown_hooks:
        await hook()
    api.registry.close()


def run_with_platform(body: Callable[[Platform], Awaitable[None]]) -> None:
    """Run ``body`` on its own loop against a platform in a temporary data directory,
    stopped afterwards whatever happens."""

    async def main() -> None:
        with tempfile.TemporaryDirectory() as directory:
            api = await start(Path(directory))
            try:
                await body(api)
            finally:
                await stop(api)

    asyncio.run(main())


async def settle(api: Platform, rounds: int = 3) -> None:
    for _ in range(rounds):
        await api.controllers.idle(timeout=10)
        await asyncio.sleep(0.02)


def host(api: Platform) -> ControllerContext:
    return ControllerContext("host", api.registry.store, api.registry.handlers, api.registry.clock)


def tenant(api: Platform, name: str) -> ControllerContext:
    return ControllerContext(name, api.registry.store, api.registry.handlers, api.registry.clock)


def tenant_object(name: str, sharing: Obj, quota: Obj | None = None) -> Obj:
    spec: Obj = {"deviceClassSelector": NVIDIA, "sharing": sharing}
    if quota:
        spec["quota"] = quota
    return {
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "Tenant",
        "metadata": {"name": name},
        "spec": spec,
    }


async def prepare(api: Platform, tenants: list[Obj]) -> None:
    """Seed 000's fleet and corrected classes, then ``tenants`` (Tenant objects)."""
    ctx = host(api)
    for device_class in [*device_classes(), *yaml.safe_load_all(CLASSES.read_text())]:
        ctx.create("DeviceClass", device_class, "test")
    for spec in expand(parse_fleet(SEED_000_FLEET)):
        node = ctx.create("Node", node_object(spec), "test")
        for document in node_slices(
            spec.name, node["metadata"]["uid"], spec.gpus, dynamic_mig=spec.dynamic_mig
        ):
            ctx.create("ResourceSlice", document, "test")
    for item in tenants:
        ctx.create("Tenant", item, "test")
    await settle(api)


def write(api: Platform, cluster: str, obj: Obj) -> Obj:
    """Create ``obj`` in ``cluster`` as its own user (a tenant's kubectl)."""
    resource = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    options = WriteOptions("test", "Strict", False, user=f"system:allot:{cluster}")
    target = Target(resource, namespace, None, "")
    result: Obj = api.registry.handlers.create(cluster, target, obj, options).object
    return result


def template(name: str, device_class: str, count: int = 1) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "g", "exactly": {"deviceClassName": device_class, "count": count}}
                    ]
                }
            }
        },
    }


def pod(name: str, template_name: str, labels: Obj | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": _pod_spec(template_name),
    }


def _pod_spec(template_name: str) -> Obj:
    return {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        "resourceClaims": [{"name": "g", "resourceClaimTemplateName": template_name}],
        "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "g"}]}}],
    }


def job(name: str, template_name: str, parallelism: int, labels: Obj | None = None) -> Obj:
    spec = _pod_spec(template_name)
    spec["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {"metadata": {"labels": labels or {}}, "spec": spec},
        },
    }


def twin(api: Platform, tenant_name: str, pod_name: str) -> Obj | None:
    return host(api).get(
        "Pod", names.host_namespace(tenant_name), names.host_name(pod_name, "default")
    )


def condition(obj: Obj | None, kind: str) -> Obj | None:
    for item in ((obj or {}).get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return dict(item)
    return None


def events(api: Platform, cluster: str, namespace: str, name: str) -> list[str]:
    return [
        f"{e.get('reason')}: {e.get('message')}"
        for e in tenant(api, cluster).list("Event", namespace)
        if (e.get("involvedObject") or {}).get("name") == name
    ]
