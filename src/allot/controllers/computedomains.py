"""The NVIDIA driver's ComputeDomain controller, for the host cluster's ComputeDomains.

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
:class:`DomainLookup` finds a domain by UID for the node agent, which prepares a channel only
once its node's daemon is ready. Built by :mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.api.documents import clone_document
from allot.controllers.context import ControllerContext
from allot.driver import computedomain as cd
from allot.registry.resources import ServedResource
from allot.store import WatchEvent
from allot.store.errors import AlreadyExists
from allot.types import Obj

MANAGER = "compute-domain-controller"
CLAIMS = "resourceclaims.resource.k8s.io"
WATCHED = frozenset({cd.RESOURCE, "pods", CLAIMS})


class DomainLookup:
    """The cluster's ComputeDomains (none while their CRD is not installed)."""

    def __init__(self, context: ControllerContext) -> None:
        self.context = context

    def resource(self) -> ServedResource | None:
        return self.context.custom(cd.GROUP, cd.VERSION, cd.PLURAL)

    def all(self) -> list[Obj]:
        resource = self.resource()
        return self.context.scan_custom(resource) if resource is not None else []

    def by_uid(self, uid: str) -> Obj | None:
        return next((d for d in self.all() if d["metadata"].get("uid") == uid), None)


class ComputeDomainController:
    name = "compute-domain-controller"
    watches = WATCHED

    def __init__(self, context: ControllerContext) -> None:
        self.context = context
        self.domains = DomainLookup(context)

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.cluster != self.context.cluster:
            return []
        if event.resource == cd.RESOURCE:
            metadata = event.object["metadata"]
            return [(metadata.get("namespace", ""), metadata["name"])]
        if event.resource == "pods":
            uid = ((event.object["metadata"].get("labels")) or {}).get(cd.DOMAIN_LABEL)
            return self._keys([uid] if uid else [])
        return self._keys(cd.config_domains(event.object))

    def _keys(self, uids: list[str]) -> list[Hashable]:
        if not uids:
            return []
        wanted = set(uids)
        return [
            (d["metadata"].get("namespace", ""), d["metadata"]["name"])
            for d in self.domains.all()
            if d["metadata"].get("uid") in wanted
        ]

    def initial_keys(self) -> list[Hashable]:
        return [
            (d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in self.domains.all()
        ]

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        namespace, name = key
        resource = self.domains.resource()
        found = next(
            (
                d
                for d in self.domains.all()
                if d["metadata"].get("namespace") == namespace and d["metadata"]["name"] == name
            ),
            None,
        )
        if resource is None or found is None:
            return
        domain = clone_document(found)
        if domain["metadata"].get("deletionTimestamp"):
            self._tear_down(resource, domain)
            return
        if cd.FINALIZER not in (domain["metadata"].get("finalizers") or []):
            domain["metadata"]["finalizers"] = [
                *(domain["metadata"].get("finalizers") or []),
                cd.FINALIZER,
            ]
            domain = self.context.update_custom(resource, domain, MANAGER)
        for kind, document in (
            ("ResourceClaimTemplate", cd.daemon_template(domain)),
            ("DaemonSet", cd.daemon_set(domain)),
            ("ResourceClaimTemplate", cd.channel_template(domain)),
        ):
            self._ensure(kind, document)
        self._label_nodes(str(domain["metadata"]["uid"]))
        self._write_status(resource, domain)

    def _ensure(self, kind: str, document: Obj) -> None:
        metadata = document["metadata"]
        if self.context.peek(kind, metadata["namespace"], metadata["name"]) is not None:
            return
        try:
            self.context.create(kind, document, MANAGER)
        except AlreadyExists:
            return

    def _channel_nodes(self, uid: str) -> set[str]:
        """The nodes where a channel claim of the domain is allocated now."""
        return {
            node
            for claim in self.context.scan("ResourceClaim")
            if uid in cd.channel_domains(claim)
            for node in cd.channel_nodes(claim)
        }

    def _label_nodes(self, uid: str, wanted: set[str] | None = None) -> None:
        """The domain's label on its channels' nodes (a node labelled for another domain
        keeps that label: its channel's prepare is refused), and off every other node."""
        nodes = self._channel_nodes(uid) if wanted is None else wanted
        for node in self.context.scan("Node"):
            labels = node["metadata"].get("labels") or {}
            name = node["metadata"]["name"]
            current = labels.get(cd.DOMAIN_LABEL)
            if name in nodes and current is None:
                self._set_label(name, uid)
            elif name not in nodes and current == uid:
                self._set_label(name, None)

    def _set_label(self, name: str, uid: str | None) -> None:
        node = self.context.get("Node", "", name)
        if node is None:
            return
        labels = node["metadata"].setdefault("labels", {})
        if uid is None:
            labels.pop(cd.DOMAIN_LABEL, None)
        else:
            labels[cd.DOMAIN_LABEL] = uid
        self.context.update("Node", node, MANAGER)

    def _write_status(self, resource: ServedResource, domain: Obj) -> None:
        uid = str(domain["metadata"]["uid"])
        daemons = [
            p
            for p in self.context.scan_namespace("Pod", cd.DRIVER_NAMESPACE)
            if (p["metadata"].get("labels") or {}).get(cd.DOMAIN_LABEL) == uid
        ]
        labels = {
            n["metadata"]["name"]: n["metadata"].get("labels") or {}
            for n in self.context.scan("Node")
        }
        nodes = cd.status_nodes(daemons, labels)
        status: Obj = {"status": cd.global_status(domain, nodes)}
        if nodes:
            status["nodes"] = nodes
        if domain.get("status") == status:
            return
        self.context.update_custom(resource, {**domain, "status": status}, MANAGER, "status")

    def _tear_down(self, resource: ServedResource, domain: Obj) -> None:
        """Delete the domain's objects (their finalizers first), its node labels, then
        its own finalizer."""
        for kind, document in (
            ("ResourceClaimTemplate", cd.channel_template(domain)),
            ("DaemonSet", cd.daemon_set(domain)),
            ("ResourceClaimTemplate", cd.daemon_template(domain)),
        ):
            self._remove(kind, document["metadata"]["namespace"], document["metadata"]["name"])
        self._label_nodes(str(domain["metadata"]["uid"]), set())
        finalizers = domain["metadata"].get("finalizers") or []
        if cd.FINALIZER in finalizers:
            domain["metadata"]["finalizers"] = [f for f in finalizers if f != cd.FINALIZER]
            self.context.update_custom(resource, domain, MANAGER)

    def _remove(self, kind: str, namespace: str, name: str) -> None:
        current = self.context.get(kind, namespace, name)
        if current is None:
            return
        finalizers = current["metadata"].get("finalizers") or []
        if cd.FINALIZER in finalizers:
            current["metadata"]["finalizers"] = [f for f in finalizers if f != cd.FINALIZER]
            self.context.update(kind, current, MANAGER)
        self.context.delete(kind, namespace, name)
