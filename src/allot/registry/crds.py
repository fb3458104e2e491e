"""Serving CustomResourceDefinitions: each CRD's served versions become served kinds.

The registry follows the host cluster's CRDs through store events (and the stored ones at
start): a served version becomes a kind with a model that carries the version's
``openAPIV3Schema`` (so writes are validated against it), its scope, names, ``status``
subresource and ``additionalPrinterColumns`` (kubectl's table). Discovery lists it;
objects are stored like any other. Deleting a CRD deletes its objects, as Kubernetes does.
A CRD for a kind the server has built in (``tenants.allot.dev``, as ``allot render``
writes it) is stored and accepted, but the built-in kind keeps being served. Created by
:class:`allot.registry.clusters.Registry`.
"""

from __future__ import annotations

from allot.api.apiextensions_v1 import custom_model
from allot.api.kinds import KindInfo, is_builtin, register_kind, unregister_kind
from allot.registry import HOST_CLUSTER
from allot.registry.resources import (
    ServedResource,
    by_kind,
    lookup,
    register_custom,
    unregister_custom,
)
from allot.store import Store, WatchEvent
from allot.store.objects import Resource
from allot.types import Obj

CRDS = "customresourcedefinitions.apiextensions.k8s.io"


class CustomResources:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.served: dict[str, list[ServedResource]] = {}
        items, _ = store.list_objects(HOST_CLUSTER, by_kind("CustomResourceDefinition").store, None)
        for crd in items:
            self.register(crd)
        store.add_listener(self.on_event)

    def on_event(self, event: WatchEvent) -> None:
        if event.cluster != HOST_CLUSTER or event.resource != CRDS:
            return
        if event.type == "DELETED":
            self.unregister(event.object, delete_objects=True)
        else:
            self.unregister(event.object, delete_objects=False)
            self.register(event.object)

    def register(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, kind, plural = spec.get("group", ""), names.get("kind", ""), names.get("plural", "")
        registered = []
        for version in spec.get("versions") or []:
            name = version.get("name", "")
            if not version.get("served") or is_builtin(f"{group}/{name}", kind):
                continue
            if lookup(group, name, plural) is not None:
                continue
            resource = self._resource(spec, names, version)
            register_kind(resource.info)
            register_custom(resource)
            registered.append(resource)
        self.served[crd["metadata"]["name"]] = registered

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
        for name in list(self.served):
            self.unregister({"metadata": {"name": name}}, delete_objects=False)
        self.store.remove_listener(self.on_event)

    def unregister(self, crd: Obj, *, delete_objects: bool) -> None:
        for resource in self.served.pop(crd["metadata"]["name"], []):
            unregister_custom(resource.group, resource.version, resource.plural)
            unregister_kind(resource.api_version, resource.kind)
            if delete_objects:
                self._delete_all(resource.store)

    def _delete_all(self, store_resource: Resource) -> None:
        items, _ = self.store.list_objects(HOST_CLUSTER, store_resource, None)
        for item in items:
            metadata = item["metadata"]
            self.store.delete(
                HOST_CLUSTER, store_resource, metadata.get("namespace", ""), metadata["name"]
            )
