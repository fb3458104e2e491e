"""The ConfigMaps and Secrets a tenant's pods use get host twins (vCluster's default of
syncing only what pods reference): which references count, how the pod twin names them,
how host messages name them back, and the sync's life cycle of a twin (made before the
pod's, following changes, restored when deleted on the host, gone when no pod uses it).
The platform runs in-process (as in ``test_tenancy_convergence``)."""

from __future__ import annotations

from typing import Any

import pytest

from allot.controllers.context import ControllerContext
from allot.platform import Platform
from allot.tenancy.translate import pod_sources, sources_to_tenant, to_host
from tests.queueing_platform import run_with_platform, settle
from tests.test_tenancy_convergence import _prepare
from tests.test_tenancy_recreate import TENANT, _context, _create_as_tenant

Obj = dict[str, Any]
HOST_NS = f"tenant-{TENANT}"


def _every_reference() -> Obj:
    """A pod spec naming a ConfigMap or Secret at every place a pod can."""
    container = {
        "name": "c",
        "image": "x",
        "envFrom": [{"configMapRef": {"name": "cm-from"}}, {"secretRef": {"name": "s-from"}}],
        "env": [
            {"name": "A", "value": "literal"},
            {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm-key", "key": "k"}}},
            {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s-key", "key": "k"}}},
            {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    }
    projected = {"sources": [{"configMap": {"name": "cm-proj"}}, {"secret": {"name": "s-proj"}}]}
    return {
        "initContainers": [
            {"name": "i", "image": "x", "envFrom": [{"configMapRef": {"name": "cm-init"}}]}
        ],
        "containers": [container],
        "volumes": [
            {"name": "v1", "configMap": {"name": "cm-vol"}},
            {"name": "v2", "secret": {"secretName": "s-vol"}},
            {"name": "v3", "projected": projected},
            {"name": "v4", "emptyDir": {}},
        ],
        "imagePullSecrets": [{"name": "s-pull"}],
    }  # fmt: skip


EVERY_SOURCE = {
    ("ConfigMap", "cm-from"),
    ("ConfigMap", "cm-init"),
    ("ConfigMap", "cm-key"),
    ("ConfigMap", "cm-proj"),
    ("ConfigMap", "cm-vol"),
    ("Secret", "s-from"),
    ("Secret", "s-key"),
    ("Secret", "s-proj"),
    ("Secret", "s-pull"),
    ("Secret", "s-vol"),
}


def test_every_place_a_pod_names_a_source_is_found_and_translated() -> None:
    spec = _every_reference()
    assert pod_sources(spec) == EVERY_SOURCE
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}}
    twin = to_host("Pod", {**pod, "spec": spec}, TENANT)
    assert pod_sources(twin["spec"]) == {(kind, f"{name}.ml") for kind, name in EVERY_SOURCE}
    assert pod_sources(spec) == EVERY_SOURCE  # the tenant's own spec is left as it was
    env = twin["spec"]["containers"][0]["env"]
    assert env[0] == {"name": "A", "value": "literal"}
    name_field = "metadata.annotations['allot.dev/tenant-name']"  # the tenant's name
    assert env[3]["valueFrom"] == {"fieldRef": {"fieldPath": name_field}}
    assert twin["spec"]["hostname"] == "p"


def test_a_source_name_too_long_to_translate_is_left_as_it_is() -> None:
    long_name = "n" * 252  # with ".ml", past 253 characters
    spec = {"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": long_name}}]}]}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}}
    twin = to_host("Pod", {**pod, "spec": spec}, TENANT)
    assert pod_sources(twin["spec"]) == {("ConfigMap", long_name)}


@pytest.mark.parametrize(
    ("host_message", "tenant_message"),
    [
        ('configmap "settings.ml" not found', 'configmap "settings" not found'),
        (
            f"couldn't find key k in ConfigMap {HOST_NS}/settings.ml",
            "couldn't find key k in ConfigMap ml/settings",
        ),
        (
            f"couldn't find key k in Secret {HOST_NS}/creds.ml",
            "couldn't find key k in Secret ml/creds",
        ),
        ('configmap "other.ml" not found', 'configmap "other.ml" not found'),  # not the pod's
    ],
)  # fmt: skip
def test_host_messages_name_the_tenants_sources(host_message: str, tenant_message: str) -> None:
    sources = [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "creds"}}]
    spec = {"containers": [{"name": "c", "envFrom": sources}]}
    pod = {"metadata": {"name": "p", "namespace": "ml"}, "spec": spec}
    assert sources_to_tenant(host_message, HOST_NS, pod) == tenant_message


def _config_map(name: str, **data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


def _pod_reading(name: str, config_map: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "volumes": [{"name": "v", "configMap": {"name": config_map}}],
        },
    }


def _twin_data(host: ControllerContext, name: str) -> object:
    twin = host.get("ConfigMap", HOST_NS, f"{name}.default")
    return None if twin is None else twin.get("data")


def test_a_used_config_maps_twin_lives_as_long_as_a_pod_uses_it() -> None:
    async def body(api: Platform) -> None:
        await _prepare(api)
        host, tenant = _context(api, "host"), _context(api, TENANT)
        _create_as_tenant(api, _config_map("settings", mode="fast"))
        await settle(api)
        assert _twin_data(host, "settings") is None  # no pod uses it yet
        _create_as_tenant(api, _pod_reading("reader", "settings"))
        await settle(api)
        assert _twin_data(host, "settings") == {"mode": "fast"}
        twin_pod = host.get("Pod", HOST_NS, "reader.default")
        assert twin_pod is not None
        assert twin_pod["spec"]["volumes"][0]["configMap"]["name"] == "settings.default"
        changed = tenant.get("ConfigMap", "default", "settings")
        assert changed is not None
        changed["data"] = {"mode": "slow"}
        tenant.update("ConfigMap", changed, "test")
        await settle(api)
        assert _twin_data(host, "settings") == {"mode": "slow"}
        host.delete("ConfigMap", HOST_NS, "settings.default")
        await settle(api)
        assert _twin_data(host, "settings") == {"mode": "slow"}  # made again
        tenant_map = tenant.get("ConfigMap", "default", "settings")
        assert tenant_map is not None
        assert "allot.dev/host-uid" not in (tenant_map["metadata"].get("annotations") or {})
        tenant.delete("Pod", "default", "reader", {"gracePeriodSeconds": 0})
        await settle(api)
        assert _twin_data(host, "settings") is None
        assert tenant.get("ConfigMap", "default", "settings") is not None

    run_with_platform(body)


def test_a_host_object_of_the_twins_name_is_left_alone() -> None:
    async def body(api: Platform) -> None:
        await _prepare(api)
        host = _context(api, "host")
        admins = _config_map("settings.default", owner="admin")
        admins["metadata"]["namespace"] = HOST_NS
        host.create("ConfigMap", admins, "test")
        _create_as_tenant(api, _config_map("settings", mode="fast"))
        _create_as_tenant(api, _pod_reading("reader", "settings"))
        await settle(api)
        assert _twin_data(host, "settings") == {"owner": "admin"}

    run_with_platform(body)
