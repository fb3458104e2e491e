"""The embedded platform's fair-sharing admission controller: queues instead of refusals.

A tenant in fair-sharing mode (``spec.sharing``) has no device quota; the sync creates its
pod twins with the scheduling gate ``allot.dev/admission`` and this controller decides
when they may go to the scheduler. One pass (:meth:`QueueingController.reconcile`, key
:data:`CYCLE`, re-run on host pod, claim, template, class, slice and Tenant events and on
the sharing tenants' Jobs, ReplicaSets and StatefulSets; the runtime's de-duplicated queue
makes it one pass per loop turn however many events came):

1. groups the host pods of each sharing tenant into workloads (:class:`PodGroup`): the
   pods of one tenant owner (``allot.dev/tenant-owner`` plus the
   ``allot.dev/tenant-namespace`` label) when the owner is a Job with ``parallelism > 1``
   or the pods say ``allot.dev/gang: "true"``; otherwise each pod alone. A gang waits until
   its expected pods exist (the Job's parallelism, the set's replicas);
2. computes each workload's demand (:mod:`allot.tenancy.demand`), its priority (label
   ``allot.dev/priority``, else the tenant's ``sharing.defaultPriority``), its creation
   (first pod's ``creationTimestamp``) and admission (``allot.dev/admitted-at``) times;
3. runs :func:`allot.fairshare.cycle.admission_cycle` and applies its decision: an
   admitted workload loses the gate, gets ``allot.dev/admitted-at``, the condition
   ``QuotaReserved=True`` and Event ``QuotaReserved``; a waiting one gets
   ``QuotaReserved=False``/``Pending`` with the engine's message (Event ``Pending`` when
   the message changes); a victim is evicted (:func:`allot.controllers.eviction.evict_pod`:
   ``DisruptionTarget``/``PreemptionByAllot``, graceful deletion, Event ``Preempted``) and
   the preemptor's pods get Event ``Preempting``.

Pods of a workload being evicted (``DisruptionTarget`` or a ``deletionTimestamp``) keep
its quota until they are gone (``evicting``). :class:`QueueingState` is the read model the
operations layer and ``allot explain`` read. Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

from allot.api.documents import clone_document
from allot.client.protocol import Client, WatchEvent
from allot.controllers.eviction import DISRUPTION_TARGET, evict_pod
from allot.dra import DraIndex
from allot.fairshare.books import Books, Standing, show
from allot.fairshare.cycle import Decision, Eviction, Waiting, admission_cycle
from allot.fairshare.model import GPU_MEMORY, Queue, Workload, queues_from_tenants
from allot.fairshare.report import SharingSummary, cohort_idle, tenant_reports
from allot.tenancy import names
from allot.tenancy.demand import ClassMemory, workload_demand
from allot.tenancy.directory import TenantDirectory
from allot.tenancy.translate import ADMISSION_GATE
from allot.types import Obj

MANAGER = "allot-queueing"
CYCLE = "cycle"
QUOTA_RESERVED = "QuotaReserved"
PENDING = "Pending"
ADMITTED_AT = "allot.dev/admitted-at"
GANG = names.GANG_KEY
PRIORITY = names.PRIORITY_KEY
PREEMPTION_REASON = "PreemptionByAllot"
TERMINAL_PHASES = ("Succeeded", "Failed")
HOST_WIDE = {"tenants.allot.dev", "deviceclasses.resource.k8s.io", "resourceslices.resource.k8s.io"}
HOST_NAMESPACED = {
    "pods",
    "resourceclaims.resource.k8s.io",
    "resourceclaimtemplates.resource.k8s.io",
}
TENANT_OWNERS = {"jobs.batch", "replicasets.apps", "statefulsets.apps"}
OWNER_KINDS = ("Job", "ReplicaSet", "StatefulSet")


@dataclass
class PodGroup:
    """One workload as the host sees it: the live pods of a tenant owner, or one pod."""

    key: str
    tenant: str
    namespace: str
    """The tenant's host namespace."""
    pods: list[Obj] = field(default_factory=list)
    expected: int = 1
    """How many pods the workload has when complete (a gang waits for them)."""
    what: str = ""
    """How messages name it: ``pod default/p`` or ``Job default/train``."""

    @property
    def admitted(self) -> bool:
        return any(not gated(p) for p in self.pods)

    @property
    def evicting(self) -> bool:
        return any(leaving(p) for p in self.pods if not gated(p))

    def gated_pods(self) -> list[Obj]:
        return [p for p in self.pods if gated(p) and not p["metadata"].get("deletionTimestamp")]

    def created(self) -> float:
        return min(seconds(p["metadata"].get("creationTimestamp")) for p in self.pods)

    def admitted_at(self) -> float | None:
        times = [admission_time(p) for p in self.pods if not gated(p)]
        return min(times) if times else None


@dataclass
class TenantCounts:
    """Workloads of one tenant after the last pass; ``preempted`` counts since start."""

    admitted: int = 0
    waiting: int = 0
    preempted: int = 0


@dataclass
class QueueingState:
    """The last pass, for ``allot top``, the dashboard, ``/metrics`` and the alert rules.

    ``books.standing(tenant, resource)`` gives guaranteed, used, borrowed and lent
    (resources: DeviceClass names and ``gpuMemory``); ``tenants`` the admitted and
    waiting workloads and the preemptions suffered; ``waiting`` why each waiting workload
    waits (by key); ``entitled`` each tenant's DeviceClasses; :meth:`summary` all of it as
    the operations layer shows it."""

    books: Books | None = None
    entitled: Mapping[str, frozenset[str]] = field(default_factory=dict)
    tenants: dict[str, TenantCounts] = field(default_factory=dict)
    waiting: dict[str, Waiting] = field(default_factory=dict)
    workloads: list[Workload] = field(default_factory=list)
    """The workloads of the last pass, as it left them (its admissions included)."""
    passes: int = 0

    def counts(self, tenant: str) -> TenantCounts:
        return self.tenants.setdefault(tenant, TenantCounts())

    def summary(self) -> SharingSummary:
        if self.books is None:
            return SharingSummary()
        reports = {
            tenant: replace(
                report,
                resources=self._shown(tenant, report.resources),
                admitted=self.counts(tenant).admitted,
                waiting=self.counts(tenant).waiting,
            )
            for tenant, report in tenant_reports(self.books, self.workloads).items()
        }
        preempted = {tenant: counts.preempted for tenant, counts in self.tenants.items()}
        return SharingSummary(reports, cohort_idle(self.books), preempted)

    def _shown(self, tenant: str, resources: Mapping[str, Standing]) -> dict[str, Standing]:
        """The tenant's resources but the DeviceClasses its cohort governs that the tenant
        may not claim and holds no share of (legal-ai had a ``gpu-slice`` row of zeros in
        ``allot top``, issue 28); a class it is guaranteed stays, as it lends it."""
        entitled = self.entitled.get(tenant)
        return {
            resource: standing
            for resource, standing in resources.items()
            if entitled is None
            or resource == GPU_MEMORY
            or resource in entitled
            or standing != Standing(0, 0, 0, 0)
        }


class QueueingController:
    """Admits, holds and preempts fair-sharing tenants' workloads (see the module doc)."""

    name = "tenant-queueing"

    def __init__(
        self,
        host: Client,
        tenants: Callable[[str], Client],
        directory: TenantDirectory,
        index: DraIndex,
    ) -> None:
        """``host``: the host cluster (its pods, claims, templates, events); ``tenants``: a
        tenant's cluster by name (its Jobs and sets, a gang's size), both clients of the
        protocol whose changes reach one dispatcher."""
        self.host = host
        self.tenants = tenants
        self._tenant_clients: dict[str, Client] = {}
        self.directory = directory
        self.memory = ClassMemory(index)
        self.state = QueueingState()
        self.preempted_for: dict[str, str] = {}
        """Evicted workload -> the workload it was evicted for (in memory: after a restart
        a victim's room goes to whichever waiting workload comes first)."""

    # ------------------------------------------------------------------ events
    def sharing(self, tenant: str | None) -> bool:
        entry = self.directory.get(tenant) if tenant else None
        return entry is not None and entry.tenant.spec.sharing is not None

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.cluster == self.host.cluster:
            if event.resource in HOST_WIDE:
                return [CYCLE]
            if event.resource in HOST_NAMESPACED:
                namespace = event.object["metadata"].get("namespace", "")
                return [CYCLE] if self.sharing(names.tenant_of_namespace(namespace)) else []
            return []
        if event.resource in TENANT_OWNERS and self.sharing(event.cluster):
            return [CYCLE]
        return []

    def initial_keys(self) -> list[Hashable]:
        return [CYCLE]

    # --------------------------------------------------------------- one pass
    def reconcile(self, key: Hashable) -> None:
        queues = queues_from_tenants(e.tenant for e in self.directory.entries.values())
        groups = [g for tenant in sorted(queues) for g in self._groups(tenant)]
        workloads, blocked = self._workloads(groups, queues)
        decision = admission_cycle(queues, list(workloads.values()))
        by_key = {g.key: g for g in groups}
        for admitted in decision.admitted:
            self._admit(by_key[admitted.key], admitted)
        for eviction in decision.evictions:
            self._evict(by_key[eviction.victim.key], by_key[eviction.preemptor.key], eviction)
        for workload_key, waiting in decision.waiting.items():
            self._wait(by_key[workload_key], waiting.message)
        for group, message in blocked:
            self._wait(group, message)
        self._finish_admitted(groups, workloads)
        self._record(queues, groups, workloads.values(), decision, blocked)

    def _workloads(
        self, groups: list[PodGroup], queues: dict[str, Queue]
    ) -> tuple[dict[str, Workload], list[tuple[PodGroup, str]]]:
        """The engine's workloads (admitted first, in admission order, so a named claim is
        charged to its first admitted holder), and the groups that cannot be judged yet."""
        workloads: dict[str, Workload] = {}
        blocked: list[tuple[PodGroup, str]] = []
        held: set[str] = set()
        ordered = sorted(groups, key=lambda g: (g.admitted_at() is None, g.admitted_at() or 0))
        for group in ordered:
            if not group.admitted and len(group.pods) < group.expected:
                blocked.append((group, _incomplete(group)))
                continue
            demand, missing = workload_demand(group.pods, self._lookup(group), self.memory, held)
            if group.admitted:
                held.update(named_claims(group.pods))
            elif missing:
                blocked.append((group, "waiting for " + ", ".join(missing) + " to exist"))
                continue
            workloads[group.key] = Workload(
                key=group.key,
                tenant=group.tenant,
                demand=dict(demand),
                priority=priority(group.pods, queues[group.tenant].default_priority),
                created=group.created(),
                admitted_at=group.admitted_at(),
                evicting=group.evicting,
                preempted_for=self.preempted_for.get(group.key) if group.evicting else None,
            )
        return workloads, blocked

    def _lookup(self, group: PodGroup) -> Callable[[str, str], Obj | None]:
        def lookup(kind: str, name: str) -> Obj | None:
            return self.host.peek(kind, group.namespace, name)

        return lookup

    def _tenant(self, tenant: str) -> Client:
        client = self._tenant_clients.get(tenant)
        if client is None:
            client = self._tenant_clients[tenant] = self.tenants(tenant)
        return client

    # ------------------------------------------------------------------ groups
    def _groups(self, tenant: str) -> list[PodGroup]:
        namespace = names.host_namespace(tenant)
        groups: dict[str, PodGroup] = {}
        for pod in sorted(self.host.list("Pod", namespace), key=_pod_order):
            if not _counts(pod):
                continue
            group = self._group_of(tenant, namespace, pod, groups)
            group.pods.append(pod)
        return list(groups.values())

    def _group_of(
        self, tenant: str, namespace: str, pod: Obj, groups: dict[str, PodGroup]
    ) -> PodGroup:
        metadata = pod["metadata"]
        labels, annotations = metadata.get("labels") or {}, metadata.get("annotations") or {}
        tenant_ns = labels.get(names.TENANT_NAMESPACE_LABEL, "default")
        owner = annotations.get(names.OWNER_ANNOTATION, "")
        kind, _, owner_name = owner.partition("/")
        expected = self._gang_size(tenant, tenant_ns, kind, owner_name, _says_gang(pod))
        if expected is None:
            pod_name = annotations.get(names.NAME_ANNOTATION) or metadata["name"]
            key = f"{tenant}/{tenant_ns}/pod/{pod_name}"
            return groups.setdefault(key, PodGroup(key, tenant, namespace, what=f"pod {pod_name}"))
        key = f"{tenant}/{tenant_ns}/{kind.lower()}/{owner_name}"
        what = f"{kind} {tenant_ns}/{owner_name}"
        return groups.setdefault(key, PodGroup(key, tenant, namespace, [], expected, what))

    def _gang_size(
        self, tenant: str, namespace: str, kind: str, name: str, says_gang: bool
    ) -> int | None:
        """The pods a gang waits for; None when the pod is a workload of its own."""
        if not kind or not name:
            return None
        if kind not in OWNER_KINDS:  # a gang of an owner allot does not know: what exists
            return 1 if says_gang else None
        owner = self._tenant(tenant).peek(kind, namespace, name)
        spec = (owner or {}).get("spec") or {}
        if kind == "Job":
            parallelism = spec.get("parallelism")
            size = 1 if parallelism is None else int(parallelism)
            completions = spec.get("completions")
            if completions is not None:
                done = int(((owner or {}).get("status") or {}).get("succeeded") or 0)
                size = min(size, max(0, int(completions) - done))
            if size > 1 or says_gang:
                return max(1, size)
            return None
        if not says_gang:
            return None
        return max(1, int(spec.get("replicas") or 1)) if owner is not None else 1

    # ------------------------------------------------------------------ writes
    def _admit(self, group: PodGroup, workload: Workload) -> None:
        now = self.host.now()
        message = f"Quota reserved for {group.what} in {group.tenant}: " + _amounts(workload.demand)
        for pod in group.gated_pods():
            self._ungate(pod, now, message)

    def _ungate(self, pod: Obj, now: dt.datetime, message: str) -> None:
        updated = clone_document(pod)
        spec = updated["spec"]
        gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") != ADMISSION_GATE]
        if gates:
            spec["schedulingGates"] = gates
        else:
            spec.pop("schedulingGates", None)
        annotations = updated["metadata"].setdefault("annotations", {})
        annotations.setdefault(ADMITTED_AT, precise(now))
        set_condition(updated, QUOTA_RESERVED, "True", QUOTA_RESERVED, message, now)
        written = self.host.update_with_status(updated, field_manager=MANAGER)
        self.host.events().record(written, "Normal", QUOTA_RESERVED, message, MANAGER)

    def _wait(self, group: PodGroup, message: str) -> None:
        now = self.host.now()
        for pod in group.gated_pods():
            updated = clone_document(pod)
            if not set_condition(updated, QUOTA_RESERVED, "False", PENDING, message, now):
                continue
            written = self.host.update(updated, field_manager=MANAGER, subresource="status")
            self.host.events().record(written, "Normal", PENDING, message, MANAGER)

    def _evict(self, victim: PodGroup, preemptor: PodGroup, eviction: Eviction) -> None:
        for pod in victim.pods:
            if gated(pod) or pod["metadata"].get("deletionTimestamp"):
                continue
            evict_pod(
                self.host,
                victim.namespace,
                pod["metadata"]["name"],
                reason=PREEMPTION_REASON,
                message=eviction.message,
                event_reason="Preempted",
                event_message=eviction.message,
                component=MANAGER,
            )
        self.state.counts(victim.tenant).preempted += 1
        self.preempted_for[victim.key] = preemptor.key
        text = (
            f"Preempting {victim.what} of tenant {victim.tenant} to admit {preemptor.what}: "
            + eviction.message
        )
        for pod in preemptor.gated_pods():
            self.host.events().record(pod, "Normal", "Preempting", text, MANAGER)

    def _finish_admitted(self, groups: list[PodGroup], workloads: dict[str, Workload]) -> None:
        """Pods that join an admitted workload (a gang's pod recreated) are admitted with
        it, unless the workload is being preempted: then they wait for its end."""
        now = self.host.now()
        for group in groups:
            workload = workloads.get(group.key)
            if not group.admitted or workload is None or not group.gated_pods():
                continue
            if group.evicting:
                self._wait(group, f"waiting for the preempted pods of {group.what} to end")
                continue
            message = f"Quota reserved for {group.what} in {group.tenant} (admitted with it)"
            for pod in group.gated_pods():
                self._ungate(pod, now, message)

    def _record(
        self,
        queues: dict[str, Queue],
        groups: list[PodGroup],
        workloads: Iterable[Workload],
        decision: Decision,
        blocked: list[tuple[PodGroup, str]],
    ) -> None:
        live = {g.key for g in groups}
        self.preempted_for = {k: v for k, v in self.preempted_for.items() if k in live}
        state = self.state
        state.books = decision.books
        state.entitled = {n: frozenset(e.entitled) for n, e in self.directory.entries.items()}
        state.passes += 1
        now = self.host.now().timestamp()
        admitted_now = {w.key for w in decision.admitted}
        state.workloads = [
            replace(w, admitted_at=now) if w.key in admitted_now else w for w in workloads
        ]
        state.waiting = dict(decision.waiting)
        for group, message in blocked:
            state.waiting[group.key] = Waiting("quota", message)
        admitted = {w.key for w in decision.admitted}
        for tenant in queues:
            counts = state.counts(tenant)
            mine = [g for g in groups if g.tenant == tenant]
            counts.admitted = sum(1 for g in mine if g.admitted or g.key in admitted)
            counts.waiting = sum(1 for g in mine if g.key in state.waiting)
        for tenant in [t for t in state.tenants if t not in queues]:
            del state.tenants[tenant]


# ---------------------------------------------------------------------- pod facts
def gated(pod: Obj) -> bool:
    """Whether the pod still waits for admission (carries the admission gate)."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == ADMISSION_GATE for g in gates)


def leaving(pod: Obj) -> bool:
    """Whether the pod is on its way out: deleted, or marked a disruption target."""
    if pod["metadata"].get("deletionTimestamp"):
        return True
    return any(
        c.get("type") == DISRUPTION_TARGET and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _counts(pod: Obj) -> bool:
    """Whether the pod belongs to a workload: a tenant twin that is not finished, and, if
    it is being deleted, one that was admitted (it holds quota until it is gone)."""
    if names.TENANT_LABEL not in (pod["metadata"].get("labels") or {}):
        return False
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return False
    return not (pod["metadata"].get("deletionTimestamp") and gated(pod))


def _says_gang(pod: Obj) -> bool:
    metadata = pod["metadata"]
    return "true" in (
        (metadata.get("labels") or {}).get(GANG),
        (metadata.get("annotations") or {}).get(GANG),
    )


def priority(pods: Iterable[Obj], default: int) -> int:
    """The ``allot.dev/priority`` label of the workload's first pod that has a valid one."""
    for pod in pods:
        value = (pod["metadata"].get("labels") or {}).get(PRIORITY)
        try:
            return int(str(value))
        except ValueError:
            continue
    return default


def named_claims(pods: Iterable[Obj]) -> Iterator[str]:
    for pod in pods:
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            if entry.get("resourceClaimName"):
                yield entry["resourceClaimName"]


def set_condition(
    pod: Obj, kind: str, status: str, reason: str, message: str, now: dt.datetime
) -> bool:
    """Put a condition in the pod's status; False when it is there unchanged. The
    transition time moves only when the status does."""
    conditions = list((pod.setdefault("status", {})).get("conditions") or [])
    condition: Obj = {"type": kind, "status": status, "reason": reason, "message": message}
    for index, existing in enumerate(conditions):
        if existing.get("type") != kind:
            continue
        same = {k: existing.get(k) for k in condition} == condition
        if same:
            return False
        stamp = existing.get("lastTransitionTime") if existing.get("status") == status else None
        conditions[index] = {**condition, "lastTransitionTime": stamp or _stamp(now)}
        break
    else:
        conditions.append({**condition, "lastTransitionTime": _stamp(now)})
    pod["status"]["conditions"] = conditions
    return True


def _stamp(now: dt.datetime) -> str:
    return now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def precise(now: dt.datetime) -> str:
    """RFC 3339 with microseconds: admissions in one second keep their order."""
    return now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def seconds(stamp: object) -> float:
    if not stamp:
        return 0.0
    try:
        return dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def admission_time(pod: Obj) -> float:
    metadata = pod["metadata"]
    recorded = (metadata.get("annotations") or {}).get(ADMITTED_AT)
    return seconds(recorded or metadata.get("creationTimestamp"))


def _pod_order(pod: Obj) -> tuple[str, str]:
    return (pod["metadata"].get("creationTimestamp") or "", pod["metadata"]["name"])


def _incomplete(group: PodGroup) -> str:
    present = len(group.pods)
    return (
        f"waiting for {group.expected - present} more pod(s) of {group.what}: a gang is "
        f"admitted all together ({present} of {group.expected} exist)"
    )


def _amounts(demand: Mapping[str, int]) -> str:
    parts = [f"{show(r, n)} {r}" for r, n in sorted(demand.items()) if r != GPU_MEMORY and n]
    if demand.get(GPU_MEMORY):
        parts.append(f"{show(GPU_MEMORY, demand[GPU_MEMORY])} {GPU_MEMORY}")
    return ", ".join(parts) or "no devices"
