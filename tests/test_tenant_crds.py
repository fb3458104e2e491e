"""Each cluster serves its own CustomResourceDefinitions, as each vCluster has its own API
server: two tenants define ``widgets.example.com`` with different schemas and each gets its
own (decoding, validation, discovery, OpenAPI), the host and the other tenant see nothing
of a tenant's CRD, deleting a CRD deletes its objects in its cluster only, a removed
cluster leaves nothing registered in the process-wide tables (a tenant created again under
the name starts without CRDs), and a restart serves every cluster's CRDs again. The
registry is driven without HTTP."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from allot.api.errors import UnknownKindError
from allot.api.kinds import custom_kind_clusters
from allot.api.kinds import lookup as lookup_kind
from allot.apiserver import discovery, openapi
from allot.registry.admission import AdmissionDenied
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target, resolve_target
from allot.registry.resources import by_kind, custom_resource_clusters
from allot.statuses import InvalidObjectError
from tests.queueing_platform import host as host_context
from tests.queueing_platform import run_with_platform, settle

Obj = dict[str, Any]
A, B = "team-a", "team-b"
OPTIONS = WriteOptions(field_manager="test", field_validation="Strict", dry_run=False)


def widget_crd(size_type: str, *, group: str = "example.com") -> Obj:
    """``widgets.<group>``: a namespaced Widget whose ``spec.size`` is of ``size_type``."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": size_type, "jsonPath": ".spec.size"}
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["size"],
                                    "properties": {"size": {"type": size_type}},
                                },
                                "status": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


def widget(name: str, size: object, *, group: str = "example.com") -> Obj:
    return {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    }


def _create_crd(api: Registry, cluster: str, crd: Obj) -> None:
    target = Target(by_kind("CustomResourceDefinition"), None, None, "")
    api.handlers.create(cluster, target, crd, OPTIONS)


def _delete_crd(api: Registry, cluster: str, name: str) -> None:
    target = Target(by_kind("CustomResourceDefinition"), None, name, "")
    api.handlers.delete(cluster, target, {}, False)


def _widgets(cluster: str, group: str = "example.com") -> Target:
    target = resolve_target(cluster, group, "v1", "default", "widgets", None)
    assert target is not None, f"widgets.{group} is not served in {cluster}"
    return target


def _create_widget(api: Registry, cluster: str, obj: Obj) -> Obj:
    group = obj["apiVersion"].split("/")[0]
    return api.handlers.create(cluster, _widgets(cluster, group), obj, OPTIONS).object


def _names(api: Registry, cluster: str, group: str = "example.com") -> list[str]:
    resource = _widgets(cluster, group).resource
    items, _ = api.store.list_objects(cluster, resource.store, None)
    return [item["metadata"]["name"] for item in items]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Registry]:
    """The host and two tenant clusters; team-a's widgets have an integer size, team-b's a
    string size."""
    registry = Registry(tmp_path / "data")
    registry.add_cluster(A)
    registry.add_cluster(B)
    _create_crd(registry, A, widget_crd("integer"))
    _create_crd(registry, B, widget_crd("string"))
    yield registry
    registry.close()
    assert custom_resource_clusters() == []
    assert custom_kind_clusters() == []


def test_two_tenants_serve_the_same_group_and_plural_with_their_own_schemas(
    api: Registry,
) -> None:
    assert _create_widget(api, A, widget("w", 3))["spec"] == {"size": 3}
    assert _create_widget(api, B, widget("w", "large"))["spec"] == {"size": "large"}
    with pytest.raises(InvalidObjectError, match=r'must be of type integer: "string"'):
        _create_widget(api, A, widget("x", "large"))
    with pytest.raises(InvalidObjectError, match=r'must be of type string: "integer"'):
        _create_widget(api, B, widget("x", 3))
    assert _widgets(A).resource.columns == (("Size", "integer", ".spec.size"),)
    assert _widgets(B).resource.columns == (("Size", "string", ".spec.size"),)
    assert lookup_kind("example.com/v1", "Widget", A) is not lookup_kind(
        "example.com/v1", "Widget", B
    )


def test_a_tenants_crd_is_invisible_to_the_host_and_the_other_tenant(api: Registry) -> None:
    _create_crd(api, A, widget_crd("integer", group="only-a.example.com"))
    assert resolve_target(A, "only-a.example.com", "v1", "default", "widgets", None) is not None
    for other in ("host", B):
        assert resolve_target(other, "only-a.example.com", "v1", "default", "widgets", None) is None
        with pytest.raises(UnknownKindError, match='no matches for kind "Widget"'):
            lookup_kind("only-a.example.com/v1", "Widget", other)
        listed = discovery.aggregated(other, core=False)["items"]
        groups = [g["metadata"].get("name") for g in listed]
        assert "only-a.example.com" not in groups
        assert discovery.legacy_resources(other, "only-a.example.com", "v1") is None
        assert "apis/only-a.example.com/v1" not in openapi.index(other, "")["paths"]
        assert openapi.document_bytes(other, "only-a.example.com", "v1") is None
    assert resolve_target("host", "example.com", "v1", "default", "widgets", None) is None
    served = discovery.legacy_resources(A, "only-a.example.com", "v1")
    assert served is not None
    assert [r["name"] for r in served["resources"]] == [
        "widgets",
        "widgets/status",
    ]


def test_each_tenants_openapi_document_carries_its_own_schema(api: Registry) -> None:
    for cluster, size_type in ((A, "integer"), (B, "string")):
        assert "apis/example.com/v1" in openapi.index(cluster, "")["paths"]
        document = openapi.custom_document(cluster, "example.com", "v1")
        assert document is not None
        schema = document["components"]["schemas"]["com.example.v1.Widget"]
        assert schema["properties"]["spec"]["properties"]["size"] == {"type": size_type}
        assert schema["x-kubernetes-group-version-kind"] == [
            {"group": "example.com", "kind": "Widget", "version": "v1"}
        ]
        meta = schema["properties"]["metadata"]["allOf"][0]["$ref"].rpartition("/")[2]
        assert meta in document["components"]["schemas"]
        patch = document["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
        assert "fieldValidation" in [p["name"] for p in patch["patch"]["parameters"]]
        refs = set(re.findall(r'"#/components/schemas/([^"]+)"', json.dumps(document)))
        assert refs <= set(document["components"]["schemas"])


def test_deleting_a_crd_deletes_its_objects_in_its_cluster_only(api: Registry) -> None:
    _create_widget(api, A, widget("a1", 1))
    _create_widget(api, A, widget("a2", 2))
    _create_widget(api, B, widget("b1", "s"))
    _delete_crd(api, A, "widgets.example.com")
    assert resolve_target(A, "example.com", "v1", "default", "widgets", None) is None
    _create_crd(api, A, widget_crd("integer"))
    assert _names(api, A) == []
    assert _names(api, B) == ["b1"]


def test_a_removed_cluster_leaves_nothing_registered_and_starts_again_empty(
    api: Registry,
) -> None:
    _create_widget(api, A, widget("a1", 1))
    api.remove_cluster(A)
    assert A not in custom_resource_clusters()
    assert A not in custom_kind_clusters()
    assert resolve_target(A, "example.com", "v1", "default", "widgets", None) is None
    api.add_cluster(A)
    assert resolve_target(A, "example.com", "v1", "default", "widgets", None) is None
    _create_crd(api, A, widget_crd("string"))  # a new schema: nothing of the old one stays
    assert _names(api, A) == []
    assert _create_widget(api, A, widget("a1", "s"))["spec"] == {"size": "s"}
    assert _names(api, B) == []


def test_a_restart_serves_every_clusters_crds_again(api: Registry, tmp_path: Path) -> None:
    _create_widget(api, A, widget("a1", 1))
    _create_widget(api, B, widget("b1", "s"))
    api.close()
    assert custom_resource_clusters() == []
    again = Registry(tmp_path / "data")
    try:
        assert custom_resource_clusters() == [A, B]
        assert _names(again, A) == ["a1"]
        assert _names(again, B) == ["b1"]
        with pytest.raises(InvalidObjectError, match="must be of type integer"):
            _create_widget(again, A, widget("x", "s"))
        assert resolve_target("host", "example.com", "v1", "default", "widgets", None) is None
    finally:
        again.close()
    api.custom_resources.served.clear()  # closed above; the fixture closes it again


def test_a_tenants_quota_counts_its_own_custom_objects(api: Registry) -> None:
    """``count/widgets.example.com`` in team-a's namespace counts team-a's widgets only."""
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "widgets", "namespace": "default"},
        "spec": {"hard": {"count/widgets.example.com": "1"}},
    }
    api.handlers.create(A, Target(by_kind("ResourceQuota"), "default", None, ""), quota, OPTIONS)
    _create_widget(api, B, widget("b1", "s"))
    _create_widget(api, A, widget("a1", 1))
    with pytest.raises(AdmissionDenied, match="exceeded quota: widgets"):
        _create_widget(api, A, widget("a2", 2))
    _create_widget(api, B, widget("b2", "t"))


TENANT = "crd-team"
TENANT_OBJECT = {
    "apiVersion": "allot.dev/v1alpha1",
    "kind": "Tenant",
    "metadata": {"name": TENANT},
    "spec": {"deviceClassSelector": {"matchLabels": {"gpu.platform/tenant": TENANT}}},
}


def test_a_deleted_tenant_takes_its_crds_and_comes_back_without_them() -> None:
    """Through the whole platform (tenant guard in the chain, the tenant controller):
    the tenant creates its CRD and a widget as its own user; deleting the Tenant drops its
    cluster and unregisters its kinds; the tenant created again under the name serves no
    widgets until it defines them again, with a schema of its own."""

    async def body(platform: Any) -> None:
        registry: Registry = platform.registry
        tenant_user = WriteOptions("test", "Strict", False, user=f"system:allot:{TENANT}")
        host = host_context(platform)
        host.create("Tenant", TENANT_OBJECT, "test")
        await settle(platform)
        crds = Target(by_kind("CustomResourceDefinition"), None, None, "")
        registry.handlers.create(TENANT, crds, widget_crd("integer"), tenant_user)
        registry.handlers.create(TENANT, _widgets(TENANT), widget("w", 1), tenant_user)
        assert TENANT in custom_resource_clusters()
        host.delete("Tenant", "", TENANT)
        await settle(platform, rounds=10)
        assert host.get("Tenant", "", TENANT) is None
        assert TENANT not in custom_resource_clusters()
        assert TENANT not in custom_kind_clusters()
        host.create("Tenant", TENANT_OBJECT, "test")
        await settle(platform)
        assert resolve_target(TENANT, "example.com", "v1", "default", "widgets", None) is None
        registry.handlers.create(TENANT, crds, widget_crd("string"), tenant_user)
        created = registry.handlers.create(
            TENANT, _widgets(TENANT), widget("w", "s"), tenant_user
        ).object
        assert created["spec"] == {"size": "s"}
        assert _names(registry, TENANT) == ["w"]

    run_with_platform(body)


def test_a_crd_for_a_built_in_resource_in_another_version_is_not_served(api: Registry) -> None:
    """``deviceclasses.resource.k8s.io`` in ``v2`` would store its objects with the
    tenant's mirrored (read-only) DeviceClasses: stored, never served."""
    crd = widget_crd("integer", group="resource.k8s.io")
    crd["metadata"]["name"] = "deviceclasses.resource.k8s.io"
    crd["spec"]["names"] = {"kind": "DeviceClass", "plural": "deviceclasses"}
    crd["spec"]["scope"] = "Cluster"
    crd["spec"]["versions"][0]["name"] = "v2"
    _create_crd(api, A, crd)
    assert resolve_target(A, "resource.k8s.io", "v2", None, "deviceclasses", None) is None
    with pytest.raises(UnknownKindError):
        lookup_kind("resource.k8s.io/v2", "DeviceClass", A)
    assert discovery.legacy_resources(A, "resource.k8s.io", "v2") is None
