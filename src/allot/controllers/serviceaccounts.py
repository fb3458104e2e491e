"""The serviceaccounts controller: a ``default`` ServiceAccount in every namespace.

As kube-controller-manager's serviceaccounts controller, it creates the ``default``
ServiceAccount when a namespace appears and again whenever it is deleted, in every cluster
(the host and each tenant: a tenant's cluster gets its own accounts, written as the
tenant's ``serviceaccount-controller`` account), but not in a namespace being deleted.
Ordinary manifests that name ``serviceAccountName: default`` (or that the pod defaulting
gives it) then find it. Registered by :mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.controllers.workloads import ClusterContexts, WorkloadKey
from allot.store import WatchEvent
from allot.store.errors import AlreadyExists, NotFound

DEFAULT_ACCOUNT = "default"
MANAGER = "serviceaccount-controller"


class ServiceAccounts:
    name = "serviceaccount"
    watches = frozenset({"namespaces", "serviceaccounts"})  # the resources keys_for answers for

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        metadata = event.object["metadata"]
        if event.resource == "namespaces" and event.type != "DELETED":
            return [WorkloadKey(event.cluster, metadata["name"], DEFAULT_ACCOUNT)]
        if (
            event.resource == "serviceaccounts"
            and event.type == "DELETED"
            and metadata.get("name") == DEFAULT_ACCOUNT
        ):
            return [WorkloadKey(event.cluster, metadata.get("namespace") or "", DEFAULT_ACCOUNT)]
        return []

    def initial_keys(self) -> list[Hashable]:
        host = self.contexts.host
        keys: list[Hashable] = []
        for cluster in host.store.clusters():
            if self.contexts.serves(cluster):
                namespaces = self.contexts(cluster).list("Namespace")
                keys += [
                    WorkloadKey(cluster, n["metadata"]["name"], DEFAULT_ACCOUNT) for n in namespaces
                ]
        return keys

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        context = self.contexts(key.cluster)
        namespace = context.peek("Namespace", "", key.namespace)
        if namespace is None or _terminating(namespace):
            return
        if context.peek("ServiceAccount", key.namespace, key.name) is not None:
            return
        account = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": key.name, "namespace": key.namespace},
        }
        try:
            context.create("ServiceAccount", account, MANAGER)
        except (AlreadyExists, NotFound):  # made meanwhile, or the namespace went away
            return


def _terminating(namespace: dict[str, object]) -> bool:
    metadata = namespace.get("metadata")
    status = namespace.get("status")
    deleting = isinstance(metadata, dict) and bool(metadata.get("deletionTimestamp"))
    phase = status.get("phase") if isinstance(status, dict) else None
    return deleting or phase == "Terminating"
