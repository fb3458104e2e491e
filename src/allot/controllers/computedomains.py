"""The NVIDIA driver's ComputeDomain controller, for the host's and every tenant's ComputeDomains.

For each ``ComputeDomain`` (``resource.nvidia.com/v1beta1``, served once the publisher
installed its CRD for an MNNVL fleet), as v0.4's ``compute-domain-controller``: its
finalizer, the daemon's ResourceClaimTemplate and the IMEX daemon DaemonSet in the driver's
namespace, and the workload's channel ResourceClaimTemplate in the domain's namespace (the
objects are :mod:`allot.driver.computedomain`'s). What the kubelet plugin does at a
channel's prepare and unprepare, it does when a channel claim of the domain is allocated on
a node and released: the node gets (and loses) the label
``resource.nvidia.com/computeDomain=<uid>``, so the DaemonSet runs a daemon there. The
status lists each daemon's node and is ``Ready`` once ``numNodes`` daemons are. A deleted
domain takes its objects and labels with it, then loses its finalizer.

Tenants: each tenant cluster gets the host's ComputeDomain CRD (the driver's API as the
host serves it); a tenant's domain, its status and its channel template are written in the
tenant's cluster as the tenant's controller account (so its entitlement and quota judge the
template, and a refusal is a ``FailedCreate`` Event on the domain), the template reaches
the host through the sync like any other, and the daemons, node labels and claims are the
host's. :class:`DomainLookup` finds a domain by UID in any cluster for the node agent, which
prepares a channel only once its node's daemon is ready. Built by :mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from allot.api.documents import clone_document
from allot.controllers.context import ControllerContext
from allot.controllers.workloads import ClusterContexts, WorkloadKey
from allot.driver import computedomain as cd
from allot.registry import HOST_CLUSTER
from allot.registry.admission import AdmissionDenied
from allot.registry.resources import ServedResource, custom_resource_clusters, lookup
from allot.store import WatchEvent
from allot.store.errors import AlreadyExists
from allot.types import Obj

MANAGER = "compute-domain-controller"
CLAIMS = "resourceclaims.resource.k8s.io"
CRDS = "customresourcedefinitions.apiextensions.k8s.io"
WATCHED = frozenset({cd.RESOURCE, "pods", CLAIMS, CRDS, "namespaces"})
Origin = Callable[[Obj], tuple[str, str]]
"""A host object -> the (cluster, namespace) it stands for: a tenant's twin's tenant and
namespace, else the host's own."""


def host_origin(obj: Obj) -> tuple[str, str]:
    """:data:`Origin` where there are no tenants."""
    return HOST_CLUSTER, str(obj["metadata"].get("namespace") or "")


class DomainLookup:
    """The ComputeDomains of every cluster (none where their CRD is not installed)."""

    def __init__(self, context: ControllerContext) -> None:
        self.context = context

    def in_cluster(self, cluster: str) -> list[Obj]:
        resource = served(cluster)
        return self.context.store.scan(cluster, resource.store) if resource is not None else []

    def all(self) -> list[tuple[str, Obj]]:
        """Every domain with its cluster: only the clusters that serve custom resources
        are looked at (not a walk of the store)."""
        return [
            (cluster, domain)
            for cluster in custom_resource_clusters()
            for domain in self.in_cluster(cluster)
        ]

    def by_uid(self, uid: str) -> tuple[str, Obj] | None:
        return next(((c, d) for c, d in self.all() if d["metadata"].get("uid") == uid), None)

    def channel_refusal(self, claim: Obj, node: str, origin: Origin) -> str | None:
        """The plugin's refusal of the claim's channel on ``node`` (None: it prepares)."""
        uids = cd.channel_domains(claim)
        if not uids:
            return None
        found = self.by_uid(uids[0]) if uids[0] else None
        labels = (self.context.peek("Node", "", node) or {}).get("metadata", {}).get("labels")
        same = found is not None and origin(claim) == (
            found[0],
            str(found[1]["metadata"].get("namespace") or ""),
        )
        return cd.channel_refusal(
            claim,
            node,
            (labels or {}).get(cd.DOMAIN_LABEL),
            found[1] if found else None,
            same,
        )


def served(cluster: str) -> ServedResource | None:
    """The ComputeDomain resource of ``cluster``, once its CRD is installed there."""
    return lookup(cd.GROUP, cd.VERSION, cd.PLURAL, cluster)


class ComputeDomainController:
    name = "compute-domain-controller"
    watches = WATCHED

    def __init__(self, contexts: ClusterContexts) -> None:
        """``contexts``: the host's and each tenant's (a tenant's domain, its status and
        its channel template are written as the tenant's controller account)."""
        self.contexts = contexts
        self.host = contexts.host
        self.domains = DomainLookup(self.host)

    # ------------------------------------------------------------------ events
    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        metadata = event.object["metadata"]
        if event.resource == cd.RESOURCE:
            return [WorkloadKey(event.cluster, metadata.get("namespace", ""), metadata["name"])]
        if event.resource in (CRDS, "namespaces"):
            return self._crd_keys(event)
        if event.cluster != HOST_CLUSTER:
            return []
        if event.resource == "pods":
            uid = (metadata.get("labels") or {}).get(cd.DOMAIN_LABEL)
            return self._keys([uid] if uid else [])
        return self._keys(cd.config_domains(event.object))

    def _crd_keys(self, event: WatchEvent) -> list[Hashable]:
        """The host's CRD installed: every tenant gets it; a new tenant namespace: its
        cluster may need it."""
        if event.resource == CRDS:
            if event.cluster != HOST_CLUSTER or event.object["metadata"]["name"] != cd.RESOURCE:
                return []
            return [("crd", c) for c in self.host.store.clusters() if c != HOST_CLUSTER]
        if event.cluster == HOST_CLUSTER or event.type == "DELETED":
            return []
        return [("crd", event.cluster)]

    def _keys(self, uids: list[str]) -> list[Hashable]:
        if not uids:
            return []  # most pods and claims: no domain's
        wanted = set(uids)
        return [
            WorkloadKey(cluster, d["metadata"].get("namespace", ""), d["metadata"]["name"])
            for cluster, d in self.domains.all()
            if d["metadata"].get("uid") in wanted
        ]

    def initial_keys(self) -> list[Hashable]:
        keys: list[Hashable] = [("crd", c) for c in self.host.store.clusters() if c != HOST_CLUSTER]
        keys += self._keys([str(d["metadata"].get("uid")) for _, d in self.domains.all()])
        return keys

    # --------------------------------------------------------------- reconcile
    def reconcile(self, key: Hashable) -> None:
        if isinstance(key, tuple) and len(key) == 2 and key[0] == "crd":
            self._install_crd(str(key[1]))
            return
        assert isinstance(key, WorkloadKey)
        resource = served(key.cluster)
        if resource is None or not self.contexts.serves(key.cluster):
            return
        context = self.contexts(key.cluster)
        found = next(
            (
                d
                for d in self.domains.in_cluster(key.cluster)
                if d["metadata"].get("namespace") == key.namespace
                and d["metadata"]["name"] == key.name
            ),
            None,
        )
        if found is None:
            return
        domain = clone_document(found)
        if domain["metadata"].get("deletionTimestamp"):
            self._tear_down(context, resource, domain)
            return
        if cd.FINALIZER not in (domain["metadata"].get("finalizers") or []):
            domain["metadata"]["finalizers"] = [
                *(domain["metadata"].get("finalizers") or []),
                cd.FINALIZER,
            ]
            domain = context.update_custom(resource, domain, MANAGER)
        self._ensure(self.host, "ResourceClaimTemplate", cd.daemon_template(domain))
        self._ensure(self.host, "DaemonSet", cd.daemon_set(domain))
        channel = cd.channel_template(domain)
        try:
            self._ensure(context, "ResourceClaimTemplate", channel)
        except AdmissionDenied as denied:  # the tenant's entitlement or quota, say
            where = f"{channel['metadata']['namespace']}/{channel['metadata']['name']}"
            message = f"error creating ResourceClaimTemplate '{where}': {denied}"
            context.event(domain, "Warning", "FailedCreate", message, MANAGER)
        self._label_nodes(str(domain["metadata"]["uid"]))
        self._write_status(context, resource, domain)

    def _install_crd(self, cluster: str) -> None:
        """A tenant cluster sees the driver's API as the host serves it: the CRD, copied
        into the tenant's cluster once the host has it."""
        if served(HOST_CLUSTER) is None or served(cluster) is not None:
            return
        if not self.contexts.serves(cluster):
            return
        tenant = ControllerContext(cluster, self.host.store, self.host.handlers, self.host.clock)
        self._ensure(tenant, "CustomResourceDefinition", cd.crd())

    @staticmethod
    def _ensure(context: ControllerContext, kind: str, document: Obj) -> None:
        metadata = document["metadata"]
        if context.peek(kind, metadata.get("namespace", ""), metadata["name"]) is not None:
            return
        try:
            context.create(kind, document, MANAGER)
        except AlreadyExists:
            return

    def _channel_nodes(self, uid: str) -> set[str]:
        """The nodes where a channel claim of the domain is allocated now."""
        return {
            node
            for claim in self.host.scan("ResourceClaim")
            if uid in cd.channel_domains(claim)
            for node in cd.channel_nodes(claim)
        }

    def _label_nodes(self, uid: str, wanted: set[str] | None = None) -> None:
        """The domain's label on its channels' nodes (a node labelled for another domain
        keeps that label: its channel's prepare is refused), and off every other node."""
        nodes = self._channel_nodes(uid) if wanted is None else wanted
        for node in self.host.scan("Node"):
            labels = node["metadata"].get("labels") or {}
            name = node["metadata"]["name"]
            current = labels.get(cd.DOMAIN_LABEL)
            if name in nodes and current is None:
                self._set_label(name, uid)
            elif name not in nodes and current == uid:
                self._set_label(name, None)

    def _set_label(self, name: str, uid: str | None) -> None:
        node = self.host.get("Node", "", name)
        if node is None:
            return
        labels = node["metadata"].setdefault("labels", {})
        if uid is None:
            labels.pop(cd.DOMAIN_LABEL, None)
        else:
            labels[cd.DOMAIN_LABEL] = uid
        self.host.update("Node", node, MANAGER)

    def _write_status(
        self, context: ControllerContext, resource: ServedResource, domain: Obj
    ) -> None:
        uid = str(domain["metadata"]["uid"])
        daemons = [
            p
            for p in self.host.scan_namespace("Pod", cd.DRIVER_NAMESPACE)
            if (p["metadata"].get("labels") or {}).get(cd.DOMAIN_LABEL) == uid
        ]
        labels = {
            n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in self.host.scan("Node")
        }
        nodes = cd.status_nodes(daemons, labels)
        status: Obj = {"status": cd.global_status(domain, nodes)}
        if nodes:
            status["nodes"] = nodes
        if domain.get("status") == status:
            return
        context.update_custom(resource, {**domain, "status": status}, MANAGER, "status")

    def _tear_down(self, context: ControllerContext, resource: ServedResource, domain: Obj) -> None:
        """Delete the domain's objects (their finalizers first), its node labels, then
        its own finalizer."""
        self._remove(context, "ResourceClaimTemplate", cd.channel_template(domain))
        self._remove(self.host, "DaemonSet", cd.daemon_set(domain))
        self._remove(self.host, "ResourceClaimTemplate", cd.daemon_template(domain))
        self._label_nodes(str(domain["metadata"]["uid"]), set())
        finalizers = domain["metadata"].get("finalizers") or []
        if cd.FINALIZER in finalizers:
            domain["metadata"]["finalizers"] = [f for f in finalizers if f != cd.FINALIZER]
            context.update_custom(resource, domain, MANAGER)

    @staticmethod
    def _remove(context: ControllerContext, kind: str, document: Obj) -> None:
        namespace, name = document["metadata"]["namespace"], document["metadata"]["name"]
        current = context.get(kind, namespace, name)
        if current is None:
            return
        finalizers = current["metadata"].get("finalizers") or []
        if cd.FINALIZER in finalizers:
            current["metadata"]["finalizers"] = [f for f in finalizers if f != cd.FINALIZER]
            context.update(kind, current, MANAGER)
        context.delete(kind, namespace, name)
