"""Property: after any interleaving of tenant and host operations, and after a restart,
the tenant and host views converge.

The platform runs in-process (store, handlers, admission, controllers on an asyncio loop;
no HTTP). Hypothesis draws a sequence of operations: tenants create and delete claims and
pods (some pods naming claims that do not exist), the host deletes twins and moves a class
between tenants; some operations run back to back, others let the controllers settle.
Then the platform is stopped and rebuilt on the same data directory. Invariants: every
synced tenant object has exactly one host twin (same uid), every host twin has its tenant
object, claim allocations agree, and each tenant sees exactly its entitled classes.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allot.controllers.context import ControllerContext
from allot.driver.fleet import SEED_000_FLEET, expand, parse_fleet
from allot.driver.publisher import device_classes, node_object
from allot.driver.slices import node_slices
from allot.platform import Platform
from allot.registry.admission import AdmissionDenied
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.statuses import RequestError
from allot.store import Store
from allot.store.errors import StoreError
from allot.tenancy import generated, names
from allot.tenancy.translate import tenant_object_name
from tests.queueing_platform import settle as _settle
from tests.queueing_platform import start as _start
from tests.queueing_platform import stop as _stop

Obj = dict[str, Any]
CLASSES = Path(__file__).resolve().parents[1] / "examples" / "tenancy" / "platform-classes.yaml"
TENANTS = ("legal-ai", "research-ai")
CLAIM_NAMES = ("a", "b")
OPERATION = st.one_of(
    st.tuples(st.just("claim"), st.sampled_from(TENANTS), st.sampled_from(CLAIM_NAMES)),
    st.tuples(st.just("delete-claim"), st.sampled_from(TENANTS), st.sampled_from(CLAIM_NAMES)),
    st.tuples(st.just("pod"), st.sampled_from(TENANTS), st.sampled_from(CLAIM_NAMES)),
    st.tuples(st.just("delete-pod"), st.sampled_from(TENANTS), st.sampled_from(CLAIM_NAMES)),
    st.tuples(st.just("host-delete"), st.sampled_from(TENANTS), st.sampled_from(CLAIM_NAMES)),
    st.tuples(st.just("move-class"), st.sampled_from(TENANTS), st.just("")),
    st.tuples(st.just("template-pod"), st.sampled_from(TENANTS), st.sampled_from(CLAIM_NAMES)),
    st.tuples(
        st.just("delete-template-pod"), st.sampled_from(TENANTS), st.sampled_from(CLAIM_NAMES)
    ),
)
STEP = st.tuples(OPERATION, st.booleans())


def _write(api: Platform, cluster: str, verb: str, obj: Obj) -> None:
    resource = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    options = WriteOptions("test", "Strict", False, user=f"system:allot:{cluster}")
    try:
        if verb == "create":
            api.registry.handlers.create(
                cluster, Target(resource, namespace, None, ""), obj, options
            )
        else:
            target = Target(resource, namespace, obj["metadata"]["name"], "")
            api.registry.handlers.delete(cluster, target, {}, False, user=options.user)
    except (RequestError, StoreError):
        return  # refused or already there/gone: part of the interleaving


def _claim(tenant: str, name: str) -> Obj:
    device_class = "gpu-whole" if tenant == "legal-ai" else "gpu-slice"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": device_class}}]}
        },
    }


def _pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{name}", "namespace": "default"},
        "spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "resourceClaims": [{"name": "g", "resourceClaimName": name}],
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "g"}]}}],
        },
    }


def _template(tenant: str) -> Obj:
    claim = _claim(tenant, "t")
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": claim["metadata"],
        "spec": {"spec": claim["spec"]},
    }


def _template_pod(name: str) -> Obj:
    pod = _pod(name)
    pod["metadata"]["name"] = f"tpod-{name}"
    pod["spec"]["resourceClaims"] = [{"name": "g", "resourceClaimTemplateName": "t"}]
    return pod


def _apply(api: Platform, operation: tuple[str, str, str], owner: dict[str, str]) -> None:
    verb, tenant, name = operation
    if verb == "claim":
        _write(api, tenant, "create", _claim(tenant, name))
    elif verb == "delete-claim":
        _write(api, tenant, "delete", _claim(tenant, name))
    elif verb == "pod":
        _write(api, tenant, "create", _pod(name))
    elif verb == "delete-pod":
        _write(api, tenant, "delete", _pod(name))
    elif verb == "template-pod":
        _write(api, tenant, "create", _template_pod(name))
    elif verb == "delete-template-pod":
        _write(api, tenant, "delete", _template_pod(name))
    elif verb == "host-delete":
        twin = _claim(tenant, names.host_name(name, "default"))
        twin["metadata"]["namespace"] = names.host_namespace(tenant)
        _write(api, "host", "delete", twin)
    else:
        host = ControllerContext(
            "host", api.registry.store, api.registry.handlers, api.registry.clock
        )
        device_class = host.get("DeviceClass", "", "gpu-whole")
        if device_class is not None:
            device_class["metadata"]["labels"]["gpu.platform/tenant"] = tenant
            host.update("DeviceClass", device_class, "test")
            owner["gpu-whole"] = tenant


async def _prepare(api: Platform) -> None:
    host = ControllerContext("host", api.registry.store, api.registry.handlers, api.registry.clock)
    for device_class in [*device_classes(), *yaml.safe_load_all(CLASSES.read_text())]:
        host.create("DeviceClass", device_class, "test")
    for spec in expand(parse_fleet(SEED_000_FLEET)):
        node = host.create("Node", node_object(spec), "test")
        for document in node_slices(
            spec.name, node["metadata"]["uid"], spec.gpus, dynamic_mig=spec.dynamic_mig
        ):
            host.create("ResourceSlice", document, "test")
    for tenant in TENANTS:
        selector = {"matchLabels": {"gpu.platform/tenant": tenant}}
        host.create(
            "Tenant",
            {
                "apiVersion": "allot.dev/v1alpha1",
                "kind": "Tenant",
                "metadata": {"name": tenant},
                "spec": {"deviceClassSelector": selector},
            },
            "test",
        )
    await _settle(api)
    for tenant in TENANTS:
        _write(api, tenant, "create", _template(tenant))
    await _settle(api)


def _check_converged(api: Platform, owner: dict[str, str]) -> None:
    host = ControllerContext("host", api.registry.store, api.registry.handlers, api.registry.clock)
    for tenant in TENANTS:
        ctx = ControllerContext(
            tenant, api.registry.store, api.registry.handlers, api.registry.clock
        )
        namespace = names.host_namespace(tenant)
        _check_views(host, ctx, namespace)
        for kind in ("ResourceClaim", "Pod"):
            tenant_objects = {
                o["metadata"]["name"]: o
                for o in ctx.list(kind, "default")
                if not generated.is_mirror(o) and not o["metadata"]["name"].startswith("tpod-")
            }
            twins = [t for t in host.list(kind, namespace) if tenant_object_name(t) is not None]
            twins = [t for t in twins if not t["metadata"]["name"].startswith("tpod-")]
            origins = [
                (t["metadata"].get("annotations") or {}).get(names.NAME_ANNOTATION) for t in twins
            ]
            assert len(origins) == len(set(origins)), f"duplicate twins in {namespace}"
            for twin in twins:
                origin = (twin["metadata"].get("annotations") or {})[names.NAME_ANNOTATION]
                assert origin in tenant_objects, f"orphan twin {twin['metadata']['name']}"
                mine = tenant_objects[origin]
                assert (
                    twin["metadata"]["annotations"][names.UID_ANNOTATION] == mine["metadata"]["uid"]
                )
                if kind == "ResourceClaim":
                    host_allocation = (twin.get("status") or {}).get("allocation")
                    assert (mine.get("status") or {}).get("allocation") == host_allocation
            for name, mine in tenant_objects.items():
                synced = names.host_name(name, "default") in {t["metadata"]["name"] for t in twins}
                if kind == "ResourceClaim":
                    refused = _sync_refused(ctx, name)  # its class left between admission and sync
                    assert synced or refused, f"claim {name} of {tenant} has no twin"
                else:
                    claim = mine["spec"]["resourceClaims"][0]["resourceClaimName"]
                    assert synced == (
                        claim
                        in {c["metadata"]["name"] for c in ctx.list("ResourceClaim", "default")}
                    )
        visible = sorted(c["metadata"]["name"] for c in ctx.list("DeviceClass"))
        expected = sorted(
            n for n, t in {"gpu-slice": "research-ai", **owner}.items() if t == tenant
        )
        assert visible == expected, (tenant, visible, expected)


def _sync_refused(ctx: ControllerContext, claim: str) -> bool:
    """Whether the host refused the claim's twin (a ``SyncError`` Event on it)."""
    return any(
        e.get("reason") == "SyncError" and e["involvedObject"]["name"] == claim
        for e in ctx.list("Event", "default")
    )


def _check_views(host: ControllerContext, ctx: ControllerContext, namespace: str) -> None:
    """The tenant's nodes are those its twins are bound to; its mirrored claims are exactly
    the claims generated for its pods' twins, owned by those pods."""
    twins = [t for t in host.list("Pod", namespace) if tenant_object_name(t) is not None]
    bound = {t["spec"]["nodeName"] for t in twins if t["spec"].get("nodeName")}
    assert {n["metadata"]["name"] for n in ctx.list("Node")} == bound
    pods = {p["metadata"]["name"]: p for p in ctx.list("Pod", "default")}
    expected = {}
    for twin in twins:
        pod = pods[tenant_object_name(twin)[1]]  # type: ignore[index]
        for entry in (twin.get("status") or {}).get("resourceClaimStatuses") or []:
            host_claim = host.get("ResourceClaim", namespace, entry["resourceClaimName"])
            if host_claim is not None and generated.generated_for(twin, host_claim):
                tenant_name = generated.tenant_claim_name(
                    pod["metadata"]["name"], entry["name"], entry["resourceClaimName"]
                )
                expected[tenant_name] = pod["metadata"]["uid"]
    mirrors = {
        c["metadata"]["name"]: c["metadata"]["ownerReferences"][0]["uid"]
        for c in ctx.list("ResourceClaim", "default")
        if generated.is_mirror(c)
    }
    assert mirrors == expected
    for pod in pods.values():
        for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            assert entry["resourceClaimName"] in mirrors


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=12))
def test_views_converge_after_interleavings_and_restart(steps: list[Any]) -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory() as directory:
            data = Path(directory)
            api = await _start(data)
            owner = {"gpu-whole": "legal-ai"}
            await _prepare(api)
            for operation, settle in steps:
                _apply(api, operation, owner)
                if settle:
                    await _settle(api)
            await _settle(api)
            _check_converged(api, owner)
            await _stop(api)
            again = await _start(data)
            await _settle(again)
            _check_converged(again, owner)
            await _stop(again)

    asyncio.run(scenario())


async def _with_synced_claim(data: Path) -> tuple[Platform, dict[str, Any]]:
    """A started platform where legal-ai's claim "a" has its host twin."""
    api = await _start(data)
    await _prepare(api)
    _write(api, "legal-ai", "create", _claim("legal-ai", "a"))
    await _settle(api)
    claim = api.registry.store.get("legal-ai", by_kind("ResourceClaim").store, "default", "a")
    return api, claim


def test_a_twin_deleted_while_the_platform_is_down_is_followed_not_recreated() -> None:
    """The twin's uid recorded on the tenant object survives the restart: a twin that is gone
    deletes its tenant object; a tenant object that never had a twin gets one."""

    async def scenario() -> None:
        with tempfile.TemporaryDirectory() as directory:
            data = Path(directory)
            api, claim = await _with_synced_claim(data)
            twin_name = names.host_name("a", "default")
            twin = api.registry.store.get(
                "host", by_kind("ResourceClaim").store, "tenant-legal-ai", twin_name
            )
            annotations = claim["metadata"]["annotations"]
            assert annotations[names.HOST_UID_ANNOTATION] == twin["metadata"]["uid"]
            await _stop(api)
            down = Store(data / "state.db")  # while down: the twin goes, "b" arrives unsynced
            down.delete("host", by_kind("ResourceClaim").store, "tenant-legal-ai", twin_name)
            stored = _claim("legal-ai", "b")  # as the API server stores it: defaulted
            exactly = stored["spec"]["devices"]["requests"][0]["exactly"]
            exactly.update(allocationMode="ExactCount", count=1)
            down.create("legal-ai", by_kind("ResourceClaim").store, stored)
            down.close()
            again = await _start(data)
            await _settle(again)
            tenant = ControllerContext(
                "legal-ai", again.registry.store, again.registry.handlers, again.registry.clock
            )
            host = ControllerContext(
                "host", again.registry.store, again.registry.handlers, again.registry.clock
            )
            assert [c["metadata"]["name"] for c in tenant.list("ResourceClaim")] == ["b"]
            twins = host.list("ResourceClaim", "tenant-legal-ai")
            assert [t["metadata"]["name"] for t in twins] == [names.host_name("b", "default")]
            await _stop(again)

    asyncio.run(scenario())


def test_a_tenant_cannot_change_the_recorded_twin() -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory() as directory:
            api, claim = await _with_synced_claim(Path(directory))
            claim["metadata"]["annotations"][names.HOST_UID_ANNOTATION] = "forged"
            resource = by_kind("ResourceClaim")
            options = WriteOptions("test", "Strict", False, user="system:allot:legal-ai")
            with pytest.raises(AdmissionDenied, match="prefix is reserved for the platform"):
                api.registry.handlers.update(
                    "legal-ai", Target(resource, "default", "a", ""), claim, options
                )
            await _stop(api)

    asyncio.run(scenario())


def test_a_pod_deleted_while_the_platform_is_down_releases_its_claim() -> None:
    """The pod's delete event never comes: the claim's reservation is checked at start."""

    async def scenario() -> None:
        with tempfile.TemporaryDirectory() as directory:
            data = Path(directory)
            api = await _start(data)
            await _prepare(api)
            _write(api, "legal-ai", "create", _claim("legal-ai", "a"))
            _write(api, "legal-ai", "create", _pod("a"))
            await _settle(api)
            claims = by_kind("ResourceClaim").store
            twin = names.host_name("a", "default")
            held = api.registry.store.get("host", claims, "tenant-legal-ai", twin)
            assert held["status"]["reservedFor"]
            await _stop(api)
            down = Store(data / "state.db")
            pod_twin = names.host_name("pod-a", "default")
            down.delete("host", by_kind("Pod").store, "tenant-legal-ai", pod_twin)
            down.close()
            again = await _start(data)
            await _settle(again)
            released = again.registry.store.get("host", claims, "tenant-legal-ai", twin)
            assert "reservedFor" not in released["status"]
            assert "allocation" not in released["status"]
            await _stop(again)

    asyncio.run(scenario())
