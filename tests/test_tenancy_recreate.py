"""A tenant deleted and created again under the same name starts from nothing and sees
what a new tenant sees: its entitled classes and the host's slices trimmed to them.

The sync remembers per (tenant, slice) what a mirrored slice was computed from, to skip
recomputing it; deleting the tenant drops its cluster (and the mirrors) at once, so what
the sync remembers of that tenant must go too, or the re-created tenant never gets the
slices that did not change on the host. The platform runs in-process (as in
``test_tenancy_convergence``)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from allot.controllers.context import ControllerContext
from allot.platform import Platform
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.tenancy.sync import TenantSync
from tests.queueing_platform import run_with_platform
from tests.queueing_platform import settle as _settle
from tests.queueing_platform import start as _start
from tests.queueing_platform import stop as _stop
from tests.test_tenancy_convergence import _pod, _prepare

Obj = dict[str, Any]
TENANT = "research-ai"


def _context(api: Platform, cluster: str) -> ControllerContext:
    registry = api.registry
    return ControllerContext(cluster, registry.store, registry.handlers, registry.clock)


def _sync(api: Platform) -> TenantSync:
    found = [w.controller for w in api.controllers.workers if isinstance(w.controller, TenantSync)]
    assert len(found) == 1
    return found[0]


def _tenant_object(host: ControllerContext) -> Obj:
    tenant = host.get("Tenant", "", TENANT)
    assert tenant is not None
    return {
        "apiVersion": tenant["apiVersion"],
        "kind": "Tenant",
        "metadata": {"name": TENANT},
        "spec": tenant["spec"],
    }


def _delete_tenant(api: Platform) -> None:
    target = Target(by_kind("Tenant"), None, TENANT, "")
    api.registry.handlers.delete("host", target, {}, False, user="system:allot:host")


def _create_as_tenant(api: Platform, obj: Obj) -> None:
    resource = by_kind(obj["kind"])
    target = Target(resource, obj["metadata"].get("namespace"), None, "")
    options = WriteOptions("test", "Strict", False, user=f"system:allot:{TENANT}")
    api.registry.handlers.create(TENANT, target, obj, options)


def _view(api: Platform) -> tuple[list[str], dict[str, list[str]]]:
    """The tenant's classes and its slices' device names."""
    tenant = _context(api, TENANT)
    classes = sorted(c["metadata"]["name"] for c in tenant.list("DeviceClass"))
    slices = {
        s["metadata"]["name"]: sorted(d["name"] for d in s["spec"]["devices"])
        for s in tenant.list("ResourceSlice")
    }
    return classes, slices


def _remembered(sync: TenantSync, tenant: str) -> list[object]:
    """Every key the sync keeps about ``tenant`` (all its per-tenant state)."""
    keys: list[object] = [k for k in sync._slice_inputs if k[0] == tenant]
    keys += [k for k in sync._held if k[0] == tenant]
    keys += [k for k in sync.errors if k[0] == tenant]
    keys += [k for k in sync._last_conditions if k[0] == tenant]
    keys += [k for k in sync._clients if k == tenant]
    return keys


def test_recreated_tenant_sees_the_trimmed_slices_again() -> None:
    async def main() -> None:
        with tempfile.TemporaryDirectory() as directory:
            api = await _start(Path(directory))
            try:
                await _prepare(api)
                host = _context(api, "host")
                before = _view(api)
                assert before[0], "the tenant sees its classes at first"
                assert before[1], "and the slices trimmed to them"
                # a pod held for a claim that does not exist: the sync remembers it
                _create_as_tenant(api, _pod("missing"))
                await _settle(api)
                sync = _sync(api)
                assert _remembered(sync, TENANT)
                spec = _tenant_object(host)
                _delete_tenant(api)
                await _settle(api)
                assert host.get("Tenant", "", TENANT) is None
                assert _remembered(sync, TENANT) == []
                host.create("Tenant", spec, "test")
                await _settle(api)
                assert _view(api) == before
                assert _context(api, TENANT).list("Pod") == []
            finally:
                await _stop(api)

    asyncio.run(main())


def _owned(host: ControllerContext) -> dict[str, bool]:
    """Whether each host object the tenant controller makes for the tenant exists."""
    namespace = host.get("Namespace", "", f"tenant-{TENANT}")
    return {
        "namespace": namespace is not None
        and (namespace["metadata"].get("labels") or {}).get("allot.dev/tenant") == TENANT,
        "params": host.get("ConfigMap", "allot-system", f"entitlement-{TENANT}") is not None,
        "quota": host.get("ResourceQuota", f"tenant-{TENANT}", "tenant-quota") is not None,
        "bindings": all(
            host.get("ValidatingAdmissionPolicyBinding", "", f"{policy}.{TENANT}") is not None
            for policy in ("allot-tenant-claims", "allot-tenant-pods")
        ),
    }


def test_a_deleted_host_object_of_a_tenant_is_made_again() -> None:
    """``kubectl delete ns tenant-<name>`` (or of its params, quota or a binding) on the
    host: the tenant controller makes the object again, as a controller restores what it
    owns; the tenant keeps working (a pod created afterwards gets its twin)."""

    async def main() -> None:
        with tempfile.TemporaryDirectory() as directory:
            api = await _start(Path(directory))
            try:
                await _prepare(api)
                host = _context(api, "host")
                tenant = host.get("Tenant", "", TENANT)
                assert tenant is not None
                tenant["spec"]["quota"] = {"hard": {"pods": "5"}}
                host.update("Tenant", tenant, "test")
                await _settle(api)
                assert all(_owned(host).values()), _owned(host)
                for kind, namespace, name in (
                    ("ValidatingAdmissionPolicyBinding", "", f"allot-tenant-pods.{TENANT}"),
                    ("ConfigMap", "allot-system", f"entitlement-{TENANT}"),
                    ("ResourceQuota", f"tenant-{TENANT}", "tenant-quota"),
                    ("Namespace", "", f"tenant-{TENANT}"),
                ):
                    target = Target(by_kind(kind), namespace or None, name, "")
                    api.registry.handlers.delete("host", target, {}, False, user="admin")
                    await _settle(api)
                    assert all(_owned(host).values()), (kind, _owned(host))
                plain = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "after", "namespace": "default"},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                }
                _create_as_tenant(api, plain)
                await _settle(api)
                twins = host.list("Pod", f"tenant-{TENANT}")
                assert [p["metadata"]["name"] for p in twins] == ["after.default"]
            finally:
                await _stop(api)

    asyncio.run(main())


def _hold(host: ControllerContext, name: str) -> None:
    """An object in the tenant's host namespace that a finalizer keeps (as a claim's
    ``delete-protection`` keeps it until its devices are released)."""
    held = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": f"tenant-{TENANT}",
            "finalizers": ["example.com/hold"],
        },
    }
    host.create("ConfigMap", held, "test")


def _release(host: ControllerContext, name: str) -> None:
    held = host.get("ConfigMap", f"tenant-{TENANT}", name)
    assert held is not None
    held["metadata"]["finalizers"] = []
    host.update("ConfigMap", held, "test")


def test_a_tenant_goes_only_once_its_host_namespace_is_gone() -> None:
    """The host namespace stays ``Terminating`` while a finalizer holds something in it;
    the Tenant waits for it (``allot tenant delete`` returns when all is released), so a
    tenant created again starts with an empty namespace. A namespace deleted by hand is
    made again once it is gone, with the quota."""

    async def body(api: Platform) -> None:
        await _prepare(api)
        host = _context(api, "host")
        spec = _tenant_object(host)
        _hold(host, "held")
        _delete_tenant(api)
        await _settle(api)
        tenant = host.get("Tenant", "", TENANT)
        assert tenant is not None
        assert tenant["metadata"].get("deletionTimestamp")
        namespace = host.get("Namespace", "", f"tenant-{TENANT}")
        assert namespace is not None
        assert namespace["status"]["phase"] == "Terminating"
        _release(host, "held")
        await _settle(api)
        assert host.get("Namespace", "", f"tenant-{TENANT}") is None
        assert host.get("Tenant", "", TENANT) is None
        spec["spec"]["quota"] = {"hard": {"pods": "5"}}
        host.create("Tenant", spec, "test")
        await _settle(api)
        assert host.list("ConfigMap", f"tenant-{TENANT}") == []
        _hold(host, "again")
        target = Target(by_kind("Namespace"), None, f"tenant-{TENANT}", "")
        api.registry.handlers.delete("host", target, {}, False, user="admin")
        await _settle(api)
        assert _owned(host)["namespace"]
        assert not _owned(host)["quota"]
        _release(host, "again")
        await _settle(api)
        assert all(_owned(host).values()), _owned(host)

    run_with_platform(body)
