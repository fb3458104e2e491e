"""The sync between every tenant cluster and the host, as one controller.

Host to tenant: the DeviceClasses a tenant is entitled to (when
``sync.fromHost.deviceClasses`` is on) follow the host's creates, label changes, updates
and deletes; ResourceSlices appear read-only, trimmed to the devices the tenant's classes
match, so tenants can write selectors against real attribute names (vCluster shows none);
host Events about synced objects are recorded on the tenant's objects; the host nodes the
tenant's pods are bound to appear read-only (:mod:`allot.tenancy.nodes`), and so do the
claims generated on the host for its pods from templates (:mod:`allot.tenancy.generated`).

Tenant to host: ResourceClaims, ResourceClaimTemplates and Pods get host twins (see
:mod:`allot.tenancy.translate`), and so do the ConfigMaps and Secrets pods use
(:mod:`allot.tenancy.sources`, synced before the pod's twin); deletes flow both ways (the
twin's uid is recorded on the tenant object as ``allot.dev/host-uid``, so a twin deleted
while the platform was down is followed after a restart; a tenant pod deleted gracefully
stays ``Terminating`` until its twin is gone); claim and pod status flow back, with
``nodeName`` bound through the tenant's ``binding`` subresource. A pod whose claims or
templates do not exist in the tenant yet is held (Event ``SyncWaiting``) rather than
synced to reference nothing. Every reconcile compares desired and actual state, so a
full resync after a restart creates no duplicates. Keys are per object; the runtime
de-duplicates and retries them. Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable

from allot.api import claims
from allot.api.documents import clone_document
from allot.api.tenancy import syncs
from allot.client.errors import (
    REFUSED,
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
)
from allot.client.events import EventOrigin
from allot.client.protocol import Client, WatchEvent
from allot.dra import DraIndex
from allot.tenancy import generated, names, nodes
from allot.tenancy.directory import TenantDirectory
from allot.tenancy.sources import SourceSync, host_source_key, source_keys
from allot.tenancy.translate import (
    SOURCE_KINDS,
    claim_status_to_tenant,
    kept_gates,
    kubelet_pod_to_tenant,
    message_to_tenant,
    mutable_pod_fields,
    pod_sources,
    pod_status_to_tenant,
    same_content,
    sources_to_tenant,
    tenant_object_name,
    to_host,
    with_host_keys,
)
from allot.tenancy.volumes import add_volume_affinity, claims_waiting
from allot.types import Obj

HOST_KINDS: tuple[str, ...] = ("ResourceClaim", "ResourceClaimTemplate", "Pod", "ConfigMap")
HOST_KINDS += ("Secret", "DeviceClass", "ResourceSlice", "Node", "Event")
"""What the sync reads and follows on the host (informed on a remote host)."""
TENANT_KINDS: tuple[str, ...] = (*HOST_KINDS[:-1], "PersistentVolumeClaim")
TENANT_KINDS += ("PersistentVolume", "StorageClass")
"""What it reads and follows in each tenant's cluster (the host's, but Events, and the
volumes its pods mount)."""
MANAGER = "allot-syncer"
SYNCED = {"resourceclaims.resource.k8s.io": "ResourceClaim", "pods": "Pod"}
SYNCED["resourceclaimtemplates.resource.k8s.io"] = "ResourceClaimTemplate"
CLASSES = "deviceclasses.resource.k8s.io"
SLICES = "resourceslices.resource.k8s.io"
TENANTS = "tenants.allot.dev"
NODES = "nodes"


class TenantSync:
    name = "tenant-sync"

    def __init__(
        self,
        host: Client,
        tenants: Callable[[str], Client],
        directory: TenantDirectory,
        index: DraIndex,
    ) -> None:
        """``host`` and ``tenants`` (a tenant's cluster by its name) are any clients of
        the protocol whose changes reach one dispatcher (in process: the registry's
        clusters; remotely: API servers' informers); ``index``: the host's DRA index,
        fed from host events before this sync sees them; slices are trimmed by its class
        verdicts."""
        self.host = host
        self.tenants = tenants
        self.directory = directory
        self.index = index
        self._clients: dict[str, Client] = {}
        self._held: set[tuple[str, str, str]] = set()
        # (tenant, kind, namespace, name) -> why the object could not be synced (for alerts)
        self.errors: dict[tuple[str, str, str, str], str] = {}
        # (tenant, slice) -> what the mirrored slice was computed from, to skip recomputing
        self._slice_inputs: dict[tuple[str, str], tuple[object, ...]] = {}
        # (tenant, namespace, name) -> the conditions of a pod twin when it was removed
        self._last_conditions: dict[tuple[str, str, str], list[Obj]] = {}
        self.sources = SourceSync(host, self._report)
        # uids of twins this sync created that the host's view has not shown yet: a remote
        # host's informer sees its own create a moment later, which is not a deletion
        self._unseen: set[str] = set()

    def _report(self, key: tuple[str, str, str, str], error: str | None) -> None:
        """What the source sync could not write (alerts and metrics read ``errors``)."""
        if error is None:
            self.errors.pop(key, None)
        else:
            self.errors[key] = error

    def context(self, tenant: str) -> Client:
        """The tenant's cluster, one client per tenant: its Event recorder counts a
        repeated host Event (a retried FailedResourceClaimCreation) on the tenant's one
        Event instead of adding one per repeat."""
        client = self._clients.get(tenant)
        if client is None:
            client = self._clients[tenant] = self.tenants(tenant)
            for kind in TENANT_KINDS:
                client.inform(kind)
        return client

    def inform(self) -> None:
        """Watch what the sync follows on the host and in the clusters of the tenants
        known now (a tenant's cluster is watched as :meth:`context` first makes its
        client; a remote client informed after its start is the caller's to start)."""
        for kind in HOST_KINDS:
            self.host.inform(kind)
        for tenant in self.directory.names():
            self.context(tenant)

    def gated(self, tenant: str) -> bool:
        """Whether the tenant's pod twins wait for admission (fair-sharing mode)."""
        entry = self.directory.get(tenant)
        return entry is not None and entry.tenant.spec.sharing is not None

    # ------------------------------------------------------------------ events
    def observe(self, event: WatchEvent) -> None:
        """A Tenant gone takes what the sync remembers of it (``forget``). A pod twin
        removed on the host leaves its last conditions (a preemption's
        ``DisruptionTarget``), which its tenant pod gets as it ends (``_terminal``), even
        when the node agent removed the twin before the sync saw it terminating. A twin
        this sync created is "unseen" until the host's view shows it: a remote host's
        informer lags its own create, and a twin missing from it then is not deleted."""
        if event.cluster != self.host.cluster:
            return
        self._unseen.discard(event.object["metadata"].get("uid", ""))  # seen, or gone
        if event.type != "DELETED":
            return
        if event.resource == TENANTS:
            self.forget(event.object["metadata"]["name"])
            return
        if event.resource != "pods":
            return
        tenant = names.tenant_of_namespace(event.object["metadata"].get("namespace", ""))
        origin = tenant_object_name(event.object)
        conditions = (event.object.get("status") or {}).get("conditions")
        if tenant is not None and self.directory.is_tenant(tenant) and origin and conditions:
            self._last_conditions[(tenant, *origin)] = list(conditions)

    def forget(self, tenant: str) -> None:
        """Drop every per-tenant memory of a deleted tenant. Its cluster (with the mirrored
        classes and slices) went at once, so a tenant created again under that name must
        not look already synced: its slices would never be mirrored while the host's stay
        unchanged. Also keeps a gone tenant's sync errors out of alerts and metrics."""
        self._held = {key for key in self._held if key[0] != tenant}
        self.errors = {k: v for k, v in self.errors.items() if k[0] != tenant}
        self._slice_inputs = {k: v for k, v in self._slice_inputs.items() if k[0] != tenant}
        self._last_conditions = {k: v for k, v in self._last_conditions.items() if k[0] != tenant}
        self._clients.pop(tenant, None)

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.cluster == self.host.cluster:
            return self._host_keys(event)
        if not self.directory.is_tenant(event.cluster):
            return []
        metadata = event.object["metadata"]
        namespace = metadata.get("namespace", "")
        source = SOURCE_KINDS.get(event.resource)
        if source is not None:
            return [("source", event.cluster, source, namespace, metadata["name"])]
        if event.resource == "persistentvolumeclaims":  # held pods may mount it
            return [
                ("up", t, "Pod", ns, n)
                for (t, ns, n) in self._held
                if (t, ns) == (event.cluster, namespace)
            ]
        kind = SYNCED.get(event.resource)
        if kind is None:
            return []
        key = ("up", event.cluster, kind, namespace, metadata["name"])
        if kind == "Pod" and event.type != "MODIFIED":  # its references come and go with it
            return [key, *source_keys(event.cluster, event.object)]
        if kind == "Pod" or event.type != "ADDED":
            return [key]
        namespace = metadata.get("namespace", "")
        held = [
            ("up", t, "Pod", ns, n)
            for (t, ns, n) in self._held
            if (t, ns) == (event.cluster, namespace)
        ]
        return [key, *held]

    def _host_keys(self, event: WatchEvent) -> list[Hashable]:
        tenants = self.directory.names()
        if event.resource == TENANTS:
            name = event.object["metadata"]["name"]
            return [("classes", name), ("slices", name)] if name in tenants else []
        if event.resource == CLASSES:
            keys: list[Hashable] = [("classes", t) for t in tenants]
            return keys + [("slices", t) for t in tenants]
        if event.resource == SLICES:
            return [("slice", t, event.object["metadata"]["name"]) for t in tenants]
        if event.resource == NODES:
            return [("nodes", t) for t in tenants]
        namespace = event.object["metadata"].get("namespace", "")
        tenant = names.tenant_of_namespace(namespace)
        if tenant is None or tenant not in tenants:
            return []
        if event.resource == "events":
            return [("event", tenant, namespace, event.object["metadata"]["name"])]
        if event.resource in SOURCE_KINDS:
            return host_source_key(tenant, event.resource, event.object)
        kind = SYNCED.get(event.resource)
        origin = tenant_object_name(event.object) if kind else None
        if kind is None or origin is None:
            return self._generated_claim_keys(tenant, event)
        found: list[Hashable] = [("up", tenant, kind, *origin)]
        if kind == "Pod":
            found += [("nodes", tenant), ("generated", tenant, *origin)]
        return found

    def initial_keys(self) -> list[Hashable]:
        return [("resync", t) for t in self.directory.names()]

    # --------------------------------------------------------------- reconcile
    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        if self.directory.get(key[1]) is None:
            return
        if key[0] == "resync":
            self.resync(key[1])
        elif key[0] == "classes":
            self.sync_classes(key[1])
        elif key[0] == "slices":
            self.sync_slices(key[1])
        elif key[0] == "slice":
            self.sync_slice(key[1], key[2])
        elif key[0] == "event":
            self.relay_event(key[1], key[2], key[3])
        elif key[0] == "up":
            self.sync_object(key[1], key[2], key[3], key[4])
        elif key[0] == "nodes":
            self.sync_nodes(key[1])
        elif key[0] == "generated":
            self.sync_generated_claims(key[1], key[2], key[3])
        elif key[0] == "source":
            self.sources.sync(self.context(key[1]), key[2], key[3], key[4])

    def resync(self, tenant: str) -> None:
        """Everything of one tenant, both ways (start, restart, tenant changes)."""
        self.sync_classes(tenant)
        self.sync_slices(tenant)
        tenant_ctx = self.context(tenant)
        seen = set()
        for kind in ("ResourceClaimTemplate", "ResourceClaim", "Pod"):
            for obj in tenant_ctx.list(kind):
                metadata = obj["metadata"]
                seen.add((kind, metadata.get("namespace", ""), metadata["name"]))
            for twin in self.host.list(kind, names.host_namespace(tenant)):
                origin = tenant_object_name(twin)
                if origin is not None:
                    seen.add((kind, *origin))
        self._resync_sources(tenant_ctx)
        for kind, namespace, name in sorted(seen):
            self.sync_object(tenant, kind, namespace, name)
        self.sync_nodes(tenant)
        pods = {(ns, n) for kind, ns, n in seen if kind == "Pod"}
        for claim in tenant_ctx.list("ResourceClaim"):
            owner = generated.owner_pod(claim)
            if owner is not None:
                pods.add((claim["metadata"].get("namespace", ""), owner))
        for namespace, name in sorted(pods):
            self.sync_generated_claims(tenant, namespace, name)

    def _resync_sources(self, tenant_ctx: Client) -> None:
        """The ConfigMaps and Secrets the tenant's pods use, and the twins left of ones
        no pod uses any more."""
        wanted = set()
        for pod in tenant_ctx.list("Pod"):
            namespace = pod["metadata"].get("namespace", "")
            wanted |= {(k, namespace, n) for k, n in pod_sources(pod.get("spec") or {})}
        for kind in SOURCE_KINDS.values():
            for twin in self.host.list(kind, names.host_namespace(tenant_ctx.cluster)):
                origin = tenant_object_name(twin)
                if origin is not None:
                    wanted.add((kind, *origin))
        for kind, namespace, name in sorted(wanted):
            self.sources.sync(tenant_ctx, kind, namespace, name)

    # ------------------------------------------------------ host -> tenant
    def sync_classes(self, tenant: str) -> None:
        entry = self.directory.get(tenant)
        assert entry is not None
        ctx = self.context(tenant)
        wanted: dict[str, Obj] = {}
        if syncs(entry.tenant.spec, "deviceClasses"):
            for device_class in self.host.list("DeviceClass"):
                if device_class["metadata"]["name"] in entry.entitled:
                    wanted[device_class["metadata"]["name"]] = _mirror(device_class)
        self._converge(ctx, "DeviceClass", wanted)

    def sync_slices(self, tenant: str) -> None:
        ctx = self.context(tenant)
        names_on_host = set()
        for host_slice in self.host.list("ResourceSlice"):
            names_on_host.add(host_slice["metadata"]["name"])
            self.sync_slice(tenant, host_slice["metadata"]["name"])
        for mirrored in ctx.list("ResourceSlice"):
            if mirrored["metadata"]["name"] not in names_on_host:
                self.sync_slice(tenant, mirrored["metadata"]["name"])

    def sync_slice(self, tenant: str, name: str) -> None:
        """One slice's mirror; skipped when neither it nor the entitlement changed."""
        ctx = self.context(tenant)
        host_slice = self.host.peek("ResourceSlice", "", name)
        inputs = self._inputs_of(tenant, host_slice)
        key = (tenant, name)
        if inputs is not None and self._slice_inputs.get(key) == inputs:
            return
        trimmed = self._trimmed(tenant, host_slice) if host_slice is not None else None
        self._put(ctx, "ResourceSlice", name, trimmed)
        if inputs is None:
            self._slice_inputs.pop(key, None)
        else:
            self._slice_inputs[key] = inputs

    def _inputs_of(self, tenant: str, host_slice: Obj | None) -> tuple[object, ...] | None:
        entry = self.directory.get(tenant)
        if host_slice is None or entry is None:
            return None
        classes = [self.host.peek("DeviceClass", "", n) for n in entry.entitled]
        versions = tuple(c["metadata"].get("resourceVersion") if c else None for c in classes)
        return host_slice["metadata"].get("resourceVersion"), tuple(entry.entitled), versions

    def _converge(self, ctx: Client, kind: str, wanted: dict[str, Obj]) -> None:
        for existing in ctx.list(kind):
            name = existing["metadata"]["name"]
            if name not in wanted:
                _delete(ctx, kind, "", name)
                if kind == "DeviceClass":
                    self._warn_claims_of(ctx, name)
        for name, desired in wanted.items():
            self._put(ctx, kind, name, desired)

    def _warn_claims_of(self, ctx: Client, device_class: str) -> None:
        """Tell the tenant's claims that name a class it lost (deleted or unentitled)."""
        gone = self.host.peek("DeviceClass", "", device_class) is None
        reason = "was deleted on the host" if gone else "is no longer entitled to this tenant"
        for claim in ctx.list("ResourceClaim"):
            if device_class in claims.claim_classes(claim):
                ctx.events().record(
                    claim,
                    "Warning",
                    "DeviceClassUnavailable",
                    f"device class {device_class} {reason}; an allocated claim keeps its "
                    "devices, a pending one cannot be allocated through it",
                    MANAGER,
                )

    def _put(self, ctx: Client, kind: str, name: str, desired: Obj | None) -> None:
        current = ctx.peek(kind, "", name)
        if desired is None:
            if current is not None:
                _delete(ctx, kind, "", name)
            return
        if current is None:
            try:
                ctx.create(desired, field_manager=MANAGER)
            except AlreadyExists:
                return
            return
        if _mirror(current, copy=False) != desired:
            updated = {**desired, "metadata": {**desired["metadata"]}}
            updated["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            ctx.update(updated, field_manager=MANAGER)

    def _trimmed(self, tenant: str, host_slice: Obj) -> Obj | None:
        """The slice with only the devices an entitled class selects (None: no device)."""
        entry = self.directory.get(tenant)
        assert entry is not None
        name = host_slice["metadata"]["name"]
        selected: set[str] = set()
        for device_class in entry.entitled:
            selected |= self.index.selected(device_class, name)
        spec = host_slice.get("spec") or {}
        devices = [d for d in spec.get("devices") or [] if d.get("name") in selected]
        if not devices:
            return None
        mirrored = _mirror(host_slice)
        mirrored["spec"] = {**clone_document(spec), "devices": clone_document(devices)}
        return mirrored

    def relay_event(self, tenant: str, namespace: str, name: str) -> None:
        event = self.host.peek("Event", namespace, name)
        if event is None:
            return
        involved = event.get("involvedObject") or {}
        kind = str(involved.get("kind"))
        if kind not in SYNCED.values():
            return
        twin = self.host.peek(kind, namespace, involved.get("name", ""))
        if twin is not None:
            origin = tenant_object_name(twin) or self._mirror_of(kind, twin)
            target = self.context(tenant).peek(kind, *origin) if origin else None
        else:
            origin, target = self._origin_of_gone(tenant, kind, involved)
        if origin is None or target is None:
            return
        message = str(event.get("message") or "")
        if kind == "Pod":
            host_pod = {"metadata": {**involved, "namespace": namespace}}
            message = kubelet_pod_to_tenant(message, host_pod, target)
        message = message_to_tenant(message, namespace, str(involved.get("name") or ""), origin)
        if kind == "Pod":
            message = sources_to_tenant(message, namespace, target)
        source = event.get("source") or {}
        self.context(tenant).events().record(
            target,
            event.get("type") or "Normal",
            event.get("reason") or "",
            message,
            source.get("component") or "host",
            origin=EventOrigin(str(involved.get("fieldPath") or ""), str(source.get("host") or "")),
        )

    @staticmethod
    def _mirror_of(kind: str, twin: Obj) -> tuple[str, str] | None:
        """A claim generated on the host for a tenant pod: the tenant's read-only mirror of
        it receives its Events (an alert's ``ClaimPendingTooLong``), as a synced claim does."""
        return generated.mirror_name(twin) if kind == "ResourceClaim" else None

    def _origin_of_gone(
        self, tenant: str, kind: str, involved: Obj
    ) -> tuple[tuple[str, str] | None, Obj | None]:
        """The tenant object of a twin already gone (a ``Killing`` event arrives after its
        pod): found by the twin's name, and only if it recorded that twin's uid."""
        try:
            name, namespace = names.tenant_name(str(involved.get("name", "")))
        except ValueError:
            return None, None
        target = self.context(tenant).peek(kind, namespace, name)
        annotations = (target or {}).get("metadata", {}).get("annotations") or {}
        if target is None or annotations.get(names.HOST_UID_ANNOTATION) != involved.get("uid"):
            return None, None
        return (namespace, name), target

    # ------------------------------------------------------ tenant -> host
    def sync_object(self, tenant: str, kind: str, namespace: str, name: str) -> None:
        """One tenant object and its twin. "Never synced" and "synced, then deleted on the
        host" are told apart by the twin's uid recorded on the tenant object (persistent,
        so a twin deleted while the platform was down is followed, not recreated)."""
        ctx = self.context(tenant)
        obj = ctx.peek(kind, namespace, name)
        host_ns = names.host_namespace(tenant)
        try:
            twin_name = names.host_name(name, namespace)
        except names.NameTooLong:
            return
        twin = self.host.peek(kind, host_ns, twin_name)
        if obj is not None and generated.is_mirror(obj):
            return  # the sync's own view of a host claim (sync_generated_claims)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            self._held.discard((tenant, namespace, name))
            self.errors.pop((tenant, kind, namespace, name), None)
            self._delete_twin(ctx, kind, obj, twin)
            return
        recorded = (obj["metadata"].get("annotations") or {}).get(names.HOST_UID_ANNOTATION)
        if recorded and twin is None and recorded in self._unseen:
            return  # created a moment ago; its ADDED on the host brings the key back
        if recorded and (twin is None or twin["metadata"].get("uid") != recorded):
            _delete(ctx, kind, namespace, name)  # its twin was deleted on the host: follow
            return
        if twin is None:
            twin = self._create_twin(ctx, tenant, kind, obj)
            if twin is None:
                return
        elif not _twin_of(twin, obj):
            _delete(self.host, kind, host_ns, twin_name)  # left by an earlier object
            return
        else:
            self._update_twin(kind, obj, twin, tenant)
        if recorded != twin["metadata"].get("uid"):
            obj = self._record_twin(ctx, kind, obj, twin)
        self._status_back(ctx, kind, obj, twin)
        if kind == "Pod" and twin["metadata"].get("deletionTimestamp"):
            self._follow_termination(ctx, obj, twin)

    def _delete_twin(self, ctx: Client, kind: str, obj: Obj | None, twin: Obj | None) -> None:
        """A deleted (or terminating) tenant object's twin goes too. A terminating tenant
        pod (graceful deletion) has its twin deleted with the same grace period, and is
        removed for good only once the twin is gone, as the kubelet confirms a deletion:
        so the tenant sees ``Terminating`` while the host's node agent ends the pod."""
        if twin is not None and _twin_of(twin, obj):
            metadata = twin["metadata"]
            if not metadata.get("deletionTimestamp"):
                grace = (obj or {}).get("metadata", {}).get("deletionGracePeriodSeconds")
                options = {} if grace is None else {"gracePeriodSeconds": grace}
                _delete(self.host, kind, metadata["namespace"], metadata["name"], options)
            if self.host.peek(kind, metadata["namespace"], metadata["name"]) is not None:
                return
        if obj is not None and kind == "Pod":
            metadata = obj["metadata"]
            last = self._last_conditions.pop(
                (ctx.cluster, metadata.get("namespace", ""), metadata["name"]), []
            )
            obj = self._terminal(ctx, obj, last)
            options = {"gracePeriodSeconds": 0, "preconditions": {"uid": metadata.get("uid")}}
            try:
                _delete(ctx, kind, metadata.get("namespace", ""), metadata["name"], options)
            except Conflict:
                return  # another pod of that name by now

    @staticmethod
    def _terminal(ctx: Client, pod: Obj, last: list[Obj]) -> Obj:
        """A bound tenant pod whose twin was stopped ends ``Failed`` before it goes, as the
        kubelet gives a deleted pod a terminal phase: a Job (its finalizer keeps the pod
        until counted) then judges it by its conditions (``DisruptionTarget``), and with
        ``podReplacementPolicy: Failed`` or a failure policy replaces it. ``last``: the
        twin's conditions when it was removed, which the tenant pod gets where it lacks them."""
        status = dict(pod.get("status") or {})
        known = {c.get("type") for c in status.get("conditions") or []}
        missing = [c for c in last if c.get("type") not in known]
        if missing:
            status["conditions"] = [*(status.get("conditions") or []), *missing]
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        if bound and status.get("phase") not in ("Succeeded", "Failed"):
            status["phase"] = "Failed"
        elif not missing:
            return pod
        try:
            return ctx.update(
                {**pod, "status": status}, field_manager=MANAGER, subresource="status"
            )
        except (NotFound, Conflict):
            return pod

    @staticmethod
    def _follow_termination(ctx: Client, obj: Obj, twin: Obj) -> None:
        """A twin the host deletes gracefully (an eviction, a preemption) makes its tenant
        pod ``Terminating`` with the same grace period, after its last status (a
        ``DisruptionTarget`` condition) was copied; the tenant pod goes with the twin."""
        metadata = obj["metadata"]
        grace = twin["metadata"].get("deletionGracePeriodSeconds")
        options: Obj = {"preconditions": {"uid": metadata.get("uid")}}
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        with contextlib.suppress(NotFound, Conflict):
            ctx.delete("Pod", metadata.get("namespace", ""), metadata["name"], options=options)

    @staticmethod
    def _record_twin(ctx: Client, kind: str, obj: Obj, twin: Obj) -> Obj:
        """Write the twin's uid on the tenant object (after the twin exists: a crash in
        between leaves a twin without record, which the next sync records)."""
        updated = clone_document(obj)
        annotations = updated["metadata"].setdefault("annotations", {})
        annotations[names.HOST_UID_ANNOTATION] = twin["metadata"]["uid"]
        return ctx.update(updated, field_manager=MANAGER)

    def pending_twins(self, cluster: str, namespace: str, creating: Obj) -> list[tuple[str, Obj]]:
        """The twins (kind, object) the sync has yet to create in a tenant's host namespace,
        for the host's quota (``QuotaAdmission.pending``): a tenant object counts from the
        moment it is admitted, so twenty racing creates cannot all pass the last unit of quota.
        ``creating`` (a twin being created now) is not counted twice."""
        tenant = names.tenant_of_namespace(namespace)
        if cluster != self.host.cluster or tenant is None or self.directory.get(tenant) is None:
            return []
        ctx = self.context(tenant)
        creating_uid = (creating["metadata"].get("annotations") or {}).get(names.UID_ANNOTATION)
        pending = []
        for kind in SYNCED.values():
            for obj in ctx.list(kind):
                metadata = obj["metadata"]
                annotations = metadata.get("annotations") or {}
                if metadata.get("deletionTimestamp") or names.HOST_UID_ANNOTATION in annotations:
                    continue  # going, or its twin exists (or existed and it will follow)
                if names.HOST_NAME_ANNOTATION in annotations:
                    continue  # a generated claim's mirror: it has no twin
                if metadata.get("uid") == creating_uid:
                    continue
                try:
                    twin_name = names.host_name(metadata["name"], metadata.get("namespace", ""))
                except names.NameTooLong:
                    continue
                if self.host.peek(kind, namespace, twin_name) is None:
                    twin = to_host(kind, obj, tenant, self.gated(tenant))
                    pending.append((kind, twin))
        return pending

    def _create_twin(self, ctx: Client, tenant: str, kind: str, obj: Obj) -> Obj | None:
        metadata = obj["metadata"]
        if kind == "Pod":
            waiting = self._missing_references(ctx, tenant, obj)
            if waiting:
                self._held.add((tenant, metadata.get("namespace", ""), metadata["name"]))
                ctx.events().record(obj, "Warning", "SyncWaiting", waiting, MANAGER)
                return None
            self._held.discard((tenant, metadata.get("namespace", ""), metadata["name"]))
            for source, name in sorted(pod_sources(obj.get("spec") or {})):
                self.sources.sync(ctx, source, metadata.get("namespace", ""), name, used=True)
        key = (tenant, kind, metadata.get("namespace", ""), metadata["name"])
        twin = to_host(kind, obj, tenant, self.gated(tenant))
        if kind == "Pod":
            add_volume_affinity(ctx, obj, twin)
        try:
            created = self.host.create(twin, field_manager=MANAGER)
        except AlreadyExists:
            return None
        except REFUSED as refused:
            self.errors[key] = f"not synced to the host: {refused}"
            ctx.events().record(obj, "Warning", "SyncError", self.errors[key], MANAGER)
            return None
        self.errors.pop(key, None)
        self._unseen.add(created["metadata"].get("uid", ""))
        return created

    def _missing_references(self, ctx: Client, tenant: str, pod: Obj) -> str:
        entry = self.directory.get(tenant)
        assert entry is not None
        namespace = pod["metadata"].get("namespace", "")
        waiting = claims_waiting(ctx, pod)
        if waiting:
            return f"{waiting}; the pod is synced to the host once they are bound"
        for claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            named = claim.get("resourceClaimName")
            if named and ctx.peek("ResourceClaim", namespace, named) is None:
                return (
                    f'resource claim "{named}" does not exist in namespace "{namespace}"; '
                    "the pod is synced to the host once it does"
                )
            template = claim.get("resourceClaimTemplateName")
            if template and not syncs(entry.tenant.spec, "resourceClaimTemplates"):
                return (
                    "the pod uses a ResourceClaimTemplate, but this tenant does not sync "
                    "templates (sync.toHost.resourceClaimTemplates.enabled is false)"
                )
            if template and ctx.peek("ResourceClaimTemplate", namespace, template) is None:
                return (
                    f'resource claim template "{template}" does not exist in namespace '
                    f'"{namespace}"'
                )
        return ""

    def _update_twin(self, kind: str, obj: Obj, twin: Obj, tenant: str) -> None:
        """Labels and annotations follow the tenant's (keeping what the host added); a
        pod twin loses the gates the tenant removed from its pod and takes its images and
        ``activeDeadlineSeconds`` (``mutable_pod_fields``). Nothing else of a pod's spec is
        compared: the admission controller's removal of the admission gate stays."""
        desired = with_host_keys(twin, to_host(kind, obj, tenant))
        gates = kept_gates(twin, obj) if kind == "Pod" else None
        same_gates = gates is None or gates == (
            (twin.get("spec") or {}).get("schedulingGates") or []
        )
        spec = mutable_pod_fields(twin, obj) if kind == "Pod" else twin.get("spec")
        if same_content(kind, twin, desired) and same_gates and spec == twin.get("spec"):
            return
        updated = clone_document(twin)
        updated["metadata"]["labels"] = desired["metadata"]["labels"]
        updated["metadata"]["annotations"] = desired["metadata"]["annotations"]
        if kind == "Pod":
            updated["spec"] = clone_document(spec or {})
        if not same_gates:
            if gates:
                updated["spec"]["schedulingGates"] = gates
            else:
                updated["spec"].pop("schedulingGates", None)
        try:
            self.host.update(updated, field_manager=MANAGER)
        except (BadRequest, Forbidden, Invalid, NotFound):  # REFUSED, or gone
            return

    def _status_back(self, ctx: Client, kind: str, obj: Obj, twin: Obj) -> None:
        host_ns = twin["metadata"]["namespace"]
        if kind == "ResourceClaim":
            status = claim_status_to_tenant(
                twin.get("status") or {}, lambda n: self.host.peek("Pod", host_ns, n)
            )
        elif kind == "Pod":
            node = (twin.get("spec") or {}).get("nodeName")
            if node and not (obj.get("spec") or {}).get("nodeName"):
                _bind(ctx, obj["metadata"].get("namespace", ""), obj["metadata"]["name"], node)
                obj = (
                    ctx.peek(kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
                    or obj
                )
            status = pod_status_to_tenant(
                twin.get("status") or {},
                lambda n: self._claim_name_for(obj, twin, n),
                lambda text: sources_to_tenant(
                    kubelet_pod_to_tenant(text, twin, obj), host_ns, obj
                ),
            )
        else:
            return
        if (obj.get("status") or {}) == status:
            return
        updated = {**obj, "status": status}
        try:
            ctx.update(updated, field_manager=MANAGER, subresource="status")
        except (NotFound, Conflict):
            return

    def _claim_name_for(self, obj: Obj, twin: Obj, host_claim: str) -> str | None:
        """The tenant's name of a claim the twin's status names (None: not the tenant's)."""
        claim = self.host.peek("ResourceClaim", twin["metadata"]["namespace"], host_claim)
        if claim is None:
            return None
        origin = tenant_object_name(claim)
        if origin is not None:
            return origin[1]
        entry = generated.generated_for(twin, claim)
        if entry is None:
            return None
        return generated.tenant_claim_name(obj["metadata"]["name"], entry, host_claim)

    # ------------------------------------------------------ nodes and generated claims
    def sync_nodes(self, tenant: str) -> None:
        """The host nodes the tenant's pods are bound to (see :mod:`allot.tenancy.nodes`)."""
        entry = self.directory.get(tenant)
        assert entry is not None
        ctx = self.context(tenant)
        host_ns = names.host_namespace(tenant)
        twins = [  # read in place: the sync runs on every pod event of the tenant
            t
            for t in self.host.list("Pod", host_ns)
            if (t.get("spec") or {}).get("nodeName") and tenant_object_name(t) is not None
        ]
        wanted = nodes.shown_nodes(entry.tenant.spec, twins, self.host.list("Node"))
        for existing in ctx.list("Node"):
            if existing["metadata"]["name"] not in wanted:
                _delete(ctx, "Node", "", existing["metadata"]["name"])
        for name, desired in sorted(wanted.items()):
            current = ctx.peek("Node", "", name)
            if current is None:
                with contextlib.suppress(AlreadyExists):
                    ctx.create(desired, field_manager=MANAGER)
            elif not nodes.same_node(current, desired):
                updated = {**desired, "metadata": {**current["metadata"], **desired["metadata"]}}
                for field in ("labels", "annotations"):
                    if field not in desired["metadata"]:
                        updated["metadata"].pop(field, None)
                ctx.update_with_status(updated, field_manager=MANAGER)

    def _generated_claim_keys(self, tenant: str, event: WatchEvent) -> list[Hashable]:
        """A host claim generated for a twin pod: the key of that pod's generated claims."""
        if event.resource != "resourceclaims.resource.k8s.io":
            return []
        for owner in event.object["metadata"].get("ownerReferences") or []:
            if owner.get("kind") == "Pod":
                try:
                    name, namespace = names.tenant_name(str(owner.get("name")))
                except ValueError:
                    return []
                return [("generated", tenant, namespace, name)]
        return []

    def sync_generated_claims(self, tenant: str, namespace: str, pod_name: str) -> None:
        """The mirrors of the claims generated on the host for one tenant pod's twin."""
        ctx = self.context(tenant)
        host_ns = names.host_namespace(tenant)
        pod = ctx.peek("Pod", namespace, pod_name)
        wanted: dict[str, Obj] = {}
        twin = self._twin_of_pod(pod, host_ns) if pod is not None else None
        if pod is not None and twin is not None:
            for status in (twin.get("status") or {}).get("resourceClaimStatuses") or []:
                host_claim = self.host.peek(
                    "ResourceClaim", host_ns, status.get("resourceClaimName") or ""
                )
                entry = generated.generated_for(twin, host_claim) if host_claim else None
                if host_claim is None or entry is None:
                    continue
                mirror = generated.mirror_claim(
                    pod, entry, host_claim, lambda n: self.host.peek("Pod", host_ns, n)
                )
                wanted[mirror["metadata"]["name"]] = mirror
        # the mirrors of a pod that is gone go with it (the store's garbage collection)
        owned = ctx.owned_by("ResourceClaim", pod["metadata"].get("uid") or "") if pod else []
        for claim in owned:
            if generated.owner_pod(claim) == pod_name and claim["metadata"]["name"] not in wanted:
                _delete(ctx, "ResourceClaim", namespace, claim["metadata"]["name"])
        for name, desired in wanted.items():
            self._put_mirror(ctx, namespace, name, desired)

    def _twin_of_pod(self, pod: Obj, host_ns: str) -> Obj | None:
        metadata = pod["metadata"]
        try:
            twin_name = names.host_name(metadata["name"], metadata.get("namespace", ""))
        except names.NameTooLong:
            return None
        twin = self.host.peek("Pod", host_ns, twin_name)
        return twin if twin is not None and _twin_of(twin, pod) else None

    @staticmethod
    def _put_mirror(ctx: Client, namespace: str, name: str, desired: Obj) -> None:
        current = ctx.peek("ResourceClaim", namespace, name)
        if current is None:
            with contextlib.suppress(AlreadyExists):
                created = ctx.create(desired, field_manager=MANAGER)
                status = {**created, "status": desired["status"]}
                ctx.update(status, field_manager=MANAGER, subresource="status")
            return
        if generated.same_mirror(current, desired):
            return
        updated = {**current, "metadata": {**current["metadata"], **desired["metadata"]}}
        updated["status"] = desired["status"]
        with contextlib.suppress(NotFound, Conflict):
            ctx.update_with_status(updated, field_manager=MANAGER)


def _mirror(obj: Obj, copy: bool = True) -> Obj:
    """What a tenant sees of a host class or slice: identity, labels and spec (shared
    with ``obj`` when not ``copy``, for comparisons)."""
    metadata = obj["metadata"]
    spec = obj.get("spec") or {}
    mirrored: Obj = {
        "apiVersion": obj.get("apiVersion", "resource.k8s.io/v1"),
        "kind": obj.get("kind"),
        "metadata": {"name": metadata["name"]},
        "spec": clone_document(spec) if copy else spec,
    }
    for field in ("labels", "annotations"):
        values = {
            k: v
            for k, v in (metadata.get(field) or {}).items()
            if k != "kubectl.kubernetes.io/last-applied-configuration"
        }
        if values:
            mirrored["metadata"][field] = values
    return mirrored


def _twin_of(twin: Obj, obj: Obj | None) -> bool:
    """Whether ``twin`` was created for ``obj`` (same uid), or for a deleted object."""
    uid = (twin["metadata"].get("annotations") or {}).get(names.UID_ANNOTATION)
    return obj is None or uid == obj["metadata"].get("uid")


def _delete(
    client: Client, kind: str, namespace: str, name: str, options: Obj | None = None
) -> None:
    """Delete, gone already being fine."""
    with contextlib.suppress(NotFound):
        client.delete(kind, namespace, name, options=options)


def _bind(client: Client, namespace: str, name: str, node: str) -> None:
    """Bind a tenant pod to the node its twin runs on, as kube-scheduler binds
    (deleted meanwhile: nothing to bind)."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    with contextlib.suppress(NotFound):
        client.create_subresource("Pod", namespace, name, "binding", body)
