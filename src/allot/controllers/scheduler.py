"""The scheduler: places pending pods on nodes, allocating their claims with the allocator.

Per pod, as kube-scheduler with the DynamicResources plugin does:

1. resolve the pod's claims (named, or generated and listed in
   ``status.resourceClaimStatuses``; a missing one parks the pod until it appears); pods
   asking for GPUs through extended resources (``nvidia.com/gpu: 1``) get the special
   claim of the DeviceClass whose ``extendedResourceName`` matches;
2. filter nodes: unschedulable, untolerated NoSchedule/NoExecute taints, ``nodeSelector``
   and required node affinity, already-allocated claims' node selectors;
3. on the remaining nodes in the placement policy's order (``allot.allocator.placement``:
   name order, or fullest first), take the first where the allocator places every
   unallocated claim (the same choice ``allot simulate --placement`` makes);
4. write each claim's finalizer, ``status.allocation`` and ``reservedFor``, then bind.

Beyond kube-scheduler, a namespace may carry a GPU-memory limit (a tenant's
``spec.quota.gpuMemory``, given as ``memory_limit``): a node whose allocation would take
the namespace's allocated device ``memory`` past it does not fit, with a reason saying so.
And a namespace may be entitled to some classes only (a tenant's, given as
``entitlement``): a pod whose claims, allocated or not, name a class outside it is not
scheduled, so a claim created before its class was revoked is never allocated or shared
through it; the pod is retried when an entitlement changes.

A pod that fits nowhere gets ``PodScheduled=False``/``Unschedulable`` with the scheduler's
message and a ``FailedScheduling`` Event, and is parked until slices, classes, nodes or
claims change. Allocated state is kept incrementally from claim events.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from allot.allocator import AllocatedState, AllocationError, Allocator, InvalidPoolsError
from allot.allocator.nodes import node_selector_matches
from allot.allocator.placement import check_placement, order_nodes
from allot.allocator.requests import needs_in_use_devices
from allot.api import core_v1 as corev1
from allot.api import resource_v1 as resourceapi
from allot.api.documents import clone_document
from allot.api.podresources import container_requests
from allot.api.quantity import NANO, Quantity, QuantityFormat
from allot.controllers.context import ControllerContext
from allot.registry.admission import AdmissionDenied
from allot.simulation.runner import scheduler_message
from allot.store import WatchEvent

MANAGER = "allot-scheduler"
FINALIZER = "resource.kubernetes.io/delete-protection"
EXTENDED_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
MemoryLimit = Callable[[str], tuple[str, Quantity] | None]
"""namespace -> (whose limit, the limit), or None when the namespace has none."""
BLOCKING = ("NoSchedule", "NoExecute")
WAKE_RESOURCES = {"resourceslices.resource.k8s.io", "deviceclasses.resource.k8s.io", "nodes"}
Obj = dict[str, Any]


class Entitlement(Protocol):
    """Which classes a namespace may use now (implemented by tenancy, injected)."""

    def refusal(self, claim: Obj) -> str:
        """Why ``claim`` may not be allocated or reserved now; "" when it may."""

    def changed(self, event: WatchEvent) -> bool:
        """Whether ``event`` may change what ``refusal`` answers."""


class Unschedulable(Exception):
    """The pod cannot be scheduled now; the message goes to its PodScheduled condition."""


class Gated(Exception):
    """The pod waits for the resourceclaim controller to create its claim: as upstream's
    DynamicResources PreEnqueue, it is parked without a status write or an Event."""


class Scheduler:
    name = "scheduler"

    def __init__(
        self,
        context: ControllerContext,
        placement: str = "first-fit",
        memory_limit: MemoryLimit | None = None,
        observe_allocation: Callable[[float], None] | None = None,
        entitlement: Entitlement | None = None,
    ) -> None:
        self.context = context
        self.entitlement = entitlement
        self.observe_allocation = observe_allocation or (lambda seconds: None)
        self.placement = check_placement(placement)
        self.memory_limit = memory_limit
        self._memory: dict[tuple[str, str, str], int] | None = None
        self.parked: set[tuple[str, str, str]] = set()
        self._allocator: Allocator | None = None
        self._nodes: list[corev1.Node] | None = None
        self._allocations: dict[str, Obj] = {}
        self._state: AllocatedState | None = None
        # Nodes seen with every device exclusively allocated. Allocations only grow until a
        # claim is freed or slices and nodes change, so membership holds until then.
        self._full: set[str] = set()

    # ------------------------------------------------------------------ events
    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.cluster != self.context.cluster:
            return []
        if self.entitlement is not None and self.entitlement.changed(event):
            return self._unpark()
        if event.resource in WAKE_RESOURCES:
            self._allocator = None
            self._nodes = None
            self._memory = None
            self._full.clear()
            return self._unpark()
        if event.resource == "resourceclaims.resource.k8s.io":
            freed = self._track_claim(event)
            return self._unpark() if freed or event.type == "ADDED" else []
        if event.resource == "pods":
            metadata = event.object["metadata"]
            key = ("pod", metadata.get("namespace", ""), metadata["name"])
            if event.type == "DELETED":
                self.parked.discard(key)
                return self._unpark()
            if not (event.object.get("spec") or {}).get("nodeName"):
                return [key]
        return []

    def _unpark(self) -> list[Hashable]:
        keys: list[Hashable] = list(self.parked)
        self.parked.clear()
        return keys

    def _track_claim(self, event: WatchEvent) -> bool:
        """Keep the allocated-device index current; True when devices were freed."""
        metadata = event.object["metadata"]
        key = f"{metadata.get('namespace')}/{metadata['name']}"
        allocation = (event.object.get("status") or {}).get("allocation")
        if event.type == "DELETED":
            allocation = None
        previous = self._allocations.get(key)
        if allocation == previous:
            return False
        if allocation is None:
            self._allocations.pop(key, None)
        else:
            self._allocations[key] = allocation
        self._state = None
        if previous is not None:
            self._full.clear()
        return previous is not None

    def initial_keys(self) -> list[Hashable]:
        for claim in self.context.list("ResourceClaim"):
            allocation = (claim.get("status") or {}).get("allocation")
            if allocation:
                metadata = claim["metadata"]
                self._allocations[f"{metadata.get('namespace')}/{metadata['name']}"] = allocation
        return [
            ("pod", p["metadata"].get("namespace", ""), p["metadata"]["name"])
            for p in self.context.list("Pod")
            if not (p.get("spec") or {}).get("nodeName")
        ]

    # --------------------------------------------------------------- reconcile
    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, tuple)
        _, namespace, name = key
        pod = self.context.get("Pod", namespace, name)
        if (
            pod is None
            or (pod.get("spec") or {}).get("nodeName")
            or pod["metadata"].get("deletionTimestamp")
        ):
            return
        try:
            claims = self._claims(pod)
            placement = self._place(pod, claims)
        except Gated:
            self.parked.add(("pod", namespace, name))
            return
        except Unschedulable as problem:
            self.parked.add(("pod", namespace, name))
            self._mark_unschedulable(pod, str(problem))
            return
        except AllocationError as err:
            self.parked.add(("pod", namespace, name))
            self._mark_unschedulable(
                pod, f"running DynamicResources filter plugin: {err}", reason="SchedulerError"
            )
            return
        except AdmissionDenied as denied:  # the extended-resource claim was refused
            self.parked.add(("pod", namespace, name))
            self._mark_unschedulable(pod, f"creating the extended-resource claim: {denied}")
            return
        self._bind(pod, claims, placement)

    # ------------------------------------------------------------------ claims
    def _claims(self, pod: Obj) -> list[Obj]:
        namespace = pod["metadata"].get("namespace", "")
        statuses = {
            s["name"]: s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        }
        claims = []
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = pod_claim.get("resourceClaimName")
            if pod_claim.get("resourceClaimTemplateName"):
                if pod_claim["name"] not in statuses:
                    raise Gated()
                name = statuses[pod_claim["name"]]
                if name is None:
                    continue
            claim = self.context.peek("ResourceClaim", namespace, name or "")
            if claim is None:
                raise Unschedulable(f'resourceclaim.resource.k8s.io "{name}" not found')
            if claim["metadata"].get("deletionTimestamp"):
                raise Unschedulable(f'resourceclaim "{name}" is being deleted')
            claims.append(claim)
        extended = self._extended_claim(pod)
        if extended is not None:
            claims.append(extended)
        return claims

    def _extended_claim(self, pod: Obj) -> Obj | None:
        """The claim behind extended-resource requests (``nvidia.com/gpu: 1``), if any."""
        requests = self._extended_requests(pod)
        if not requests:
            return None
        status = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
        namespace = pod["metadata"].get("namespace", "")
        if status.get("resourceClaimName"):
            existing = self.context.get("ResourceClaim", namespace, status["resourceClaimName"])
            if existing is not None:
                return existing
        orphan = self._unrecorded_extended_claim(pod)
        if orphan is not None:  # created by an attempt that failed before recording it
            return self._record_extended_claim(pod, requests, orphan)
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "generateName": f"{pod['metadata']['name']}-extended-resources-",
                "namespace": namespace,
                "annotations": {EXTENDED_ANNOTATION: "true"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod["metadata"]["name"],
                        "uid": pod["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": request,
                            "exactly": {
                                "deviceClassName": device_class,
                                "allocationMode": "ExactCount",
                                "count": count,
                            },
                        }
                        for request, (_, _, device_class, count) in requests.items()
                    ]
                }
            },
        }
        created = self.context.create("ResourceClaim", claim, MANAGER)
        return self._record_extended_claim(pod, requests, created)

    def _unrecorded_extended_claim(self, pod: Obj) -> Obj | None:
        uid = pod["metadata"]["uid"]
        for claim in self.context.list("ResourceClaim", pod["metadata"].get("namespace", "")):
            metadata = claim["metadata"]
            if (metadata.get("annotations") or {}).get(EXTENDED_ANNOTATION) != "true":
                continue
            if metadata.get("deletionTimestamp"):
                continue
            if any(o.get("uid") == uid for o in metadata.get("ownerReferences") or []):
                return clone_document(claim)
        return None

    def _record_extended_claim(
        self, pod: Obj, requests: dict[str, tuple[str, str, str, int]], claim: Obj
    ) -> Obj:
        """Name the claim in the pod's ``status.extendedResourceClaimStatus``."""
        namespace = pod["metadata"].get("namespace", "")
        latest = self.context.get("Pod", namespace, pod["metadata"]["name"])
        if latest is not None:
            latest.setdefault("status", {})["extendedResourceClaimStatus"] = {
                "requestMappings": [
                    {"containerName": container, "resourceName": resource, "requestName": request}
                    for request, (container, resource, _, _) in requests.items()
                ],
                "resourceClaimName": claim["metadata"]["name"],
            }
            self.context.update_status("Pod", latest, MANAGER)
        return claim

    def _extended_requests(self, pod: Obj) -> dict[str, tuple[str, str, str, int]]:
        by_name = {}
        for device_class in self.context.list("DeviceClass"):
            spec = device_class.get("spec") or {}
            name = device_class["metadata"]["name"]
            by_name[IMPLICIT_PREFIX + name] = name
            if spec.get("extendedResourceName"):
                by_name[spec["extendedResourceName"]] = name
        requests: dict[str, tuple[str, str, str, int]] = {}
        spec = pod.get("spec") or {}
        containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
        for index, container in enumerate(containers):
            amounts = container_requests(container)  # what quota charged: requests, defaulted
            for position, resource in enumerate(sorted(amounts)):
                count = -(-amounts[resource].nanos // NANO)
                if resource in by_name and count > 0:
                    requests[f"container-{index}-request-{position}"] = (
                        container.get("name", ""),
                        resource,
                        by_name[resource],
                        count,
                    )
        return requests

    # -------------------------------------------------------------------- nodes
    def _node_list(self) -> list[corev1.Node]:
        if self._nodes is None:
            self._nodes = [corev1.Node.model_validate(n) for n in self.context.list("Node")]
        return self._nodes

    def _allocator_for(self) -> Allocator:
        if self._allocator is None:
            slices = [
                resourceapi.ResourceSlice.model_validate(s)
                for s in self.context.list("ResourceSlice")
            ]
            classes = [
                resourceapi.DeviceClass.model_validate(c) for c in self.context.list("DeviceClass")
            ]
            self._allocator = Allocator(slices, classes)
        return self._allocator

    def _allocated_state(self) -> AllocatedState:
        if self._state is None:
            state = AllocatedState()
            for key, allocation in self._allocations.items():
                state.add_allocation(key, resourceapi.AllocationResult.model_validate(allocation))
            self._state = state
        return self._state

    def _place(self, pod: Obj, claims: list[Obj]) -> tuple[corev1.Node, list[Obj], list[Any]]:
        nodes = self._node_list()
        if self.placement != "first-fit":
            state = self._allocated_state()
            nodes = order_nodes(
                nodes, self.placement, lambda n: self._allocator_for().free_devices(n, state)
            )
        pending = [c for c in claims if not (c.get("status") or {}).get("allocation")]
        self._check_classes(pending)
        self._check_entitlement(claims)
        models = [resourceapi.ResourceClaim.model_validate(c) for c in pending]
        may_skip_full = models and not any(needs_in_use_devices(m) for m in models)
        reasons: dict[str, str] = {}
        node_filter = _NodeFilter(pod, claims)
        for node in nodes:
            problem = node_filter.problem(node)
            if problem:
                reasons[node.metadata.name or ""] = problem
                continue
            if not models:
                return node, [], []
            if may_skip_full and self._known_full(node):
                reasons[node.metadata.name or ""] = "cannot allocate all claims"
                continue
            started = time.perf_counter()
            try:
                results = self._allocator_for().allocate(node, models, self._allocated_state())
            except InvalidPoolsError as err:
                reasons[node.metadata.name or ""] = str(err)
                continue
            finally:
                self.observe_allocation(time.perf_counter() - started)
            if results is None:
                reasons[node.metadata.name or ""] = "cannot allocate all claims"
                continue
            over = self._memory_problem(pod["metadata"].get("namespace", ""), results)
            if over:
                reasons[node.metadata.name or ""] = over
                continue
            return node, pending, results
        raise Unschedulable(scheduler_message(len(nodes), reasons))

    # ------------------------------------------------------------ GPU memory
    def _memory_problem(self, namespace: str, results: list[Any]) -> str:
        limit = self.memory_limit(namespace) if self.memory_limit else None
        if limit is None:
            return ""
        owner, most = limit
        held = sum(
            self._allocation_memory(allocation)
            for key, allocation in self._allocations.items()
            if key.split("/", 1)[0] == namespace
        )
        wanted = sum(self._allocation_memory(r.to_wire()) for r in results)
        if Quantity.from_int(held + wanted).compare(most) <= 0:
            return ""
        return (
            f"would exceed the GPU memory quota of {owner} ({_gib(held)} allocated + "
            f"{_gib(wanted)} requested > {most})"
        )

    def _allocation_memory(self, allocation: Obj) -> int:
        memory = self._device_memory()
        return sum(
            memory.get((r.get("driver", ""), r.get("pool", ""), r.get("device", "")), 0)
            for r in (allocation.get("devices") or {}).get("results") or []
            if not r.get("adminAccess")
        )

    def _device_memory(self) -> dict[tuple[str, str, str], int]:
        if self._memory is None:
            memory = {}
            for item in self.context.list("ResourceSlice"):
                spec = item.get("spec") or {}
                pool = (spec.get("pool") or {}).get("name", "")
                for device in spec.get("devices") or []:
                    value = ((device.get("capacity") or {}).get("memory") or {}).get("value")
                    if value is not None:
                        key = (spec.get("driver", ""), pool, device.get("name", ""))
                        memory[key] = Quantity.parse(str(value)).as_integer()
            self._memory = memory
        return self._memory

    def _known_full(self, node: corev1.Node) -> bool:
        name = node.metadata.name or ""
        if name in self._full:
            return True
        if self._allocator_for().is_full(node, self._allocated_state()):
            self._full.add(name)
            return True
        return False

    def _check_classes(self, claims: list[Obj]) -> None:
        classes = {c["metadata"]["name"] for c in self.context.list("DeviceClass")}
        for claim in claims:
            for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
                exact = request.get("exactly")
                names = (
                    [exact.get("deviceClassName")]
                    if exact
                    else [s.get("deviceClassName") for s in request.get("firstAvailable") or []]
                )
                for name in names:
                    if name not in classes:
                        raise Unschedulable(
                            f"request {request.get('name')}: device class {name} does not exist"
                        )

    def _check_entitlement(self, claims: list[Obj]) -> None:
        """Every claim the pod uses, allocated or not, only through entitled classes."""
        if self.entitlement is None:
            return
        for claim in claims:
            refusal = self.entitlement.refusal(claim)
            if refusal:
                raise Unschedulable(refusal)

    # --------------------------------------------------------------- binding
    def _bind(
        self, pod: Obj, claims: list[Obj], placement: tuple[corev1.Node, list[Obj], list[Any]]
    ) -> None:
        node, allocated, results = placement
        consumer = {
            "resource": "pods",
            "name": pod["metadata"]["name"],
            "uid": pod["metadata"]["uid"],
        }
        for claim, result in zip(allocated, results, strict=True):
            self._reserve(claim, result.to_wire(), consumer)
        namespace = pod["metadata"].get("namespace", "")
        newly = {c["metadata"]["name"] for c in allocated}
        for claim in claims:
            if claim["metadata"]["name"] not in newly:
                self._reserve(claim, None, consumer)
        self.context.bind(namespace, pod["metadata"]["name"], node.metadata.name or "")
        self.parked.discard(("pod", namespace, pod["metadata"]["name"]))

    def _reserve(self, claim: Obj, allocation: Obj | None, consumer: Obj) -> None:
        namespace = claim["metadata"].get("namespace", "")
        latest = self.context.get("ResourceClaim", namespace, claim["metadata"]["name"])
        if latest is None:
            return
        finalizers = latest["metadata"].get("finalizers") or []
        protect = allocation is not None and FINALIZER not in finalizers
        if protect:  # upstream's PreBind adds it by an update before the status update
            latest["metadata"]["finalizers"] = [*finalizers, FINALIZER]
        status = clone_document(latest.get("status") or {})
        if allocation is not None:
            status["allocation"] = allocation
            key = f"{namespace}/{latest['metadata']['name']}"
            state = self._state
            self._allocations[key] = allocation
            if state is not None:  # otherwise the next rebuild includes it
                state.add_allocation(key, resourceapi.AllocationResult.model_validate(allocation))
        reserved = status.get("reservedFor") or []
        if all(r.get("uid") != consumer["uid"] for r in reserved):
            status["reservedFor"] = [*reserved, consumer]
        latest["status"] = status
        if protect:  # the finalizer, allocation and reservation in one write
            self.context.update_with_status("ResourceClaim", latest, MANAGER)
        else:
            self.context.update_status("ResourceClaim", latest, MANAGER)

    def _mark_unschedulable(self, pod: Obj, message: str, reason: str = "Unschedulable") -> None:
        conditions = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or []}
        current = conditions.get("PodScheduled") or {}
        if current.get("status") == "False" and current.get("message") == message:
            return
        now = self.context.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        _set_condition(pod, "PodScheduled", "False", reason, message, now)
        self.context.update_status("Pod", pod, MANAGER)
        self.context.event(pod, "Warning", "FailedScheduling", message, "default-scheduler")


def _gib(value: int) -> str:
    """Bytes as Kubernetes writes memory (``40Gi``, ``101120Mi``), not a bare byte count."""
    return str(Quantity.from_int(value, QuantityFormat.BINARY_SI))


def _set_condition(
    pod: Obj, kind: str, status: str, reason: str | None, message: str | None, now: str
) -> None:
    conditions = [
        c for c in (pod.setdefault("status", {}).get("conditions") or []) if c.get("type") != kind
    ]
    condition = {
        "type": kind,
        "status": status,
        "lastTransitionTime": now,
        "lastProbeTime": None,
        "reason": reason,
        "message": message,
    }
    conditions.append({k: v for k, v in condition.items() if v is not None})
    pod["status"]["conditions"] = conditions


class _NodeFilter:
    """The pod's node-level checks, parsed once per scheduling attempt and then applied
    to each node in turn, in kube-scheduler's plugin order (the first failing check names
    the node's reason)."""

    def __init__(self, pod: Obj, claims: list[Obj]) -> None:
        spec = pod.get("spec") or {}
        self.tolerations = [
            corev1.Toleration.model_validate(t) for t in spec.get("tolerations") or []
        ]
        self.selector: dict[str, str] = spec.get("nodeSelector") or {}
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        self.required = corev1.NodeSelector.model_validate(required) if required else None
        self.claim_selectors = [
            corev1.NodeSelector.model_validate(doc)
            for claim in claims
            if (doc := ((claim.get("status") or {}).get("allocation") or {}).get("nodeSelector"))
        ]

    def problem(self, node: corev1.Node) -> str | None:
        if node.spec.unschedulable:
            return "node(s) were unschedulable"
        for taint in node.spec.taints or []:
            if taint.effect in BLOCKING and not any(_tolerates(t, taint) for t in self.tolerations):
                return f"node(s) had untolerated taint {{{taint.key}: {taint.value or ''}}}"
        labels = node.metadata.labels or {}
        if any(labels.get(k) != v for k, v in self.selector.items()):
            return "node(s) didn't match Pod's node affinity/selector"
        if self.required and not node_selector_matches(self.required, node):
            return "node(s) didn't match Pod's node affinity/selector"
        if any(not node_selector_matches(s, node) for s in self.claim_selectors):
            return "resourceclaim not available on the node"
        return None


def _tolerates(toleration: corev1.Toleration, taint: corev1.Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    return toleration.key == taint.key and (toleration.value or "") == (taint.value or "")
