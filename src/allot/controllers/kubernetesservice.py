"""The ``kubernetes`` Service in ``default``: how a cluster names its own API server.

kube-apiserver keeps a Service ``kubernetes`` in namespace ``default`` of every cluster
(vCluster's virtual clusters have one too): ``type: ClusterIP`` with the first address of
the service range (10.96.0.1, which the allocator never hands out otherwise), port 443
named ``https`` toward the API server's secure port, labels ``component: apiserver`` and
``provider: kubernetes``. ``kubectl get svc`` and ``kubectl get all`` show it, and
manifests and scripts expect it. This controller creates it in the host and every tenant
cluster when ``default`` appears and again when it is deleted, and with it the Endpoints
and EndpointSlice ``kubernetes`` as kube-apiserver's endpoint reconciler keeps them (the
address 127.0.0.1, allot's pods' address too, and the server's port; the Endpoints
labelled ``endpointslice.kubernetes.io/skip-mirror``). allot serves no Service
networking (see the ledger), so like every Service it is a record, not a route. Registered
by :mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from allot.controllers.workloads import ClusterContexts, WorkloadKey
from allot.registry.clusterips import SERVICE_RANGE
from allot.statuses import RequestError
from allot.store import WatchEvent
from allot.store.errors import StoreError
from allot.types import Obj

NAME = "kubernetes"
NAMESPACE = "default"
ADDRESS = str(SERVICE_RANGE.network_address + 1)
SERVER_ADDRESS = "127.0.0.1"  # where allot's API server listens, as its pods' address
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
DEFAULT_PORT = 6443  # kube-apiserver's secure port, until the platform listens


class KubernetesService:
    name = "kubernetes-service"
    # the resources keys_for answers for
    watches = frozenset({"namespaces", "services", "endpoints", "endpointslices.discovery.k8s.io"})

    def __init__(self, contexts: ClusterContexts, port: Callable[[], int | None]) -> None:
        """``port``: the port the platform's API server listens on, once it does."""
        self.contexts = contexts
        self.port = port

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        metadata = event.object["metadata"]
        if event.resource == "namespaces" and event.type != "DELETED":
            wanted = metadata["name"] == NAMESPACE
        else:
            wanted = event.resource != "namespaces" and event.type == "DELETED"
            wanted = wanted and (metadata.get("namespace"), metadata["name"]) == (NAMESPACE, NAME)
            if event.resource == "endpointslices.discovery.k8s.io":
                labels = metadata.get("labels") or {}
                wanted = event.type == "DELETED" and labels.get(SERVICE_NAME_LABEL) == NAME
                wanted = wanted and metadata.get("namespace") == NAMESPACE
        return [WorkloadKey(event.cluster, NAMESPACE, NAME)] if wanted else []

    def initial_keys(self) -> list[Hashable]:
        clusters = self.contexts.host.store.clusters()
        return [WorkloadKey(c, NAMESPACE, NAME) for c in clusters if self.contexts.serves(c)]

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        context = self.contexts(key.cluster)
        namespace = context.peek("Namespace", "", NAMESPACE)
        if namespace is None or namespace["metadata"].get("deletionTimestamp"):
            return
        for kind, body in (
            ("Service", self.desired()),
            ("Endpoints", self.endpoints()),
            ("EndpointSlice", self.endpoint_slice()),
        ):
            if context.peek(kind, NAMESPACE, NAME) is not None:
                continue
            try:
                context.create(kind, body, "kube-apiserver")
            except (StoreError, RequestError):  # made meanwhile, or 10.96.0.1 is taken
                continue

    def _port(self) -> int:
        return self.port() or DEFAULT_PORT

    def endpoints(self) -> Obj:
        """What kube-apiserver's lease reconciler writes for itself."""
        return {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {
                "name": NAME,
                "namespace": NAMESPACE,
                "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
            },
            "subsets": [
                {
                    "addresses": [{"ip": SERVER_ADDRESS}],
                    "ports": [{"name": "https", "port": self._port(), "protocol": "TCP"}],
                }
            ],
        }

    def endpoint_slice(self) -> Obj:
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": NAME,
                "namespace": NAMESPACE,
                "labels": {SERVICE_NAME_LABEL: NAME},
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [SERVER_ADDRESS], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "protocol": "TCP", "port": self._port()}],
        }

    def desired(self) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": NAME,
                "namespace": NAMESPACE,
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "type": "ClusterIP",
                "clusterIP": ADDRESS,
                "clusterIPs": [ADDRESS],
                "ports": [
                    {
                        "name": "https",
                        "port": 443,
                        "protocol": "TCP",
                        "targetPort": self._port(),
                    }
                ],
                "sessionAffinity": "None",
            },
        }
