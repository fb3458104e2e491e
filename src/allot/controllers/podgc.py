"""The pod garbage collector's orphan rule: pods bound to a node that no longer exists.

As kube-controller-manager 1.36's ``pod-garbage-collector`` (``pkg/controller/podgc``, its
orphan pass): a pod whose ``spec.nodeName`` names a Node that is gone (``allot fleet scale``
removed it, or ``kubectl delete node``) gets the condition ``DisruptionTarget`` (reason
``DeletionByPodGC``, message ``PodGC: node no longer exists``) and, unless it finished
already, the phase ``Failed``; then it is deleted with grace period 0, since no kubelet is
left to end it. The resourceclaim controller then releases its claims (the audit records
the release, so usage stops counting a GPU that left the fleet), and a tenant pod's twin
going takes the tenant's pod with it (its workload makes another). Upstream waits 40 s
first (its quarantine against informers that lag behind); the store here is consistent,
so the pod is collected at once. Host cluster only: tenant pods run as host twins.
Built by :mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.controllers.context import ControllerContext
from allot.registry import HOST_CLUSTER
from allot.store import WatchEvent
from allot.store.errors import Conflict
from allot.types import Obj, rfc3339

MANAGER = "pod-garbage-collector"
NODES = "nodes"
TERMINAL = ("Succeeded", "Failed")


def orphan_condition(now: str) -> Obj:
    """The condition upstream's collector puts on a pod whose node is gone."""
    return {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByPodGC",
        "message": "PodGC: node no longer exists",
        "lastTransitionTime": now,
    }


class PodGarbageCollector:
    name = "pod-garbage-collector"
    watches = frozenset({NODES})  # the resources keys_for answers for

    def __init__(self, host: ControllerContext) -> None:
        self.host = host

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.cluster != HOST_CLUSTER or event.resource != NODES or event.type != "DELETED":
            return []
        return self._bound_to({event.object["metadata"]["name"]})

    def initial_keys(self) -> list[Hashable]:
        """Pods of nodes removed while the platform was down."""
        nodes = {n["metadata"]["name"] for n in self.host.scan("Node")}
        bound = {(p.get("spec") or {}).get("nodeName") for p in self.host.scan("Pod")}
        return self._bound_to({n for n in bound if n and n not in nodes})

    def _bound_to(self, nodes: set[str]) -> list[Hashable]:
        return [
            (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
            for pod in self.host.scan("Pod")
            if (pod.get("spec") or {}).get("nodeName") in nodes
        ]

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        namespace, name = key
        pod = self.host.get("Pod", namespace, name)
        node = (pod.get("spec") or {}).get("nodeName") if pod is not None else None
        if pod is None or not node or self.host.peek("Node", "", node) is not None:
            return
        status = pod.setdefault("status", {})
        conditions = [
            c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"
        ]
        status["conditions"] = [*conditions, orphan_condition(rfc3339(self.host.clock()))]
        if status.get("phase") not in TERMINAL:
            status["phase"] = "Failed"
        pod = self.host.update_status("Pod", pod, MANAGER)  # a Conflict is retried
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": pod["metadata"].get("uid")}}
        try:
            self.host.delete("Pod", namespace, name, options)
        except Conflict:
            return  # replaced by another pod of that name meanwhile
