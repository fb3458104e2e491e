"""The endpoints and endpointslice controllers: what each Service's selector finds.

As kube-controller-manager 1.36's ``endpoints`` (pkg/controller/endpoint) and
``endpointslice`` (pkg/controller/endpointslice, staging k8s.io/endpointslice)
controllers: for every Service with a selector, the pods of its namespace that it
selects and that have an IP are written as core/v1 Endpoints named after the Service
(Ready pods in ``addresses``, the others in ``notReadyAddresses``; terminating and
finished pods left out unless ``publishNotReadyAddresses``) and as one
discovery.k8s.io/v1 EndpointSlice (``generateName: <service>-``, controlled by the
Service, conditions ``ready``/``serving``/``terminating``). Ports come from the Service's
``targetPort``: a number as is, a name looked up among the pod's container ports of the
same protocol (a pod without it gets no such port, as upstream's ``FindPort``). Objects
are written only when they change; a Service's Endpoints go when it goes (its slices
are garbage-collected through their owner reference). Services without a selector are
left alone. Both run in the host and every tenant cluster; registered by
:mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.api.pods import is_pod_ready
from allot.controllers.context import ControllerContext
from allot.controllers.workloads import ClusterContexts, WorkloadKey, controller_ref, event_key
from allot.statuses import RequestError
from allot.store import WatchEvent
from allot.store.errors import StoreError
from allot.types import Obj

SERVICES = "services"
PODS = "pods"
ENDPOINTS = "endpoints"
SLICES = "endpointslices.discovery.k8s.io"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
HEADLESS_LABEL = "service.kubernetes.io/headless"


# ------------------------------------------------------------------ what pods give
def _selector(service: Obj) -> dict[str, str] | None:
    return (service.get("spec") or {}).get("selector")


def selects(service: Obj, labels: dict[str, str] | None) -> bool:
    """A Service's selector is a plain map; an empty or missing one selects nothing here
    (upstream leaves such Services to whoever writes their endpoints)."""
    selector = _selector(service)
    if not selector:
        return False
    labels = labels or {}
    return all(labels.get(key) == value for key, value in selector.items())


def selected_pods(service: Obj, pods: list[Obj]) -> list[Obj]:
    """The Service's pods that have an IP, by name."""
    found = [
        pod
        for pod in pods
        if selects(service, pod["metadata"].get("labels"))
        and (pod.get("status") or {}).get("podIP")
    ]
    return sorted(found, key=lambda pod: pod["metadata"]["name"])


def _finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def in_endpoints(pod: Obj, include_terminating: bool) -> bool:
    """``ShouldPodBeInEndpoints``."""
    if _finished(pod):
        return False
    return include_terminating or not pod["metadata"].get("deletionTimestamp")


def find_port(pod: Obj, service_port: Obj) -> int | None:
    """``podutil.FindPort``: a numeric target port as is; a named one from the pod's
    containers (and restartable init containers) with that name and protocol."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    protocol = service_port.get("protocol") or "TCP"
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or []) + [
        c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"
    ]
    for container in containers:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def _port(service_port: Obj, number: int) -> Obj:
    port: Obj = {"port": number, "protocol": service_port.get("protocol") or "TCP"}
    if service_port.get("name"):
        port["name"] = service_port["name"]
    if service_port.get("appProtocol"):
        port["appProtocol"] = service_port["appProtocol"]
    return port


def pod_ports(service: Obj, pod: Obj) -> list[Obj]:
    ports = []
    for service_port in (service.get("spec") or {}).get("ports") or []:
        number = find_port(pod, service_port)
        if number is not None:
            ports.append(_port(service_port, number))
    return ports


def _target_ref(pod: Obj) -> Obj:
    metadata = pod["metadata"]
    return {
        "kind": "Pod",
        "namespace": metadata.get("namespace") or "",
        "name": metadata["name"],
        "uid": metadata.get("uid") or "",
    }


def _hostname(service: Obj, pod: Obj) -> str | None:
    spec = pod.get("spec") or {}
    if spec.get("hostname") and spec.get("subdomain") == service["metadata"]["name"]:
        return str(spec["hostname"])
    return None


def _headless(service: Obj) -> bool:
    return (service.get("spec") or {}).get("clusterIP") == "None"


def _labels(service: Obj) -> dict[str, str]:
    labels = dict(service["metadata"].get("labels") or {})
    if _headless(service):
        labels[HEADLESS_LABEL] = ""
    return labels


# ------------------------------------------------------------------------ Endpoints
def endpoint_subsets(service: Obj, pods: list[Obj]) -> list[Obj]:
    """The Endpoints' subsets (as ``RepackSubsets``): addresses grouped by the ports
    they serve, sorted by IP then pod uid."""
    spec = service.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    groups: dict[str, tuple[list[Obj], list[Obj], list[Obj]]] = {}
    for pod in selected_pods(service, pods):
        if not in_endpoints(pod, publish):
            continue
        ports = pod_ports(service, pod)
        if not ports and not (_headless(service) and not spec.get("ports")):
            continue
        address = _address(service, pod)
        key = repr(sorted(sorted(p.items()) for p in ports))
        ready, not_ready, _ = groups.setdefault(key, ([], [], ports))
        (ready if publish or is_pod_ready(pod) else not_ready).append(address)
    return [_subset(*group) for _, group in sorted(groups.items())]


def _address(service: Obj, pod: Obj) -> Obj:
    address: Obj = {"ip": pod["status"]["podIP"]}
    hostname = _hostname(service, pod)
    if hostname:
        address["hostname"] = hostname
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        address["nodeName"] = node
    address["targetRef"] = _target_ref(pod)
    return address


def _subset(ready: list[Obj], not_ready: list[Obj], ports: list[Obj]) -> Obj:
    def order(address: Obj) -> tuple[str, str]:
        return address["ip"], address["targetRef"]["uid"]

    subset: Obj = {}
    if ready:
        subset["addresses"] = sorted(ready, key=order)
    if not_ready:
        subset["notReadyAddresses"] = sorted(not_ready, key=order)
    if ports:
        subset["ports"] = sorted(ports, key=lambda p: (p.get("name") or "", p["port"]))
    return subset


# -------------------------------------------------------------------- EndpointSlice
def slice_content(service: Obj, pods: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """The one slice's ``endpoints`` and ``ports``: every selected pod with an IP that is
    not finished (terminating ones too, with ``terminating: true``)."""
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    endpoints: list[Obj] = []
    ports: list[Obj] = []
    for pod in selected_pods(service, pods):
        if not in_endpoints(pod, True):
            continue
        pod_port_list = pod_ports(service, pod)
        if pod_port_list and not ports:  # the slice's ports always name themselves
            ports = [{"name": "", **port} for port in pod_port_list]
        endpoints.append(_slice_endpoint(service, pod, publish))
    return endpoints, ports


def _slice_endpoint(service: Obj, pod: Obj, publish: bool) -> Obj:
    ready = is_pod_ready(pod)
    terminating = bool(pod["metadata"].get("deletionTimestamp"))
    endpoint: Obj = {
        "addresses": [pod["status"]["podIP"]],
        "conditions": {
            "ready": publish or (ready and not terminating),
            "serving": ready,
            "terminating": terminating,
        },
    }
    hostname = _hostname(service, pod)
    if hostname:
        endpoint["hostname"] = hostname
    endpoint["targetRef"] = _target_ref(pod)
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        endpoint["nodeName"] = node
    return endpoint


# ---------------------------------------------------------------------- controllers
def service_keys(contexts: ClusterContexts, event: WatchEvent) -> list[Hashable]:
    """The Services an event concerns: the Service itself, or those of the pod's
    namespace that select the pod now or did before (nothing to look at, and next to no
    cost, in a namespace without Services)."""
    if not contexts.serves(event.cluster):
        return []
    if event.resource == SERVICES:
        return [event_key(event)]
    metadata = event.object["metadata"]
    namespace = metadata.get("namespace") or ""
    services = contexts(event.cluster).scan_namespace("Service", namespace)
    if not services:
        return []
    label_sets = [metadata.get("labels")]
    if event.previous is not None:
        label_sets.append(event.previous["metadata"].get("labels"))
    return [
        WorkloadKey(event.cluster, namespace, service["metadata"]["name"])
        for service in services
        if any(selects(service, labels) for labels in label_sets)
    ]


def _with_selector(service: Obj) -> bool:
    return bool(_selector(service))


class EndpointsController:
    """kube-controller-manager's ``endpoints`` controller."""

    name = "endpoints"
    watches = frozenset({SERVICES, PODS, ENDPOINTS})
    manager = "endpoint-controller"

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.resource == ENDPOINTS:  # one deleted by hand is written again
            wanted = event.type == "DELETED" and self.contexts.serves(event.cluster)
            return [event_key(event)] if wanted else []
        return service_keys(self.contexts, event)

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("Service", _with_selector)

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        if not self.contexts.serves(key.cluster):
            return
        context = self.contexts(key.cluster)
        service = context.peek("Service", key.namespace, key.name)
        current = context.get("Endpoints", key.namespace, key.name)
        if service is None or service["metadata"].get("deletionTimestamp"):
            if current is not None and service is None:
                context.delete("Endpoints", key.namespace, key.name)
            return
        if not _with_selector(service):
            return
        subsets = endpoint_subsets(service, context.scan_namespace("Pod", key.namespace))
        labels = _labels(service)
        if current is None:
            self._create(context, service, subsets, labels)
        elif (current.get("subsets") or []) != subsets or (
            current["metadata"].get("labels") or {}
        ) != labels:
            current["subsets"] = subsets
            if not subsets:  # Go's omitempty
                del current["subsets"]
            current["metadata"]["labels"] = labels
            if not labels:
                del current["metadata"]["labels"]
            context.update("Endpoints", current, self.manager)

    def _create(
        self, context: ControllerContext, service: Obj, subsets: list[Obj], labels: dict[str, str]
    ) -> None:
        metadata: Obj = {
            "name": service["metadata"]["name"],
            "namespace": service["metadata"]["namespace"],
        }
        if labels:
            metadata["labels"] = labels
        body: Obj = {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata}
        if subsets:
            body["subsets"] = subsets
        try:
            context.create("Endpoints", body, self.manager)
        except (StoreError, RequestError):  # made meanwhile, or the namespace is going
            return


class EndpointSliceController:
    """kube-controller-manager's ``endpointslice`` controller (one IPv4 slice per
    Service)."""

    name = "endpointslice"
    watches = frozenset({SERVICES, PODS, SLICES})
    manager = "endpointslice-controller"

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.resource == SLICES:
            labels = event.object["metadata"].get("labels") or {}
            if labels.get(MANAGED_BY_LABEL) != MANAGED_BY or not self.contexts.serves(
                event.cluster
            ):
                return []
            namespace = event.object["metadata"].get("namespace") or ""
            return [WorkloadKey(event.cluster, namespace, labels.get(SERVICE_NAME_LABEL, ""))]
        return service_keys(self.contexts, event)

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("Service", _with_selector)

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, "Service")
        if found is None:
            return  # its slices went with it (owner reference)
        context, service = found
        if service["metadata"].get("deletionTimestamp") or not _with_selector(service):
            return
        endpoints, ports = slice_content(service, context.scan_namespace("Pod", key.namespace))
        owned = [
            s
            for s in context.owned_by("EndpointSlice", service)
            if (s["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY
        ]
        labels = {**_labels(service), SERVICE_NAME_LABEL: key.name, MANAGED_BY_LABEL: MANAGED_BY}
        if not owned:
            self._create(context, service, labels, endpoints, ports)
            return
        first, *extra = sorted(owned, key=lambda s: s["metadata"]["name"])
        for surplus in extra:
            context.delete("EndpointSlice", key.namespace, surplus["metadata"]["name"])
        wanted = {"endpoints": endpoints, "ports": ports}
        have = {"endpoints": first.get("endpoints") or [], "ports": first.get("ports") or []}
        if have != wanted or (first["metadata"].get("labels") or {}) != labels:
            updated = context.get("EndpointSlice", key.namespace, first["metadata"]["name"])
            if updated is None:
                return
            updated["metadata"]["labels"] = labels
            updated["endpoints"] = endpoints
            if ports:
                updated["ports"] = ports
            else:
                updated.pop("ports", None)
            context.update("EndpointSlice", updated, self.manager)

    def _create(
        self,
        context: ControllerContext,
        service: Obj,
        labels: dict[str, str],
        endpoints: list[Obj],
        ports: list[Obj],
    ) -> None:
        body: Obj = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "generateName": f"{service['metadata']['name'][:57]}-",
                "namespace": service["metadata"]["namespace"],
                "labels": labels,
                "ownerReferences": [controller_ref(service)],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
        }
        if ports:
            body["ports"] = ports
        try:
            context.create("EndpointSlice", body, self.manager)
        except (StoreError, RequestError):
            return
