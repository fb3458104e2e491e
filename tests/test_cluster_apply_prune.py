"""Which live objects ``allot apply`` prunes (``allot.cluster.apply.prunable``).

The live objects are built the way the cluster gets them: the platform file's own (as
``allot render`` makes them), and a Tenant created by ``allot tenant create`` (no
``managed-by`` label) with the namespace, params, bindings and quota the tenant
controller makes for it (:mod:`allot.tenancy.entitlement`, labelled ``managed-by`` too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from allot.api.tenancy import Tenant
from allot.cluster.apply import apply, list_served, prunable
from allot.cluster.render import objects_in_apply_order, read_platform, render
from allot.kube.client import Client
from allot.kube.errors import KubeNotFound
from allot.tenancy import entitlement

Obj = dict[str, Any]
PLATFORM = Path(__file__).resolve().parents[1] / "examples" / "platform" / "seed-000.yaml"


def _rendered(without: str | None = None) -> list[Obj]:
    documents = [d for d in yaml.safe_load_all(PLATFORM.read_text()) if d]
    kept = [d for d in documents if d["metadata"]["name"] != without]
    return objects_in_apply_order(render(read_platform(kept)))


def _live(obj: Obj) -> Obj:
    """As a list returns it: with server-set metadata."""
    return {**obj, "metadata": {**obj["metadata"], "uid": f"uid-{obj['metadata']['name']}"}}


def _created_tenant(name: str) -> tuple[Obj, list[Obj]]:
    """A Tenant as ``allot tenant create`` makes it, and what its controller adds."""
    tenant: Obj = {
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "Tenant",
        "metadata": {"name": name},
        "spec": {"quota": {"hard": {"count/resourceclaims.resource.k8s.io": "2"}}},
    }
    quota = entitlement.quota(Tenant.model_validate(tenant))
    assert quota is not None
    made = [
        entitlement.namespace(name),
        entitlement.params(name, ["gpu-slice"], []),
        entitlement.binding(name, entitlement.CLAIMS_POLICY),
        entitlement.binding(name, entitlement.PODS_POLICY),
        quota,
    ]
    return _live(tenant), [_live(o) for o in made]


def _names(objects: list[Obj]) -> list[str]:
    return [
        f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in objects
    ]


def _managed(objects: list[Obj]) -> list[Obj]:
    """What the apply lists: live objects labelled managed-by=allot."""
    return [
        o
        for o in objects
        if (o["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "allot"
    ]


def test_a_tenant_created_outside_the_platform_file_is_not_pruned() -> None:
    """The reported bug: ``allot tenant create tmpt`` then ``allot apply -f seed-000.yaml``
    pruned tmpt's namespace, params and bindings and left the Tenant."""
    rendered = _rendered()
    tenant, made = _created_tenant("tmpt")
    live = [_live(o) for o in rendered] + [tenant, *made]
    tenants = [o for o in live if o["kind"] == "Tenant"]
    assert _managed(made) == made  # labelled like the platform file's objects
    assert prunable(_managed(live), rendered, tenants) == []


def test_a_tenant_removed_from_the_platform_file_is_pruned_completely() -> None:
    live = [_live(o) for o in _rendered()]
    tenants = [o for o in live if o["kind"] == "Tenant"]
    smaller = _rendered(without="research-ai")
    assert _names(prunable(_managed(live), smaller, tenants)) == [
        "Namespace//tenant-research-ai",
        "ConfigMap/allot-system/entitlement-research-ai",
        "ValidatingAdmissionPolicyBinding//allot-tenant-claims.research-ai",
        "ValidatingAdmissionPolicyBinding//allot-tenant-pods.research-ai",
        "ResourceQuota/tenant-research-ai/tenant-quota",
        "Tenant//research-ai",
    ]


def test_a_tenant_of_the_file_loses_what_is_no_longer_rendered_for_it() -> None:
    """A rendered Tenant created imperatively first is part of the set: its quota, no
    longer in the file, goes."""
    rendered = _rendered()
    tenant, made = _created_tenant("legal-ai")
    without_quota = [o for o in rendered if o["kind"] != "ResourceQuota"]
    live = [tenant, *made]
    assert _names(prunable(_managed(live), without_quota, [tenant])) == [
        "ResourceQuota/tenant-legal-ai/tenant-quota"
    ]


def test_objects_of_a_tenant_that_is_gone_are_pruned() -> None:
    _, made = _created_tenant("gone")
    assert _names(prunable(_managed(made), _rendered(), [])) == _names(made)


def test_an_unlabelled_object_in_an_outside_tenants_namespace_is_kept() -> None:
    tenant, _ = _created_tenant("tmpt")
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {
            "name": "default",
            "namespace": "tenant-tmpt",
            "labels": {"app.kubernetes.io/managed-by": "allot"},
        },
    }
    assert prunable([queue], _rendered(), [tenant]) == []
    assert prunable([queue], _rendered(), []) == [queue]


class ServedVersions:
    """A cluster's list endpoint serving ``objects`` in their versions only (Kueue 0.14
    serves v1beta1 alone); any other version is not served, as the client reports it."""

    def __init__(self, objects: list[Obj]) -> None:
        self.objects = objects
        self.deleted: list[tuple[str, str, str, str | None]] = []

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             label_selector: str = "") -> list[Obj]:  # fmt: skip
        if not any(o["apiVersion"] == api_version and o["kind"] == kind for o in self.objects):
            raise KubeNotFound(
                f'the cluster does not serve {api_version} (no matches for kind "{kind}")'
            )
        return [o for o in self.objects if o["apiVersion"] == api_version and o["kind"] == kind]

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        self.deleted.append((api_version, kind, name, namespace))


def test_kueue_kinds_are_listed_and_pruned_in_v1beta1_where_v1beta2_is_not_served() -> None:
    old = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "gone", "labels": {"app.kubernetes.io/managed-by": "allot"}},
    }
    cluster = ServedVersions([old])
    client = cast(Client, cluster)
    assert list_served(client, "kueue.x-k8s.io/v1beta2", "ClusterQueue") == (
        "kueue.x-k8s.io/v1beta1",
        [old],
    )
    with pytest.raises(KubeNotFound):  # neither version served: no Kueue
        list_served(client, "kueue.x-k8s.io/v1beta2", "Cohort")
    with pytest.raises(KubeNotFound):  # only Kueue's kinds have an older version to try
        list_served(client, "allot.dev/v1alpha1", "Tenant")
    [action] = apply(client, []).actions
    assert action.line() == "clusterqueue/gone pruned"
    assert cluster.deleted == [("kueue.x-k8s.io/v1beta1", "ClusterQueue", "gone", None)]
