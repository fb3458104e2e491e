"""The admission plugin of tenant clusters: what a tenant may write in its own cluster.

A tenant cannot write DeviceClasses or ResourceSlices (the catalogue and the inventory are
the platform's; the sync mirrors them read-only), cannot create Tenants or Alerts (its own
CustomResourceDefinitions it may: their kinds are its cluster's alone, see
:mod:`allot.registry.crds`, and only their objects' metadata and storage are judged here),
and cannot set or change ``allot.dev/`` labels or annotations (those mark host twins, and
the sync's record of a tenant object's twin), nor the
``resource.kubernetes.io/extended-resource-claim`` annotation that marks the scheduler's
claim for a pod's extended resources; a template's ``spec.metadata`` (copied into the claims
made from it) included. What the host decides stays the host's: the ``status`` of claims and
pods (allocation, ``reservedFor``, phase) and their ``binding`` are written only by the
platform, and a pod's ``spec.nodeName`` is never the tenant's to set (the host scheduler
places the twin). A claim, template or pod is checked against the host before it is
accepted: its host twin is created in dry-run, so entitlement policies and quotas refuse it
*in the tenant's own request*, with the host's message, instead of leaving an unsynced
object behind as vCluster does; a Deployment, ReplicaSet, StatefulSet, DaemonSet,
ReplicationController, Job or CronJob is
checked the same way when it is created or its pod template changes (a pod made from the
template is dry-run on the host), so a template the host would refuse is refused with the
workload, not pod by pod later. Writes of the workload controllers in a tenant cluster
(``system:serviceaccount:kube-system:...``) are the tenant's and are judged like its own.
Nodes are read-only (the sync shows the host nodes the tenant's pods run on), and so are the
claims generated for its pods from templates (:mod:`allot.tenancy.generated`), which go with
their pods. Every write is held to the tenant's storage limits (``spec.storage``: objects
and bytes its cluster may keep in the platform's store, the mirrored catalogue included;
10,000 and 256Mi by default). Names whose host translation would be too long are refused
here too. Registered by :mod:`allot.platform`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from allot.api.tenancy import TenantStorage
from allot.registry import HOST_CLUSTER
from allot.registry.admission import AdmissionDenied, AdmissionRequest, Operation
from allot.registry.handlers import Handlers, WriteOptions
from allot.registry.quota import EXTENDED_CLAIM_ANNOTATION
from allot.registry.requests import Target
from allot.registry.resources import ServedResource, by_kind
from allot.statuses import InvalidObjectError
from allot.store.errors import NotFound
from allot.tenancy import generated, names
from allot.tenancy.directory import TenantDirectory
from allot.tenancy.translate import to_host
from allot.types import Obj
from allot.validation.field import Path, invalid

PLATFORM_KINDS = ("DeviceClass", "ResourceSlice")
HOST_ONLY_KINDS = ("Tenant", "Alert")
SYNCED_KINDS = ("ResourceClaim", "ResourceClaimTemplate", "Pod")
WORKLOAD_TEMPLATES = (
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "ReplicationController",
    "Job",
    "CronJob",
)
"""Kinds whose pod template is dry-run on the host as a pod (see ``_preflight_template``)."""
HOST_SUBRESOURCES: dict[str, Callable[[ServedResource], str]] = {
    "status": lambda resource: (
        f"the status of {resource.plural} in a tenant cluster is the host's: the platform "
        "copies it from the host twin (allocation, reservedFor, node, phase), so a tenant "
        "may not write it"
    ),
    "binding": lambda _: (
        "pods/binding is the host scheduler's: a tenant pod is bound when its host twin is "
        "scheduled where its claims' devices are"
    ),
}
"""Subresources of synced kinds that only the platform writes, with the refusal."""


class TenantGuard:
    def __init__(
        self,
        handlers: Handlers,
        directory: TenantDirectory,
        retained: Callable[[str], int] = lambda cluster: 0,
    ) -> None:
        """``retained``: the bytes a cluster keeps beside its objects' bodies (its watch
        history, its admission audit), counted against its storage bytes."""
        self.handlers = handlers
        self.directory = directory
        self.retained = retained

    def _gated(self, tenant: str) -> bool:
        """A fair-sharing tenant's twins are created gated: the dry run creates the same."""
        entry = self.directory.get(tenant)
        return entry is not None and entry.tenant.spec.sharing is not None

    def forbids(self, cluster: str, resource: ServedResource, subresource: str) -> str | None:
        """Why a tenant may not write ``resource`` at all (whatever the object): the
        catalogue, nodes, host-only kinds and the host's subresources; None for a host
        cluster or a kind the tenant writes (its objects are judged in ``admit``)."""
        entry = self.directory.get(cluster)
        if entry is None or resource.custom:  # the tenant's own CRDs' kinds are its own
            return None
        kind = resource.kind
        if kind in PLATFORM_KINDS:
            entitled = ", ".join(entry.entitled) or "<none>"
            return (
                f"{resource.plural} are the platform's and read-only in a tenant "
                f"cluster; tenant {entry.name} can use the device classes: {entitled}"
            )
        if kind == "Node":
            return (
                "nodes are the host's and read-only in a tenant cluster: a host node is shown "
                "here while pods of the tenant are bound to it (sync.fromHost.nodes)"
            )
        if kind in HOST_ONLY_KINDS:
            return f"{resource.plural} are managed on the host cluster"
        if kind in SYNCED_KINDS and subresource in HOST_SUBRESOURCES:
            return HOST_SUBRESOURCES[subresource](resource)
        return None

    def admit(self, request: AdmissionRequest) -> list[str]:
        entry = self.directory.get(request.cluster)
        if entry is None or request.internal:
            return []
        kind = built_in_kind(request.resource)
        refusal = self.forbids(request.cluster, request.resource, request.subresource)
        if refusal is not None:
            raise AdmissionDenied(request.resource, request.name, refusal)
        if request.object is not None and request.operation is not Operation.DELETE:
            self._check_metadata(request)
            self._check_storage(request, entry.tenant.spec.storage, entry.name)
        if kind == "Pod" and request.object is not None:
            self._check_node_name(request)
        if kind in SYNCED_KINDS and request.operation is Operation.CREATE:
            self._preflight(request, entry.name)
        if kind == "ResourceClaim" and request.old_object is not None:
            self._check_mirror(request)
        if kind in WORKLOAD_TEMPLATES and request.object is not None and not request.subresource:
            self._preflight_template(request, entry.name)
        return []

    def _check_mirror(self, request: AdmissionRequest) -> None:
        """A claim generated for a pod from a template is the host's, shown read-only: it
        goes with its pod (a delete once the pod is gone or terminating passes, for the
        tenant's garbage collector)."""
        assert request.old_object is not None
        old = request.old_object.to_wire()
        pod = generated.owner_pod(old)
        if pod is None:
            return
        if request.operation is Operation.DELETE and not self._running_pod(request, pod):
            return
        raise AdmissionDenied(
            request.resource,
            request.name,
            f"the claim was generated from a ResourceClaimTemplate for pod {pod} and is "
            "read-only in a tenant cluster: it goes when its pod is deleted",
        )

    def _running_pod(self, request: AdmissionRequest, name: str) -> bool:
        """Whether pod ``name`` exists in the request's namespace and is not terminating."""
        try:
            pod = self.handlers.store.get(
                request.cluster, by_kind("Pod").store, request.namespace, name
            )
        except NotFound:
            return False
        return not pod["metadata"].get("deletionTimestamp")

    def _preflight_template(self, request: AdmissionRequest, tenant: str) -> None:
        """A workload whose pods the host would refuse is refused itself, when it is
        created or its pod template changes: a pod made from the template goes through
        the pods' dry run (entitlement policies, revoked classes, the sandbox rules). Quota
        is left to each pod's creation, as upstream (the controller's FailedCreate)."""
        assert request.object is not None
        path, template = workload_template(request.resource.kind, request.object.to_wire())
        if template is None:
            return
        if request.old_object is not None:
            _, old = workload_template(request.resource.kind, request.old_object.to_wire())
            if old == template:
                return
        pod = pod_of_template(template, request.name or "preflight", request.namespace)
        try:
            self._dry_run_pod(pod, tenant)
        except AdmissionDenied as denied:
            if denied.cause.startswith("exceeded quota:"):
                return
            raise AdmissionDenied(
                request.resource,
                request.name,
                f"{path}: a pod from this template is refused: {denied.cause}",
                denied.reason,
            ) from None
        except names.NameTooLong:
            return  # the pods' own names are checked when they are created

    def _dry_run_pod(self, pod: Obj, tenant: str) -> None:
        twin = to_host("Pod", pod, tenant, self._gated(tenant))
        target = Target(by_kind("Pod"), names.host_namespace(tenant), None, "")
        options = WriteOptions(field_manager="", field_validation="Ignore", dry_run=True)
        try:
            self.handlers.create(HOST_CLUSTER, target, twin, options)
        except InvalidObjectError as refused:
            details = "; ".join(str(e) for e in refused.errors)
            raise AdmissionDenied(
                by_kind("Pod"), pod["metadata"]["name"], f"the host refuses it: {details}"
            ) from None

    def _check_storage(
        self, request: AdmissionRequest, storage: TenantStorage | None, tenant: str
    ) -> None:
        """A tenant's cluster holds at most so many objects and bytes of the platform's
        store (``spec.storage``), so no tenant can fill the platform's disk or memory: the
        bytes of its objects, of the watch history they leave and of its admission audit."""
        assert request.object is not None
        objects, size = self.handlers.store.usage(request.cluster)
        retained = self.retained(request.cluster)
        storage = storage or TenantStorage()
        most_objects, most_bytes = storage.most_objects(), storage.most_bytes()
        adding = len(json.dumps(request.object.to_wire(), separators=(",", ":")))
        if request.old_object is not None:  # what it replaces, as the store holds it
            store, resource = self.handlers.store, request.resource.store
            adding -= store.stored_size(request.cluster, resource, request.namespace, request.name)
        creating = 1 if request.operation is Operation.CREATE else 0
        held = f"objects {size}, their watch history and the admission audit {retained}; "
        for key, used, more, most, counted in (
            ("objects", objects, creating, most_objects, ""),
            ("bytes", size + retained, adding, most_bytes, held),
        ):
            if more > 0 and used + more > most:
                raise AdmissionDenied(
                    request.resource,
                    request.name,
                    f"exceeded quota: tenant-storage, requested: {key}={more}, used: "
                    f"{key}={used}, limited: {key}={most} (spec.storage.{key} of Tenant "
                    f"{tenant}: {counted}delete objects of its cluster, or ask the platform "
                    "owner to raise it)",
                )

    @staticmethod
    def _check_metadata(request: AdmissionRequest) -> None:
        """No ``allot.dev/`` key, nor the scheduler's extended-resource-claim annotation, is
        set or changed by a tenant: in an object's metadata or, for a template, in the
        metadata it gives its claims (``spec.metadata``)."""
        assert request.object is not None
        new = request.object.to_wire()
        old = request.old_object.to_wire() if request.old_object is not None else {}
        blocks = _metadata_blocks(built_in_kind(request.resource), new, old)
        for path, metadata, old_metadata in blocks:
            for field, key in _reserved_keys(metadata):
                if request.old_object is not None and _value(metadata, field, key) == _value(
                    old_metadata, field, key
                ):
                    continue  # kept unchanged is fine
                raise AdmissionDenied(request.resource, request.name, _refusal(path, field, key))

    @staticmethod
    def _check_node_name(request: AdmissionRequest) -> None:
        """A tenant pod is placed by the host scheduler (where its claims' devices are),
        never by a node name the tenant presets or patches in."""
        assert request.object is not None
        node = request.object.to_wire().get("spec", {}).get("nodeName")
        old = request.old_object.to_wire().get("spec", {}) if request.old_object else {}
        if node and node != old.get("nodeName"):
            raise AdmissionDenied(
                request.resource,
                request.name,
                f"spec.nodeName: Forbidden: {node!r} is not the tenant's to choose: the host "
                "scheduler places tenant pods where their claims' devices are",
            )

    def _preflight(self, request: AdmissionRequest, tenant: str) -> None:
        """Create the host twin in dry-run; refusals become the tenant's refusal."""
        assert request.object is not None
        wire: dict[str, Any] = request.object.to_wire()
        wire["metadata"]["namespace"] = request.namespace
        if not wire["metadata"].get("name"):
            wire["metadata"]["name"] = "preflight"
        try:
            twin = to_host(request.resource.kind, wire, tenant, self._gated(tenant))
        except names.NameTooLong as err:
            path = Path("metadata").child("name")
            raise InvalidObjectError(
                request.resource.info, request.name, [invalid(path, request.name, str(err))]
            ) from None
        resource = by_kind(request.resource.kind)
        target = Target(resource, names.host_namespace(tenant), None, "")
        options = WriteOptions(field_manager="", field_validation="Ignore", dry_run=True)
        try:
            self.handlers.create(HOST_CLUSTER, target, twin, options)
        except AdmissionDenied as denied:
            raise AdmissionDenied(
                request.resource, request.name, denied.cause, denied.reason
            ) from None
        except InvalidObjectError as refused:  # host-only rules (the namespace's labels)
            details = "; ".join(str(e) for e in refused.errors)
            raise AdmissionDenied(
                request.resource, request.name, f"the host refuses it: {details}"
            ) from None


def built_in_kind(resource: ServedResource) -> str:
    """The kind the guard's rules name, or "" for a custom kind (a tenant's CRD may call
    its kind ``Pod`` in its own group: only its metadata and storage are judged)."""
    return "" if resource.custom else resource.kind


def workload_template(kind: str, obj: Obj) -> tuple[str, Obj | None]:
    """The pod template of a workload (its field path, and the template or None)."""
    spec = obj.get("spec") or {}
    if kind == "CronJob":
        job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
        return "spec.jobTemplate.spec.template", job_spec.get("template")
    return "spec.template", spec.get("template")


def pod_of_template(template: Obj, name: str, namespace: str) -> Obj:
    """A pod as a workload controller would make it from ``template`` (for the dry run)."""
    metadata = template.get("metadata") or {}
    pod_metadata: Obj = {"name": name, "namespace": namespace}
    for field in ("labels", "annotations"):
        if metadata.get(field):
            pod_metadata[field] = dict(metadata[field])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_metadata,
        "spec": dict(template.get("spec") or {}),
    }


def _metadata_blocks(kind: str, new: Obj, old: Obj) -> list[tuple[str, Obj, Obj]]:
    """The metadata a tenant writes: the object's, and a template's ``spec.metadata``."""
    blocks = [("metadata", new.get("metadata") or {}, old.get("metadata") or {})]
    if kind in WORKLOAD_TEMPLATES:
        path, template = workload_template(kind, new)
        _, old_template = workload_template(kind, old)
        blocks.append(
            (
                f"{path}.metadata",
                (template or {}).get("metadata") or {},
                (old_template or {}).get("metadata") or {},
            )
        )
    if kind == "ResourceClaimTemplate":
        spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        blocks.append(("spec.metadata", spec.get("metadata") or {}, old_spec.get("metadata") or {}))
    return blocks


def _reserved_keys(metadata: Obj) -> list[tuple[str, str]]:
    """(``labels`` or ``annotations``, key) of the keys only the platform sets."""
    keys = names.reserved_keys(metadata)
    if EXTENDED_CLAIM_ANNOTATION in (metadata.get("annotations") or {}):
        keys.append(("annotations", EXTENDED_CLAIM_ANNOTATION))
    return keys


def _refusal(path: str, field: str, key: str) -> str:
    if key == EXTENDED_CLAIM_ANNOTATION:
        return (
            f"{path}.{field}[{key}]: only the scheduler marks the claim it creates for a "
            "pod's extended resources (quota counts that claim with its pod)"
        )
    return (
        f"{path}.{field}[{key}]: the {names.PLATFORM_PREFIX} prefix is reserved for the "
        "platform (it marks the tenant of host objects)"
    )


def _value(metadata: Obj, field: str, key: str) -> object:
    """The value of ``metadata.<field>[key]``; None if absent."""
    return (metadata.get(field) or {}).get(key)
