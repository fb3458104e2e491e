"""The scheduler: places pending pods on nodes, allocating their claims with the allocator.

Per pod, as kube-scheduler with the DynamicResources plugin does:

1. resolve the pod's claims (named, or generated and listed in
   ``status.resourceClaimStatuses``; a missing one parks the pod until it appears); pods
   asking for GPUs through extended resources (``nvidia.com/gpu: 1``) get the special
   claim of the DeviceClass whose ``extendedResourceName`` matches;
2. filter nodes (:mod:`allot.controllers.nodefit`): unschedulable unless the pod tolerates
   it, untolerated NoSchedule/NoExecute taints, ``nodeSelector`` and required node
   affinity, required inter-pod affinity and anti-affinity
   (:mod:`allot.controllers.podaffinity`, upstream's InterPodAffinity), already-allocated
   claims' node selectors; a pod that mounts
   PersistentVolumeClaims also goes through the VolumeBinding plugin
   (:mod:`allot.controllers.volumefilter`: it waits for unbound claims, keeps to its
   volumes' nodes, and its claims that wait for a consumer get the chosen node before the
   pod is bound);
3. on the remaining nodes in the placement policy's order (``allot.allocator.placement``:
   name order, or fullest first), take the first where the allocator places every
   unallocated claim: ``allot.allocator.scheduling.place``, the same function (and so the
   same choice and message) as ``allot simulate --placement`` and ``allot doctor``; the
   scheduler adds its node filter, the entitlement and the GPU-memory quota as checks;
4. write each claim's finalizer, ``status.allocation`` and ``reservedFor``, then bind
   (Event ``Scheduled``, as kube-scheduler).

Beyond kube-scheduler, a namespace may carry a GPU-memory limit (a tenant's
``spec.quota.gpuMemory``, given as ``memory_limit``): a node whose allocation would take
the namespace's allocated device ``memory`` past it does not fit, with a reason saying so.
And a namespace may be entitled to some classes only (a tenant's, given as
``entitlement``): a pod whose claims, allocated or not, name a class outside it is not
scheduled, so a claim created before its class was revoked is never allocated or shared
through it; the pod is retried when an entitlement changes.

A pod with scheduling gates is not considered at all (upstream's SchedulingGates
PreEnqueue plugin): no status write, no Event, not parked; the API server gave it
``PodScheduled=False``/``SchedulingGated`` at creation, and the update that removes its
last gate is a pod event, which queues it.

A pod that fits nowhere gets ``PodScheduled=False``/``Unschedulable`` with the scheduler's
message and a ``FailedScheduling`` Event, and is parked until slices, classes, nodes or
claims change. Where its claims' devices did not fit (``cannot allocate all claims``),
allot adds a ``CannotAllocate`` Event per request saying why, device by device
(:mod:`allot.allocator.explain`), restricted for a tenant's pod to what the tenant may see
(the entitlement's ``audience``); it is worked out only when the condition's message
changes, never on a retry that changes nothing. Slices, classes and allocated state come
from the platform's DRA index (:mod:`allot.dra`), fed from store events before this
scheduler sees them; the allocator is updated in place with the slices and classes that
changed, never rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Protocol

from allot.allocator import AllocatedState, AllocationError, Allocator
from allot.allocator.explain import Audience, event_messages, explain_placement
from allot.allocator.placement import check_placement
from allot.allocator.scheduling import Checks, Placement, PlacementMemo, place
from allot.api import claims as claims_api
from allot.api import core_v1 as corev1
from allot.api import resource_v1 as resourceapi
from allot.api.documents import clone_document
from allot.api.errors import ClaimNotCreatedError
from allot.api.podresources import container_requests
from allot.api.quantity import NANO, Quantity, QuantityFormat
from allot.controllers import podaffinity
from allot.controllers.context import ControllerContext
from allot.controllers.nodefit import NodeFilter
from allot.controllers.volumefilter import PodVolumes
from allot.dra import AllocatorFeed, DraIndex
from allot.registry.admission import AdmissionDenied
from allot.store import WatchEvent
from allot.types import Obj, rfc3339

MANAGER = "allot-scheduler"
CANNOT_ALLOCATE_REASON = "CannotAllocate"
"""allot's Event beside kube-scheduler's ``FailedScheduling``: why a request's devices do
not fit, device by device (:mod:`allot.allocator.explain`)."""
FINALIZER = "resource.kubernetes.io/delete-protection"
EXTENDED_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
MemoryLimit = Callable[[str], tuple[str, Quantity] | None]
"""namespace -> (whose limit, the limit), or None when the namespace has none."""
WAKE_RESOURCES = {"resourceslices.resource.k8s.io", "deviceclasses.resource.k8s.io", "nodes"}
SCHEDULED = {"resourceclaims.resource.k8s.io", "pods"}
VOLUME_RESOURCES = {"persistentvolumeclaims", "persistentvolumes"}
"""Their events wake only the pods that wait for their volumes."""
"""The resources the scheduler maps to keys besides WAKE_RESOURCES and the entitlement's."""


class Entitlement(Protocol):
    """Which classes a namespace may use now (implemented by tenancy, injected)."""

    watched: frozenset[str]
    """The store resources whose events ``changed`` may answer True for."""

    def refusal(self, claim: Obj) -> str:
        """Why ``claim`` may not be allocated or reserved now; "" when it may."""

    def changed(self, event: WatchEvent) -> bool:
        """Whether ``event`` may change what ``refusal`` answers."""

    def audience(self, namespace: str, index: DraIndex) -> Audience | None:
        """Who reads the explanations of a pod in ``namespace`` (its tenant), or None for
        the platform team, who may read everything."""


class Unschedulable(Exception):
    """The pod cannot be scheduled now; the message goes to its PodScheduled condition,
    and ``explain`` (when the claims' devices did not fit) says why device by device."""

    def __init__(self, message: str, explain: Callable[[], list[str]] | None = None) -> None:
        super().__init__(message)
        self.explain = explain


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
        index: DraIndex | None = None,
    ) -> None:
        """``index``: the platform's DRA index of ``context``'s cluster, fed from store
        events before this scheduler sees them; without one the scheduler keeps its own."""
        self.context = context
        self.index = index if index is not None else self._own_index(context)
        self._feed = AllocatorFeed(self.index)
        self.entitlement = entitlement
        self.watches = (
            WAKE_RESOURCES
            | SCHEDULED
            | VOLUME_RESOURCES
            | (entitlement.watched if entitlement else set())
        )
        """The resources keys_for answers for (the runtime offers only their events)."""
        self.observe_allocation = observe_allocation or (lambda seconds: None)
        self.placement = check_placement(placement)
        self.memory_limit = memory_limit
        self.parked: set[tuple[str, str, str]] = set()
        self.volume_parked: set[tuple[str, str, str]] = set()
        """Parked pods that wait for their claims (woken by claim and volume events)."""
        self._nodes: list[corev1.Node] | None = None
        self._plain_problems: dict[str, str] | None = None  # see _node_check
        self._memo = PlacementMemo()  # forgets itself with a new allocator or state
        self._anti_affinity: dict[tuple[str, str], Obj] = {}
        """Assigned pods with required anti-affinity (upstream's
        ``PodsWithRequiredAntiAffinity``), kept from pod events: every pod is judged
        against them."""
        self.affinity_parked: set[tuple[str, str, str]] = set()
        """Parked pods that pod affinity may be holding back (their own required terms, or
        any assigned pod's anti-affinity): woken when an assigned pod is bound, relabelled
        or ends."""

    # ------------------------------------------------------------------ events
    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.cluster != self.context.cluster:
            return []
        if self.entitlement is not None and self.entitlement.changed(event):
            return self._unpark()
        if event.resource in WAKE_RESOURCES:
            return self._unpark()
        if event.resource in VOLUME_RESOURCES:
            woken: list[Hashable] = list(self.volume_parked)
            self.parked.difference_update(self.volume_parked)
            self.volume_parked.clear()
            return woken
        if event.resource == "resourceclaims.resource.k8s.io":
            freed = self._track_claim(event)
            return self._unpark() if freed or event.type == "ADDED" else []
        if event.resource == "pods":
            return self._pod_keys(event)
        return []

    def _pod_keys(self, event: WatchEvent) -> list[Hashable]:
        metadata = event.object["metadata"]
        key = ("pod", metadata.get("namespace", ""), metadata["name"])
        self._track_anti_affinity(event)
        if event.type == "DELETED":
            self.parked.discard(key)
            self.volume_parked.discard(key)
            return self._unpark()
        if not (event.object.get("spec") or {}).get("nodeName"):
            return [key]
        if not self.affinity_parked or not _affinity_change(event):
            return []
        woken: list[Hashable] = list(self.affinity_parked)  # an assigned pod may match them
        self.parked.difference_update(self.affinity_parked)
        self.affinity_parked.clear()
        return woken

    def _track_anti_affinity(self, event: WatchEvent) -> None:
        metadata = event.object["metadata"]
        key = (metadata.get("namespace", ""), metadata["name"])
        if (
            event.type != "DELETED"
            and podaffinity.assigned(event.object)
            and podaffinity.has_required_anti_affinity(event.object)
        ):
            self._anti_affinity[key] = event.object
        else:
            self._anti_affinity.pop(key, None)

    def observe(self, event: WatchEvent) -> None:
        """Nodes, slices and classes change what placement knows: the node list is read
        again, and the memo forgets (the index updates the allocator in place)."""
        if event.cluster != self.context.cluster or event.resource not in WAKE_RESOURCES:
            return
        if event.resource == "nodes":
            self._nodes = self._plain_problems = None
        self._memo.clear()

    def _unpark(self) -> list[Hashable]:
        keys: list[Hashable] = list(self.parked)
        self.parked.clear()
        self.volume_parked.clear()
        self.affinity_parked.clear()
        return keys

    def _track_claim(self, event: WatchEvent) -> bool:
        """Whether a claim event freed allocated devices (the index, fed first, knows)."""
        return self.index.freed_rv == event.rv

    @staticmethod
    def _own_index(context: ControllerContext) -> DraIndex:
        index = DraIndex(context.cluster)
        index.refresh(
            context.list("ResourceSlice"),
            context.list("DeviceClass"),
            context.list("ResourceClaim"),
        )
        context.store.add_listener(index.observe)
        return index

    def initial_keys(self) -> list[Hashable]:
        self._anti_affinity = {
            (p["metadata"].get("namespace", ""), p["metadata"]["name"]): p
            for p in self.context.list("Pod")
            if podaffinity.assigned(p) and podaffinity.has_required_anti_affinity(p)
        }
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
            or (pod.get("spec") or {}).get("schedulingGates")
        ):
            return  # a gated pod waits for its gates' removal, which is a pod event
        volumes = PodVolumes.of(self.context, pod)  # None: the pod mounts no claims
        try:
            self._volume_prefilter(volumes)
            claims = self._claims(pod)
            placement = self._place(pod, claims, volumes)
        except Gated:
            self._park(namespace, name, volumes)
            return
        except Unschedulable as problem:
            self._park(namespace, name, volumes)
            self._mark_unschedulable(pod, str(problem), explain=problem.explain)
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
        if volumes is not None and volumes.select(placement[0]):
            self._park(namespace, name, volumes)  # PreBind: wait for the claims' binding
            return
        self._bind(pod, claims, placement)

    def _park(self, namespace: str, name: str, volumes: PodVolumes | None) -> None:
        self.parked.add(("pod", namespace, name))
        pod = self.context.peek("Pod", namespace, name)
        if pod is not None and (
            self._anti_affinity
            or podaffinity.required_terms(pod, "podAffinity")
            or podaffinity.required_terms(pod, "podAntiAffinity")
        ):
            self.affinity_parked.add(("pod", namespace, name))
        if volumes is not None:
            self.volume_parked.add(("pod", namespace, name))

    def _volume_prefilter(self, volumes: PodVolumes | None) -> None:
        """The VolumeBinding plugin's PreFilter (:mod:`allot.controllers.volumefilter`)."""
        if volumes is None:
            return
        if volumes.refusal:
            nodes = len(self._node_list())
            raise Unschedulable(f"0/{nodes} nodes are available: {volumes.refusal}.")
        if volumes.pending_binding:
            raise Gated()  # PreBind waits for the controller: no status write, no Event

    # ------------------------------------------------------------------ claims
    def _claims(self, pod: Obj) -> list[Obj]:
        namespace = pod["metadata"].get("namespace", "")
        claims: list[Obj] = []
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            try:
                name = claims_api.claim_name(pod, pod_claim)
            except ClaimNotCreatedError:
                raise Gated() from None  # upstream's PreEnqueue: no status write, no Event
            if name is None and pod_claim.get("resourceClaimTemplateName"):
                continue
            claim = self.context.peek("ResourceClaim", namespace, name or "")
            if claim is None:
                raise Unschedulable(f'resourceclaim.resource.k8s.io "{name}" not found')
            if claim["metadata"].get("deletionTimestamp"):
                raise Unschedulable(f'resourceclaim "{name}" is being deleted')
            if all(other["metadata"]["name"] != name for other in claims):
                claims.append(claim)  # a claim named by two entries is allocated once
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

    def _node_check(self, pod: Obj) -> Callable[[corev1.Node], str | None] | None:
        """The pod's node filter; for a pod without tolerations, node selector or required
        affinity (most pods) the answer depends on the node alone, so it is worked out once
        per node list, and is None when no node refuses such pods (placement then skips
        full nodes without looking at them one by one)."""
        node_filter = NodeFilter(pod)
        if not node_filter.plain:
            return node_filter.problem
        if self._plain_problems is None:
            nodes = self._node_list()
            found = {n.metadata.name or "": node_filter.problem(n) for n in nodes}
            self._plain_problems = {name: p for name, p in found.items() if p is not None}
        problems = self._plain_problems
        return (lambda node: problems.get(node.metadata.name or "")) if problems else None

    def _affinity_state(self, pod: Obj) -> podaffinity.AffinityState | None:
        """InterPodAffinity's PreFilter: over every assigned pod when the pod has required
        terms, else over the assigned pods with required anti-affinity (none: skipped)."""
        own = podaffinity.required_terms(pod, "podAffinity") or podaffinity.required_terms(
            pod, "podAntiAffinity"
        )
        if not own and not self._anti_affinity:
            return None
        existing = (
            [p for p in self.context.scan("Pod") if podaffinity.assigned(p)]
            if own
            else list(self._anti_affinity.values())
        )
        labels = {n.metadata.name or "": n.metadata.labels or {} for n in self._node_list()}
        return podaffinity.prefilter(pod, existing, labels.get, self._ns_labels)

    def _ns_labels(self, namespace: str) -> dict[str, str]:
        found = self.context.peek("Namespace", "", namespace)
        return dict(((found or {}).get("metadata") or {}).get("labels") or {})

    def _allocator_for(self) -> Allocator:
        """The allocator over the index's slices and classes, updated in place with what
        changed since the last call."""
        return self._feed.allocator()

    def _allocated_state(self) -> AllocatedState:
        return self.index.allocated_state()

    def _place(
        self, pod: Obj, claims: list[Obj], volumes: PodVolumes | None = None
    ) -> tuple[corev1.Node, list[Obj], list[Any]]:
        models = [resourceapi.ResourceClaim.model_validate(c) for c in claims]
        namespace = pod["metadata"].get("namespace", "")
        node_check = self._node_check(pod)
        if volumes is not None:  # the VolumeBinding plugin's Filter after the node's own
            node_check = _then(node_check, volumes.problem)
        affinity = self._affinity_state(pod)
        if affinity is not None:  # InterPodAffinity's Filter after those
            node_check = _then(node_check, lambda node: affinity.problem(node, self._ns_labels))
        checks = Checks(
            node=node_check,
            results=lambda node, results: self._memory_problem(namespace, results),
            refusal=lambda: self._entitlement_refusal(claims),
            observe=self.observe_allocation,
        )
        placement = place(
            models,
            self._node_list(),
            self._allocator_for(),
            self._allocated_state(),
            policy=self.placement,
            checks=checks,
            memo=self._memo,
        )
        if placement.error is not None:
            raise placement.error
        if placement.node is None:
            raise Unschedulable(placement.message, lambda: self._explanation(namespace, placement))
        pending = {id(m) for m in placement.pending}
        allocating = [c for c, m in zip(claims, models, strict=True) if id(m) in pending]
        return placement.node, allocating, placement.results

    def _explanation(self, namespace: str, placement: Placement) -> list[str]:
        """Why the pod's claims fit on no node, per request and device, as the reader of
        its Events may see it (a tenant: only its classes' devices and its own claims)."""
        audience = self.entitlement.audience(namespace, self.index) if self.entitlement else None
        allocator, state = self._allocator_for(), self._allocated_state()
        explained = explain_placement(placement, self._node_list(), allocator, state, audience)
        return event_messages(explained)

    # ------------------------------------------------------------ GPU memory
    def _memory_problem(self, namespace: str, results: list[Any]) -> str:
        limit = self.memory_limit(namespace) if self.memory_limit else None
        if limit is None:
            return ""
        owner, most = limit
        memory = self.index.device_memory()
        held = sum(
            sum(claims_api.held_memory(claim.allocation, memory).values())
            for key, claim in self.index.claims.items()
            if key.split("/", 1)[0] == namespace
        )
        wanted = sum(sum(claims_api.held_memory(r.to_wire(), memory).values()) for r in results)
        if Quantity.from_int(held + wanted).compare(most) <= 0:
            return ""
        return (
            f"would exceed the GPU memory quota of {owner} ({_gib(held)} allocated + "
            f"{_gib(wanted)} requested > {most})"
        )

    def _entitlement_refusal(self, claims: list[Obj]) -> str:
        """Every claim the pod uses, allocated or not, only through entitled classes."""
        if self.entitlement is None:
            return ""
        for claim in claims:
            refusal = self.entitlement.refusal(claim)
            if refusal:
                return refusal
        return ""

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
        self.context.event(
            pod,
            "Normal",
            "Scheduled",
            f"Successfully assigned {namespace}/{pod['metadata']['name']} to {node.metadata.name}",
            "default-scheduler",
        )

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
            status["allocation"] = allocation  # the index takes it from the store's event
        reserved = status.get("reservedFor") or []
        if all(r.get("uid") != consumer["uid"] for r in reserved):
            status["reservedFor"] = [*reserved, consumer]
        latest["status"] = status
        if protect:  # the finalizer, allocation and reservation in one write
            self.context.write_with_status("ResourceClaim", latest, MANAGER)
        else:
            self.context.write_status("ResourceClaim", latest, MANAGER)

    def _mark_unschedulable(
        self,
        pod: Obj,
        message: str,
        reason: str = "Unschedulable",
        explain: Callable[[], list[str]] | None = None,
    ) -> None:
        """The condition and kube-scheduler's Event, and with ``explain`` one
        ``CannotAllocate`` Event per request that does not fit; only when the message
        changed (the explanation is worked out only then)."""
        conditions = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or []}
        current = conditions.get("PodScheduled") or {}
        if current.get("status") == "False" and current.get("message") == message:
            return
        now = rfc3339(self.context.clock())
        _set_condition(pod, "PodScheduled", "False", reason, message, now)
        self.context.update_status("Pod", pod, MANAGER)
        self.context.event(pod, "Warning", "FailedScheduling", message, "default-scheduler")
        for line in explain() if explain is not None else []:
            self.context.event(pod, "Warning", CANNOT_ALLOCATE_REASON, line, MANAGER)


def _affinity_change(event: WatchEvent) -> bool:
    """Whether an assigned pod's event may change what pod affinity finds (upstream's
    InterPodAffinity queueing hint): it was just bound, its labels changed, or it ended."""
    before = event.previous
    if before is None or not podaffinity.assigned(before):
        return True
    labels = (event.object.get("metadata") or {}).get("labels")
    return labels != (before.get("metadata") or {}).get("labels") or not podaffinity.assigned(
        event.object
    )


def _then(
    first: Callable[[corev1.Node], str | None] | None,
    second: Callable[[corev1.Node], str | None],
) -> Callable[[corev1.Node], str | None]:
    """A node check: ``first``'s reason, else ``second``'s (the next filter plugin)."""
    return lambda node: (first(node) if first else None) or second(node)


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
