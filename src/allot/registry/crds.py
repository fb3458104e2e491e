"""Serving CustomResourceDefinitions: each CRD's served versions become served kinds.

The registry follows the CRDs of every cluster through store events (and the stored ones
at start): a served version becomes a kind of *that cluster* with a model that carries the
version's ``openAPIV3Schema`` (so writes are validated against it), its scope, names,
``status`` subresource and ``additionalPrinterColumns`` (kubectl's table). The host's CRDs
are the host's and a tenant's are its own, as each vCluster has its own API server: two
tenants may define the same group and plural with different schemas, and neither sees the
other's (nor the host's) in discovery, OpenAPI, REST or watches. Objects are stored like
any other, in their cluster. Deleting a CRD deletes its objects, as Kubernetes does; a
removed cluster (a deleted tenant) takes its CRDs with it (:meth:`forget_cluster`). A CRD
for a kind the server has built in (``tenants.allot.dev``, as ``allot render`` writes it),
or for a built-in resource in another version (whose objects would share its storage), is
stored and accepted, but only the built-in kind is served. Created by
:class:`allot.registry.clusters.Registry`.
"""

from __future__ import annotations

from allot.api.apiextensions_v1 import custom_model
from allot.api.kinds import KindInfo, is_builtin, register_kind, unregister_kind
from allot.registry.resources import (
    ServedResource,
    by_kind,
    lookup,
    register_custom,
    stored_as_built_in,
    unregister_custom,
)
from allot.store import Store, WatchEvent
from allot.store.objects import Resource
from allot.types import Obj

CRDS = "customresourcedefinitions.apiextensions.k8s.io"


class CustomResources:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.served: dict[tuple[str, str], list[ServedResource]] = {}
        """(cluster, CRD name) -> the versions that CRD serves there."""
        crds = by_kind("CustomResourceDefinition").store
        for cluster in store.clusters():  # a restart serves every cluster's CRDs again
            items, _ = store.list_objects(cluster, crds, None)
            for crd in items:
                self.register(cluster, crd)
        store.add_listener(self.on_event)

    def on_event(self, event: WatchEvent) -> None:
        if event.resource != CRDS:
            return
        if event.type == "DELETED":
            self.unregister(event.cluster, event.object, delete_objects=True)
        else:
            self.unregister(event.cluster, event.object, delete_objects=False)
            self.register(event.cluster, event.object)

    def register(self, cluster: str, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, kind, plural = spec.get("group", ""), names.get("kind", ""), names.get("plural", "")
        registered: list[ServedResource] = []
        if stored_as_built_in(group, plural):  # a tenant could write the catalogue through it
            self.served[(cluster, crd["metadata"]["name"])] = registered
            return
        for version in spec.get("versions") or []:
            name = version.get("name", "")
            if not version.get("served") or is_builtin(f"{group}/{name}", kind):
                continue
            if lookup(group, name, plural, cluster) is not None:
                continue
            resource = self._resource(spec, names, version)
            register_kind(cluster, resource.info)
            register_custom(cluster, resource)
            registered.append(resource)
        self.served[(cluster, crd["metadata"]["name"])] = registered

    @staticmethod
    def _resource(spec: Obj, names: Obj, version: Obj) -> ServedResource:
        schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
        info = KindInfo(
            spec.get("group", ""),
            version.get("name", ""),
            names.get("kind", ""),
            names.get("plural", ""),
            spec.get("scope") == "Namespaced",
            "subdomain",
            custom_model(names.get("kind", ""), version.get("name", ""), schema),
        )
        subresources = ("status",) if "status" in (version.get("subresources") or {}) else ()
        columns = tuple(
            (c.get("name", ""), c.get("type", "string"), c.get("jsonPath", ""))
            for c in version.get("additionalPrinterColumns") or []
        )
        return ServedResource(
            info,
            names.get("singular") or names.get("kind", "").lower(),
            tuple(names.get("shortNames") or ()),
            tuple(names.get("categories") or ()),
            subresources,
            columns,
            custom=True,
        )

    def close(self) -> None:
        """Stop serving this store's custom kinds (the registry is process-wide)."""
        for cluster, name in list(self.served):
            self.unregister(cluster, {"metadata": {"name": name}}, delete_objects=False)
        self.store.remove_listener(self.on_event)

    def forget_cluster(self, cluster: str) -> None:
        """Stop serving a removed cluster's custom kinds (its objects are gone with it), so
        a cluster created again under the name starts with none."""
        for owner, name in list(self.served):
            if owner == cluster:
                self.unregister(cluster, {"metadata": {"name": name}}, delete_objects=False)

    def unregister(self, cluster: str, crd: Obj, *, delete_objects: bool) -> None:
        for resource in self.served.pop((cluster, crd["metadata"]["name"]), []):
            unregister_custom(cluster, resource.group, resource.version, resource.plural)
            unregister_kind(cluster, resource.api_version, resource.kind)
            if delete_objects:
                self._delete_all(cluster, resource.store)

    def _delete_all(self, cluster: str, store_resource: Resource) -> None:
        items, _ = self.store.list_objects(cluster, store_resource, None)
        for item in items:
            namespace, name = item["metadata"].get("namespace", ""), item["metadata"]["name"]
            self.store.delete(cluster, store_resource, namespace, name)
