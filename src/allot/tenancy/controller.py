"""The tenant controller: from a Tenant object to a served, entitled virtual cluster.

For each Tenant on the host it keeps: a finalizer, the host namespace ``tenant-<name>``
labelled ``allot.dev/tenant`` (the label the bindings select, set only here), the virtual
cluster with its token and kubeconfig, the entitlement params, the shared policies and the
tenant's bindings, the ResourceQuota, and the status (phase, namespace, server URL,
entitled classes, conditions). A selector that matches no DeviceClass is reported as a
condition and a Warning Event. Deleting a Tenant deletes its host namespace (releasing
every device its claims held), its bindings and params, and the virtual cluster, then
lets the Tenant go. DeviceClass changes re-evaluate every tenant's entitlement. Built by
:mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.api.documents import clone_document
from allot.api.tenancy import Tenant, TenantStorage
from allot.controllers.context import ControllerContext
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.store import WatchEvent
from allot.store.errors import AlreadyExists
from allot.tenancy import entitlement, names
from allot.tenancy.directory import TenantDirectory, TenantEntry
from allot.types import Obj, rfc3339

MANAGER = "allot-tenant-controller"
FINALIZER = "allot.dev/tenant-cleanup"
TENANTS = "tenants.allot.dev"
CLASSES = "deviceclasses.resource.k8s.io"
POLICIES = "validatingadmissionpolicies.admissionregistration.k8s.io"
OWNED = frozenset(
    {
        "namespaces",  # tenant-<name>, and allot-system (the params)
        "configmaps",  # the params
        "resourcequotas",
        "validatingadmissionpolicybindings.admissionregistration.k8s.io",
    }
)
"""Host objects a tenant's reconcile makes: deleting one (``kubectl delete ns
tenant-<name>``) wakes the tenant, which makes it again, as a controller restores what it
owns."""


class TenantController:
    name = "tenants"
    watches = frozenset({TENANTS, CLASSES, POLICIES, *OWNED})  # what keys_for answers for

    def __init__(
        self, registry: Registry, host: ControllerContext, directory: TenantDirectory
    ) -> None:
        self.registry = registry
        self.host = host
        self.directory = directory

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.cluster != HOST_CLUSTER:
            return []
        if event.resource == TENANTS:
            return [event.object["metadata"]["name"]]
        if event.resource == CLASSES or (event.resource == POLICIES and event.type == "DELETED"):
            return [t["metadata"]["name"] for t in self.host.list("Tenant")]
        if event.type == "DELETED" and event.resource in OWNED:
            owner = _owning_tenant(event.resource, event.object)
            if owner is None:
                return []
            if self.directory.is_tenant(owner) or self.host.peek("Tenant", "", owner):
                return [owner]  # restore it, or (a Tenant being deleted) finish the tear-down
        return []

    def initial_keys(self) -> list[Hashable]:
        keys: list[Hashable] = []
        classes = self.host.list("DeviceClass")
        for obj in self.host.list("Tenant"):
            self._remember(obj, classes)
            keys.append(obj["metadata"]["name"])
        return keys

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, str)
        obj = self.host.get("Tenant", "", key)
        if obj is None:
            self.directory.drop(key)
            return
        if obj["metadata"].get("deletionTimestamp"):
            self._tear_down(obj)
            return
        if FINALIZER not in (obj["metadata"].get("finalizers") or []):
            obj["metadata"]["finalizers"] = [*(obj["metadata"].get("finalizers") or []), FINALIZER]
            obj = self.host.update("Tenant", obj, MANAGER)
        classes = self.host.list("DeviceClass")
        entry = self._remember(obj, classes)
        self._ensure_host_objects(entry, classes)
        self._ensure_cluster(key)
        self._write_status(obj, entry)

    # ------------------------------------------------------------------ set-up
    def _remember(self, obj: Obj, classes: list[Obj]) -> TenantEntry:
        tenant = Tenant.model_validate(obj)
        entry = TenantEntry(tenant, entitlement.entitled_classes(tenant, classes))
        self.directory.put(entry)
        storage = tenant.spec.storage or TenantStorage()
        self.registry.bound_storage(
            entry.name, storage.most_history_bytes(), storage.most_audit_file_bytes()
        )
        return entry

    def _ensure_host_objects(self, entry: TenantEntry, classes: list[Obj]) -> None:
        forbidden = entitlement.forbidden_extended_names(entry.entitled, classes)
        self._apply("Namespace", {**_namespace(names.PLATFORM_NAMESPACE)})
        self._apply("Namespace", entitlement.namespace(entry.name))
        self._apply("ConfigMap", entitlement.params(entry.name, entry.entitled, forbidden))
        for policy in (entitlement.claims_policy(), entitlement.pods_policy()):
            self._apply("ValidatingAdmissionPolicy", policy)
            self._apply(
                "ValidatingAdmissionPolicyBinding",
                entitlement.binding(entry.name, policy["metadata"]["name"]),
            )
        if _terminating(self.host.peek("Namespace", "", names.host_namespace(entry.name))):
            return  # deleted by hand: made again once gone (keys_for), the quota with it
        quota = entitlement.quota(entry.tenant)
        if quota is not None:
            self._apply("ResourceQuota", quota)
        else:
            self.host.delete(
                "ResourceQuota", names.host_namespace(entry.name), entitlement.QUOTA_NAME
            )

    def _apply(self, kind: str, desired: Obj) -> None:
        """Create ``desired`` or bring the stored object's labels and content to it."""
        metadata = desired["metadata"]
        current = self.host.get(kind, metadata.get("namespace", ""), metadata["name"])
        if current is None:
            try:
                self.host.create(kind, desired, MANAGER)
            except AlreadyExists:
                return
            return
        updated = clone_document(current)
        updated["metadata"]["labels"] = {
            **(current["metadata"].get("labels") or {}),
            **(metadata.get("labels") or {}),
        }
        for field in ("spec", "data"):
            if field in desired:
                updated[field] = desired[field]
        if kind == "Namespace":
            updated["spec"] = current.get("spec")
        if updated != current:
            self.host.update(kind, updated, MANAGER)

    def _ensure_cluster(self, name: str) -> None:
        fresh = name not in self.registry.tokens.clusters()
        self.registry.add_cluster(name)
        kubeconfig = self.registry.data_dir / "kubeconfigs" / f"{name}.yaml"
        if self.registry.url and (fresh or not kubeconfig.exists()):
            self.registry.write_kubeconfig(name)

    def _write_status(self, obj: Obj, entry: TenantEntry) -> None:
        now = rfc3339(self.host.clock())
        matched = bool(entry.entitled)
        condition = {
            "type": "Entitled",
            "status": "True" if matched else "False",
            "reason": "DeviceClassesMatched" if matched else "NoMatchingDeviceClasses",
            "message": (
                f"entitled to {len(entry.entitled)} device class(es)"
                if matched
                else "the device class selector matches no DeviceClass on the host"
            ),
            "lastTransitionTime": now,
        }
        previous = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}
        old = previous.get("Entitled")
        if old is not None and old.get("status") == condition["status"]:
            condition["lastTransitionTime"] = old.get("lastTransitionTime", now)
        status = {
            "phase": "Ready",
            "namespace": names.host_namespace(entry.name),
            "server": f"{self.registry.url}/clusters/{entry.name}" if self.registry.url else None,
            "entitledDeviceClasses": entry.entitled,
            "observedGeneration": obj["metadata"].get("generation"),
            "conditions": [condition],
        }
        status = {k: v for k, v in status.items() if v is not None}
        if status == obj.get("status"):
            return
        if not matched and (old is None or old.get("status") != "False"):
            self.host.event(
                obj, "Warning", "NoMatchingDeviceClasses", condition["message"], MANAGER
            )
        self.host.update_status("Tenant", {**obj, "status": status}, MANAGER)

    # --------------------------------------------------------------- tear-down
    def _tear_down(self, obj: Obj) -> None:
        """Delete what the tenant owns; the Tenant itself goes only once its host
        namespace is gone: the namespace stays ``Terminating`` while its claims are
        released, so ``allot tenant delete`` (which waits for the Tenant) returns when the
        devices are free, and a tenant created again under the name starts empty. The
        namespace's removal wakes this again (``keys_for``)."""
        name = obj["metadata"]["name"]
        self.directory.drop(name)
        for policy in (entitlement.CLAIMS_POLICY, entitlement.PODS_POLICY):
            self.host.delete("ValidatingAdmissionPolicyBinding", "", f"{policy}.{name}")
        self.host.delete("ConfigMap", names.PLATFORM_NAMESPACE, entitlement.params_name(name))
        self.host.delete("Namespace", "", names.host_namespace(name))
        if name in self.registry.tokens.clusters():
            self.registry.remove_cluster(name)
        if self.host.peek("Namespace", "", names.host_namespace(name)) is not None:
            return
        latest = self.host.get("Tenant", "", name)
        if latest is None:
            return
        latest["metadata"]["finalizers"] = [
            f for f in latest["metadata"].get("finalizers") or [] if f != FINALIZER
        ]
        self.host.update("Tenant", latest, MANAGER)


def _namespace(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": dict(entitlement.MANAGED_BY)},
    }


def _terminating(namespace: Obj | None) -> bool:
    return namespace is not None and bool(namespace["metadata"].get("deletionTimestamp"))


def _owning_tenant(resource: str, obj: Obj) -> str | None:
    """The tenant a deleted host object was made for: its ``allot.dev/tenant`` label, else
    the tenant whose host namespace it is (or lives in)."""
    metadata = obj["metadata"]
    labelled = (metadata.get("labels") or {}).get(names.TENANT_LABEL)
    if labelled:
        return str(labelled)
    namespace = metadata["name"] if resource == "namespaces" else metadata.get("namespace", "")
    return names.tenant_of_namespace(namespace)
