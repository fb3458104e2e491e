"""ResourceQuota: usage evaluation and the admission plugin that enforces it.

Usage follows Kubernetes 1.36's evaluators: every kind is charged ``count/<resource>``;
a ResourceClaim is charged, per device class, the devices its requests may take in the
worst case (``ExactCount`` its count, ``All`` 32, ``firstAvailable`` the largest count per
class among the alternatives, every class charged), under
``<class>.deviceclass.resource.k8s.io/devices`` and, with DRAExtendedResource, under
``requests.deviceclass.resource.kubernetes.io/<class>`` and the class's
``requests.<extendedResourceName>``; a Pod is charged ``pods``, ``requests.<name>`` for
each DRA extended resource of its requests and the compute keys
(``requests.cpu``/``memory``/``ephemeral-storage``, the bare names, ``limits.*``,
hugepages) of its ``PodRequests`` and ``PodLimits`` (:mod:`allot.api.podresources`: init
containers and sidecars counted as upstream counts them) until it is terminal or past its
deletion grace; a quota on cpu or memory makes every container state it (``failed quota:
q: must specify requests.cpu for: c``), and a scoped quota covers only the pods
:mod:`allot.registry.quotascopes` says it does. Amounts are quantities, added and printed
as upstream's. The scheduler's extended-resource claim is charged under the ``requests.``
keys only what its owning pod was not charged already, and only when it is that pod's claim
(``resource.kubernetes.io/extended-resource-claim: "true"``, controlled by
the existing pod of that uid, the one its ``status.extendedResourceClaimStatus`` names or
the first it owns): upstream's owner check (``resource_claims.go``
``getVerifiedPodUsage``), so the annotation alone exempts nothing. Usage comes from specs,
not allocations. A create that would take a namespace past a quota's ``hard`` is refused
with the API server's text (``exceeded quota: q, requested: k=1, used: k=2, limited:
k=2``). ``QuotaAdmission.pending`` adds objects already admitted elsewhere and on their way
to a namespace (a tenant's claims before the sync has made their host twins), so
concurrent creates cannot pass a quota between admission and sync. Used as an admission
hook and by the quota status controller.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from allot.api.podresources import is_pod_level_resource, pod_quota_limits, pod_quota_requests
from allot.api.quantity import Quantity
from allot.registry.admission import AdmissionDenied, AdmissionRequest, Operation
from allot.registry.kinds import QuotaEvaluator, strategy
from allot.registry.quotascopes import covers
from allot.registry.resources import ServedResource, all_resources, by_kind
from allot.store import Store
from allot.types import Obj
from allot.validation.names import (
    DEVICE_CLASS_RESOURCE_PREFIX,
    QUOTA_LIMITS_PREFIX,
    QUOTA_REQUESTS_PREFIX,
    is_dra_extended_resource_name,
)

Usage = dict[str, Quantity]
ZERO = Quantity(0)
ONE = Quantity.from_int(1)
ALL_MODE_DEVICES = 32
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
TERMINAL_PHASES = ("Succeeded", "Failed")
HUGEPAGES_PREFIX = "hugepages-"
COMPUTE_RESOURCES = ("cpu", "memory", "ephemeral-storage")
POD_KEYS = frozenset(
    ["pods"]
    + list(COMPUTE_RESOURCES)
    + [p + name for p in (QUOTA_REQUESTS_PREFIX, QUOTA_LIMITS_PREFIX) for name in COMPUTE_RESOURCES]
)
# upstream's validationSet: a quota on these makes every container say its own
CONSTRAINED_KEYS = frozenset(
    ["cpu", "memory"]
    + [p + name for p in (QUOTA_REQUESTS_PREFIX, QUOTA_LIMITS_PREFIX) for name in ("cpu", "memory")]
)


def count_key(resource: ServedResource) -> str:
    return f"count/{resource.info.qualified_resource}"


class Charging:
    """What usage depends on beyond the object itself, in one cluster: the classes'
    ``extendedResourceName`` and, for extended-resource claims, their owning pods."""

    def __init__(
        self,
        store: Store | None,
        cluster: str,
        extended: dict[str, str],
        now: dt.datetime | None = None,
    ) -> None:
        self.store = store
        self.cluster = cluster
        self.extended = extended
        self.now = now  # past a pod's deletion grace it is no longer charged

    def owner_usage(self, claim: Obj) -> Usage:
        """What the pod that owns the scheduler's extended-resource ``claim`` was charged;
        nothing unless the claim passes upstream's owner check."""
        metadata = claim["metadata"]
        if (metadata.get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) != "true":
            return {}
        owner = _pod_controller(metadata)
        if owner is None or self.store is None:
            return {}
        namespace = metadata.get("namespace", "")
        pod = self.store.peek(self.cluster, by_kind("Pod").store, namespace, owner["name"])
        if pod is None or pod["metadata"].get("uid") != owner.get("uid"):
            return {}
        recorded = (pod.get("status") or {}).get("extendedResourceClaimStatus")
        if recorded is not None and recorded.get("resourceClaimName") != metadata.get("name"):
            return {}
        if recorded is None and self._owned_earlier(claim, owner.get("uid")):
            return {}
        return pod_usage(pod, self.now)

    def _owned_earlier(self, claim: Obj, uid: object) -> bool:
        """Whether the pod of ``uid`` controls an extended-resource claim created before
        ``claim`` (same time: an earlier name); only the first one is the pod's."""
        assert self.store is not None
        metadata = claim["metadata"]
        mine = (metadata.get("creationTimestamp") or "~", metadata.get("name") or "")
        claims, _ = self.store.list_objects(
            self.cluster, by_kind("ResourceClaim").store, metadata.get("namespace"), shared=True
        )
        for other in claims:
            theirs = other["metadata"]
            if theirs.get("name") == metadata.get("name"):
                continue
            if (theirs.get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) != "true":
                continue
            owner = _pod_controller(theirs)
            created = (theirs.get("creationTimestamp") or "~", theirs["name"])
            if owner is not None and owner.get("uid") == uid and created < mine:
                return True
        return False


def _pod_controller(metadata: Obj) -> Obj | None:
    """The controller reference of an object when it is a ``v1`` Pod with a name."""
    for reference in metadata.get("ownerReferences") or []:
        if reference.get("controller"):
            if reference.get("kind") == "Pod" and reference.get("apiVersion") == "v1":
                return reference if reference.get("name") else None
            return None
    return None


def _evaluator(resource: ServedResource) -> QuotaEvaluator | None:
    return None if resource.custom else strategy(resource.kind).quota


def usage(resource: ServedResource, obj: Obj, charging: Charging) -> Usage:
    """What ``obj`` is charged."""
    charged: Usage = {count_key(resource): ONE}
    evaluator = _evaluator(resource)
    if evaluator is not None:
        add_usage(charged, evaluator.usage(obj, charging))
    return charged


def add_usage(into: Usage, more: Mapping[str, Quantity]) -> None:
    """``quota.Add``: sums per key, the first addend's format kept."""
    for key, value in more.items():
        into[key] = into[key].add(value) if key in into else value


def claim_devices(
    claim: Obj, extended_names: dict[str, str], owner_usage: Usage | None = None
) -> Usage:
    """A claim's device keys; ``extended_names`` maps class name to extendedResourceName,
    ``owner_usage`` is what the owning pod was charged (for its extended-resource claim)."""
    charged: Usage = {}
    paid = owner_usage or {}
    for name, count in devices_per_class(claim).items():
        devices = Quantity.from_int(count)
        add_usage(charged, {f"{name}.deviceclass.resource.k8s.io/devices": devices})
        keys = [f"{QUOTA_REQUESTS_PREFIX}{DEVICE_CLASS_RESOURCE_PREFIX}{name}"]
        if name in extended_names:
            keys.append(f"{QUOTA_REQUESTS_PREFIX}{extended_names[name]}")
        for key in keys:  # port of addExtendedResourceQuota: only what the pod was not charged
            remainder = devices.sub(paid.get(key, ZERO))
            if remainder.sign() > 0:
                add_usage(charged, {key: remainder})
    return charged


def devices_per_class(claim: Obj) -> Counter[str]:
    per_class: Counter[str] = Counter()
    for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if request.get("exactly"):
            exact = request["exactly"]
            per_class[exact.get("deviceClassName", "")] += _device_count(exact)
            continue
        largest: dict[str, int] = {}
        for alternative in request.get("firstAvailable") or []:
            name = alternative.get("deviceClassName", "")
            largest[name] = max(largest.get(name, 0), _device_count(alternative))
        per_class.update(largest)
    return per_class


def _device_count(request: Obj) -> int:
    mode = request.get("allocationMode") or "ExactCount"
    if mode == "All":
        return ALL_MODE_DEVICES
    if mode == "ExactCount":
        return int(request.get("count") or 1)
    return 0


def pod_usage(pod: Obj, now: dt.datetime | None = None) -> Usage:
    """Upstream's ``PodUsageFunc`` less ``count/pods`` (every kind's): ``pods`` and the
    compute keys of the pod's ``PodRequests`` and ``PodLimits``, ``requests.<name>`` of
    each DRA extended resource and hugepages it requests; nothing once the pod is terminal
    or past its deletion grace period at ``now`` (``QuotaV1Pod``)."""
    if not is_charged(pod, now):
        return {}
    spec = pod.get("spec") or {}
    charged: Usage = {"pods": ONE}
    requests, limits = pod_quota_requests(spec), pod_quota_limits(spec)
    for name in COMPUTE_RESOURCES:
        if name in requests:
            charged[name] = charged[QUOTA_REQUESTS_PREFIX + name] = requests[name]
        if name in limits:
            charged[QUOTA_LIMITS_PREFIX + name] = limits[name]
    for name, amount in requests.items():
        if name.startswith(HUGEPAGES_PREFIX):
            charged[name] = charged[QUOTA_REQUESTS_PREFIX + name] = amount
        elif is_dra_extended_resource_name(name):
            charged[QUOTA_REQUESTS_PREFIX + name] = amount
    return charged


def is_charged(pod: Obj, now: dt.datetime | None) -> bool:
    """``QuotaV1Pod``: not terminal, and not stuck terminating past its grace period."""
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return False
    metadata = pod.get("metadata") or {}
    deleted, grace = metadata.get("deletionTimestamp"), metadata.get("deletionGracePeriodSeconds")
    if now is None or not deleted or grace is None:
        return True
    deadline = dt.datetime.fromisoformat(deleted.replace("Z", "+00:00"))
    return not now > deadline + dt.timedelta(seconds=int(grace))


def pod_constraints(required: set[str], pod: Obj) -> str | None:
    """The evaluator's ``Constraints``: with a quota on cpu or memory (requests or
    limits), every container must say its own (after defaulting), unless the pod sets
    pod-level resources. The text after ``failed quota: <name>: `` or None."""
    spec = pod.get("spec") or {}
    pod_level = spec.get("resources") or {}
    levels = {**(pod_level.get("requests") or {}), **(pod_level.get("limits") or {})}
    if any(is_pod_level_resource(name) for name in levels):
        return None
    wanted = required & CONSTRAINED_KEYS
    missing: dict[str, set[str]] = {}
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for key in sorted(wanted - _container_keys(container)):
            missing.setdefault(key, set()).add(container.get("name") or "")
    if not missing:
        return None
    listed = [f"{key} for: {','.join(sorted(names))}" for key, names in sorted(missing.items())]
    return "must specify " + "; ".join(listed)


def _container_keys(container: Obj) -> set[str]:
    resources = container.get("resources") or {}
    keys = set()
    for name in ("cpu", "memory"):
        if name in (resources.get("requests") or {}):
            keys |= {name, QUOTA_REQUESTS_PREFIX + name}
        if name in (resources.get("limits") or {}):
            keys.add(QUOTA_LIMITS_PREFIX + name)
    return keys


def charges_pod_key(key: str) -> bool:
    """``MatchingResources`` of the pod evaluator: ``pods``, the compute keys, hugepages
    and ``requests.`` of extended resources."""
    return key in POD_KEYS or key.startswith((HUGEPAGES_PREFIX, QUOTA_REQUESTS_PREFIX))


def namespace_usage(
    store: Store,
    cluster: str,
    namespace: str,
    keys: Iterable[str],
    charging: Charging,
    pending: Iterable[tuple[ServedResource, Obj]] = (),
    quota: Obj | None = None,
) -> Usage:
    """The current usage of ``keys`` in a namespace, from the stored objects and
    ``pending`` ones (admitted, not stored here yet); only the objects a scoped ``quota``
    covers."""
    wanted = set(keys)
    total: Usage = {}

    def charge(resource: ServedResource, item: Obj) -> None:
        if quota is None or covers(quota, _is_pod(resource), item):
            charged = usage(resource, item, charging)
            add_usage(total, {k: v for k, v in charged.items() if k in wanted})

    for resource in all_resources(cluster):
        if not resource.namespaced or not _may_charge(resource, wanted):
            continue
        items, _ = store.list_objects(cluster, resource.store, namespace, shared=True)
        for item in items:
            charge(resource, item)
    for resource, item in pending:
        charge(resource, item)
    return total


def _is_pod(resource: ServedResource) -> bool:
    return not resource.custom and resource.kind == "Pod"


def _may_charge(resource: ServedResource, keys: set[str]) -> bool:
    if count_key(resource) in keys:
        return True
    evaluator = _evaluator(resource)
    return evaluator is not None and evaluator.charges(keys)


def extended_resource_names(store: Store, cluster: str) -> dict[str, str]:
    classes, _ = store.list_objects(cluster, by_kind("DeviceClass").store, None, shared=True)
    return {
        c["metadata"]["name"]: c["spec"]["extendedResourceName"]
        for c in classes
        if (c.get("spec") or {}).get("extendedResourceName")
    }


def hard_limits(quota: Obj) -> dict[str, Quantity]:
    hard = (quota.get("spec") or {}).get("hard") or {}
    return {key: Quantity.parse(str(value)) for key, value in hard.items()}


class QuotaAdmission:
    """The ``ResourceQuota`` admission plugin: refuses creates that a quota's constraints
    refuse (``failed quota``) or that exceed a quota (``exceeded quota``)."""

    def __init__(
        self,
        store: Store,
        on_denied: Callable[[str, str], None] | None = None,
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.store = store
        self.on_denied = on_denied or (lambda cluster, namespace: None)
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))
        # (cluster, namespace, the object being created) -> objects on their way there
        self.pending: Callable[[str, str, Obj], list[tuple[ServedResource, Obj]]] = (
            lambda cluster, namespace, obj: []
        )

    def admit(self, request: AdmissionRequest) -> list[str]:
        if request.operation is not Operation.CREATE or not request.resource.namespaced:
            return []
        if request.object is None or request.subresource:
            return []
        quotas, _ = self.store.list_objects(
            request.cluster, by_kind("ResourceQuota").store, request.namespace, shared=True
        )
        if not quotas:
            return []
        quotas = sorted(quotas, key=lambda q: q["metadata"]["name"])
        obj = request.object.to_wire()
        is_pod = _is_pod(request.resource)
        quotas = [q for q in quotas if covers(q, is_pod, obj)]
        for quota in quotas:
            self._constrain(request, quota, obj)
        extended = extended_resource_names(self.store, request.cluster)
        charging = Charging(self.store, request.cluster, extended, self.clock())
        requested = usage(request.resource, obj, charging)
        for quota in quotas:
            self._check(request, quota, requested, charging)
        return []

    def _constrain(self, request: AdmissionRequest, quota: Obj, obj: Obj) -> None:
        """The evaluator's constraints on an object under this quota's keys."""
        evaluator = _evaluator(request.resource)
        if evaluator is None or evaluator.constraints is None:
            return
        refusal = evaluator.constraints(set(hard_limits(quota)), obj)
        if refusal is None:
            return
        self.on_denied(request.cluster, request.namespace)
        raise AdmissionDenied(
            request.resource, request.name, f"failed quota: {quota['metadata']['name']}: {refusal}"
        )

    def _check(
        self, request: AdmissionRequest, quota: Obj, requested: Usage, charging: Charging
    ) -> None:
        hard = hard_limits(quota)
        keys = [k for k in sorted(hard) if k in requested and requested[k].sign() != 0]
        if not keys:
            return
        assert request.object is not None
        pending = self.pending(request.cluster, request.namespace, request.object.to_wire())
        used = namespace_usage(
            self.store, request.cluster, request.namespace, keys, charging, pending, quota
        )
        failed = [k for k in keys if used.get(k, ZERO).add(requested[k]).compare(hard[k]) > 0]
        if not failed:
            return
        self.on_denied(request.cluster, request.namespace)
        raise AdmissionDenied(
            request.resource,
            request.name,
            f"exceeded quota: {quota['metadata']['name']}, "
            f"requested: {_listing(failed, lambda k: str(requested[k]))}, "
            f"used: {_listing(failed, lambda k: str(used.get(k, ZERO)))}, "
            f"limited: {_listing(failed, lambda k: str(hard[k]))}",
        )


def _listing(keys: list[str], value: Callable[[str], str]) -> str:
    return ",".join(f"{key}={value(key)}" for key in keys)
