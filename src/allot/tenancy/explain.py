"""Why a pending pod (or the pods of a claim) of a running platform does not run yet.

``allot explain pod/NAME --tenant T`` reads the pod's host twin and answers one of: it
waits for a claim from one of its templates that the resourceclaim controller cannot
create (the newest ``FailedResourceClaimCreation`` Event's text: the quota or a policy
refused it, or the template is missing; retried until it is created), for quota (fair
sharing: the admission controller's ``QuotaReserved=False`` message, device by device),
for a preemption in progress (the message, and the pods being evicted for it, which
still hold the quota until they are gone), for capacity (admitted, or not gated at all,
but not scheduled: the scheduler's ``PodScheduled`` reason and message), or not at all
(bound to a node). A host pod is read the same way. For capacity, :func:`why_no_node` adds
why the pod's claims fit on no node, per request and device, worked out on the fleet as it
is now exactly as ``allot doctor`` works it out on the host (:mod:`allot.allocator.explain`),
restricted for a tenant to what it may see (:func:`tenant_audience`, the same restriction
the scheduler's ``CannotAllocate`` Events in its cluster get). Pure: the CLI
(:mod:`allot.cli.pending`) fetches the objects and prints the :class:`Explanation`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from allot.allocator.explain import Audience, explain_placement, render_text
from allot.allocator.scheduling import place
from allot.api import claims as claims_api
from allot.api import core_v1_nodes as corev1
from allot.api import resource_v1 as resourceapi
from allot.api.errors import ClaimNotCreatedError
from allot.controllers.claims import FAILED_CREATION
from allot.controllers.eviction import DISRUPTION_TARGET
from allot.dra import AllocatorFeed, DraIndex
from allot.tenancy import generated, names
from allot.tenancy.queueing import PREEMPTION_REASON, QUOTA_RESERVED
from allot.tenancy.translate import ADMISSION_GATE, message_to_tenant, tenant_object_name
from allot.types import Obj

WAITING_FOR_PREEMPTION = "waiting for preemption:"

CLAIMS = "claims"
QUOTA = "quota"
PREEMPTION = "preemption"
CAPACITY = "capacity"
ADMISSION = "admission"
RUNNING = "running"


@dataclass
class Explanation:
    """What the pod waits for (:data:`CLAIMS`, :data:`QUOTA`, :data:`PREEMPTION`,
    :data:`CAPACITY`, :data:`ADMISSION`) or :data:`RUNNING`, the message that says it, and
    for a preemption the pods being evicted (``tenant namespace/name``)."""

    waits_for: str
    message: str
    evicting: list[str] = field(default_factory=list)
    admitted: bool = False  # by fair sharing's admission controller (``QuotaReserved``)
    detail: list[str] = field(default_factory=list)
    """Why its claims fit on no node, request by request (:func:`why_no_node`)."""

    @property
    def pending(self) -> bool:
        return self.waits_for != RUNNING

    def text(self, what: str) -> str:
        heads = {
            CLAIMS: "waits for its ResourceClaims to be created",
            QUOTA: "waits for quota",
            PREEMPTION: "waits for preemption in progress",
            CAPACITY: f"{'is admitted and ' if self.admitted else ''}waits for capacity",
            ADMISSION: "waits for the fair-sharing admission controller",
            RUNNING: "is not pending",
        }
        lines = [f"{what} {heads[self.waits_for]}:", f"  {self.message}"]
        if self.evicting:
            lines.append("being evicted for it (they hold the quota until they are gone):")
            lines += [f"  {victim}" for victim in self.evicting]
        if self.detail:
            lines.append("why its claims fit on no node:")
            lines += [f"  {line}" for line in self.detail]
        return "\n".join(lines)


def condition(pod: Obj, kind: str) -> Obj | None:
    for item in (pod.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return dict(item)
    return None


def explain_twin(twin: Obj, pods: Iterable[Obj], events: Iterable[Obj] = ()) -> Explanation:
    """Why host pod ``twin`` is not running; ``pods``: the host pods of the tenants of its
    cohort (where victims of its preemption are); ``events``: host Events, of which the
    twin's ``FailedResourceClaimCreation`` ones are read."""
    node = (twin.get("spec") or {}).get("nodeName")
    if node:
        phase = (twin.get("status") or {}).get("phase") or "Pending"
        return Explanation(RUNNING, f"bound to node {node} ({phase})")
    failed = failed_claim_creation(twin, events)
    if failed is not None:
        return Explanation(CLAIMS, failed)
    gates = [g.get("name") for g in (twin.get("spec") or {}).get("schedulingGates") or []]
    reserved = condition(twin, QUOTA_RESERVED)
    if ADMISSION_GATE in gates:
        if reserved is None or reserved.get("status") == "True":
            return Explanation(ADMISSION, "no admission pass has judged it yet")
        message = reserved.get("message") or ""
        if message.startswith(WAITING_FOR_PREEMPTION):
            return Explanation(PREEMPTION, message, _victims(message, pods))
        return Explanation(QUOTA, message)
    scheduled = condition(twin, "PodScheduled") or {}
    reason = scheduled.get("reason") or "not scheduled yet"
    message = scheduled.get("message") or "the scheduler has not judged it yet"
    admitted = reserved is not None and reserved.get("status") == "True"
    if gates:
        remain = f"scheduling gates {', '.join(map(str, gates))} remain"
        return Explanation(CAPACITY, remain, admitted=admitted)
    return Explanation(CAPACITY, f"{reason}: {message}", admitted=admitted)


def failed_claim_creation(twin: Obj, events: Iterable[Obj]) -> str | None:
    """The newest ``FailedResourceClaimCreation`` Event of ``twin`` about an entry whose
    claim does not exist yet (``reason: message``, in the tenant's names), or None."""
    metadata = twin["metadata"]
    statuses = (twin.get("status") or {}).get("resourceClaimStatuses") or []
    done = {s.get("name") for s in statuses}
    waiting = [
        f"PodResourceClaim {entry.get('name')}: "
        for entry in (twin.get("spec") or {}).get("resourceClaims") or []
        if entry.get("resourceClaimTemplateName") and entry.get("name") not in done
    ]
    found = [
        event
        for event in events
        if event.get("reason") == FAILED_CREATION
        and (event.get("involvedObject") or {}).get("uid") == metadata.get("uid")
        and str(event.get("message") or "").startswith(tuple(waiting))
    ]
    if not waiting or not found:
        return None
    newest = max(found, key=lambda e: (e.get("lastTimestamp") or "", e["metadata"]["name"]))
    message = str(newest.get("message") or "")
    origin = tenant_object_name(twin)
    if origin is not None:
        message = message_to_tenant(
            message, metadata.get("namespace", ""), metadata["name"], origin
        )
    return f"{FAILED_CREATION}: {message}"


def _victims(message: str, pods: Iterable[Obj]) -> list[str]:
    """The pods preempted for the workload the message names (``... to admit KEY``)."""
    _, _, key = message.rpartition(" to admit ")
    found = []
    for pod in pods:
        target = condition(pod, DISRUPTION_TARGET)
        if target is None or target.get("reason") != PREEMPTION_REASON:
            continue
        if not key or key not in (target.get("message") or ""):
            continue
        metadata = pod["metadata"]
        tenant = names.tenant_of_namespace(metadata.get("namespace", "")) or "host"
        name = (metadata.get("annotations") or {}).get(names.NAME_ANNOTATION) or metadata["name"]
        namespace = (metadata.get("labels") or {}).get(names.TENANT_NAMESPACE_LABEL, "")
        state = "terminating" if metadata.get("deletionTimestamp") else "marked"
        found.append(f"{tenant} {namespace}/{name} ({state})")
    return sorted(found)


@dataclass
class Fleet:
    """What the allocator reads, as listed from the host: slices, classes, every claim of
    every namespace (what they hold), nodes."""

    slices: list[Obj]
    classes: list[Obj]
    claims: list[Obj]
    nodes: list[Obj]


def why_no_node(twin: Obj, fleet: Fleet, tenant: tuple[str, list[str]] | None = None) -> list[str]:
    """Why the claims of host pod ``twin`` fit on no node now, per node, request and
    device (``allot doctor``'s text; for ``tenant``, its name and entitled classes, what
    it may see of it); [] when they fit, or when the pod has no claim to place."""
    index = DraIndex()
    index.refresh(fleet.slices, fleet.classes, fleet.claims)
    every = {(c["metadata"].get("namespace", ""), c["metadata"]["name"]): c for c in fleet.claims}
    namespace = twin["metadata"].get("namespace", "")
    by_name = {name: c for (ns, name), c in every.items() if ns == namespace}
    claims = [by_name[name] for name in _claim_names(twin) if name in by_name]
    if not any((c.get("status") or {}).get("allocation") is None for c in claims):
        return []
    models = [resourceapi.ResourceClaim.model_validate(c) for c in claims]
    nodes = [corev1.Node.model_validate(n) for n in fleet.nodes]
    allocator, state = AllocatorFeed(index).allocator(), index.allocated_state()
    placement = place(models, nodes, allocator, state)
    if placement.error is not None:
        return [str(placement.error)]
    if placement.node is not None or not placement.reasons:
        return [placement.message] if placement.message else []
    audience = (
        tenant_audience(*tenant, index, lambda ns, name: every.get((ns, name)))
        if tenant is not None
        else None
    )
    explained = explain_placement(placement, nodes, allocator, state, audience)
    return render_text(explained.explanations, explained.more).splitlines()


def _claim_names(pod: Obj) -> list[str]:
    """The claims a pod uses (named, generated from a template, for extended resources)."""
    found = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        try:
            name = claims_api.claim_name(pod, entry)
        except ClaimNotCreatedError:
            continue
        if name:
            found.append(name)
    extended = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    if extended.get("resourceClaimName"):
        found.append(extended["resourceClaimName"])
    return found


def tenant_audience(
    tenant: str,
    entitled: Iterable[str],
    index: DraIndex,
    claim: Callable[[str, str], Obj | None],
) -> Audience:
    """What ``tenant`` may read of an explanation: the devices its entitled classes select,
    and its own claims (those of its host namespace) by the names it knows them by;
    ``claim`` finds a host claim by namespace and name."""
    home = names.host_namespace(tenant)

    def known_as(label: str) -> str | None:
        namespace, _, name = label.partition("/")
        if namespace != home:
            return None
        found = claim(namespace, name)
        origin = (tenant_object_name(found) or generated.mirror_name(found)) if found else None
        return f"{origin[0]}/{origin[1]}" if origin else EXTENDED_CLAIM

    return Audience(index.devices_of(entitled), known_as)


EXTENDED_CLAIM = "the extended-resource claim"
"""How a tenant is told of a claim of its host namespace it has no name for: the one the
scheduler makes for its pod's extended resources (``nvidia.com/gpu: 1``)."""
