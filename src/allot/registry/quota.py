"""ResourceQuota: usage evaluation and the admission plugin that enforces it.

Usage follows Kubernetes 1.36's evaluators: every kind is charged ``count/<resource>``;
a ResourceClaim is charged, per device class, the devices its requests may take in the
worst case (``ExactCount`` its count, ``All`` 32, ``firstAvailable`` the largest count per
class among the alternatives, every class charged), under
``<class>.deviceclass.resource.k8s.io/devices`` and, with DRAExtendedResource, under
``requests.deviceclass.resource.kubernetes.io/<class>`` and the class's
``requests.<extendedResourceName>``; a Pod is charged ``pods`` while not terminal and
``requests.<name>`` for each DRA extended resource of its requests
(:func:`allot.api.podresources.pod_requests`: init containers count as upstream's
``PodRequests`` counts them). The scheduler's extended-resource claim is charged under the
``requests.`` keys only what its owning pod was not charged already, and only when it is
that pod's claim (``resource.kubernetes.io/extended-resource-claim: "true"``, controlled by
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

from collections import Counter
from collections.abc import Callable, Iterable

from allot.api.podresources import pod_requests
from allot.api.quantity import NANO, Quantity
from allot.registry.admission import AdmissionDenied, AdmissionRequest, Operation
from allot.registry.kinds import QuotaEvaluator, strategy
from allot.registry.resources import ServedResource, all_resources, by_kind
from allot.store import Store
from allot.types import Obj
from allot.validation.names import (
    DEVICE_CLASS_RESOURCE_PREFIX,
    QUOTA_REQUESTS_PREFIX,
    is_dra_extended_resource_name,
)

Usage = Counter[str]
ALL_MODE_DEVICES = 32
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
TERMINAL_PHASES = ("Succeeded", "Failed")


def count_key(resource: ServedResource) -> str:
    return f"count/{resource.info.qualified_resource}"


class Charging:
    """What usage depends on beyond the object itself, in one cluster: the classes'
    ``extendedResourceName`` and, for extended-resource claims, their owning pods."""

    def __init__(self, store: Store | None, cluster: str, extended: dict[str, str]) -> None:
        self.store = store
        self.cluster = cluster
        self.extended = extended

    def owner_usage(self, claim: Obj) -> Usage:
        """What the pod that owns the scheduler's extended-resource ``claim`` was charged;
        nothing unless the claim passes upstream's owner check."""
        metadata = claim["metadata"]
        if (metadata.get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) != "true":
            return Counter()
        owner = _pod_controller(metadata)
        if owner is None or self.store is None:
            return Counter()
        namespace = metadata.get("namespace", "")
        pod = self.store.peek(self.cluster, by_kind("Pod").store, namespace, owner["name"])
        if pod is None or pod["metadata"].get("uid") != owner.get("uid"):
            return Counter()
        recorded = (pod.get("status") or {}).get("extendedResourceClaimStatus")
        if recorded is not None and recorded.get("resourceClaimName") != metadata.get("name"):
            return Counter()
        if recorded is None and self._owned_earlier(claim, owner.get("uid")):
            return Counter()
        return pod_usage(pod)

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
    charged: Usage = Counter({count_key(resource): 1})
    evaluator = _evaluator(resource)
    if evaluator is not None:
        charged.update(evaluator.usage(obj, charging))
    return charged


def claim_devices(
    claim: Obj, extended_names: dict[str, str], owner_usage: Usage | None = None
) -> Usage:
    """A claim's device keys; ``extended_names`` maps class name to extendedResourceName,
    ``owner_usage`` is what the owning pod was charged (for its extended-resource claim)."""
    charged: Usage = Counter()
    for name, count in devices_per_class(claim).items():
        charged[f"{name}.deviceclass.resource.k8s.io/devices"] += count
        keys = [f"{QUOTA_REQUESTS_PREFIX}{DEVICE_CLASS_RESOURCE_PREFIX}{name}"]
        if name in extended_names:
            keys.append(f"{QUOTA_REQUESTS_PREFIX}{extended_names[name]}")
        for key in keys:  # port of addExtendedResourceQuota: only what the pod was not charged
            remainder = count - (owner_usage or Counter()).get(key, 0)
            if remainder > 0:
                charged[key] += remainder
    return charged


def devices_per_class(claim: Obj) -> Usage:
    per_class: Usage = Counter()
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


def pod_usage(pod: Obj) -> Usage:
    """``pods`` and ``requests.<name>`` of each DRA extended resource the pod requests
    (upstream's ``PodUsageFunc``); nothing once the pod is terminal."""
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return Counter()
    charged: Usage = Counter({"pods": 1})
    for name, amount in pod_requests(pod.get("spec") or {}).items():
        if is_dra_extended_resource_name(name) and amount.sign() > 0:
            charged[QUOTA_REQUESTS_PREFIX + name] += -(-amount.nanos // NANO)  # whole units, up
    return charged


def namespace_usage(
    store: Store,
    cluster: str,
    namespace: str,
    keys: Iterable[str],
    charging: Charging,
    pending: Iterable[tuple[ServedResource, Obj]] = (),
) -> Usage:
    """The current usage of ``keys`` in a namespace, from the stored objects and
    ``pending`` ones (admitted, not stored here yet)."""
    wanted = set(keys)
    total: Usage = Counter()
    for resource in all_resources():
        if not resource.namespaced or not _may_charge(resource, wanted):
            continue
        items, _ = store.list_objects(cluster, resource.store, namespace, shared=True)
        for item in items:
            total.update({k: v for k, v in usage(resource, item, charging).items() if k in wanted})
    for resource, item in pending:
        total.update({k: v for k, v in usage(resource, item, charging).items() if k in wanted})
    return total


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
    """The ``ResourceQuota`` admission plugin: refuses creates that exceed a quota."""

    def __init__(self, store: Store, on_denied: Callable[[str, str], None] | None = None) -> None:
        self.store = store
        self.on_denied = on_denied or (lambda cluster, namespace: None)
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
        extended = extended_resource_names(self.store, request.cluster)
        charging = Charging(self.store, request.cluster, extended)
        requested = usage(request.resource, request.object.to_wire(), charging)
        for quota in sorted(quotas, key=lambda q: q["metadata"]["name"]):
            self._check(request, quota, requested, charging)
        return []

    def _check(
        self, request: AdmissionRequest, quota: Obj, requested: Usage, charging: Charging
    ) -> None:
        hard = hard_limits(quota)
        keys = [k for k in sorted(hard) if requested.get(k)]
        if not keys:
            return
        assert request.object is not None
        pending = self.pending(request.cluster, request.namespace, request.object.to_wire())
        used = namespace_usage(
            self.store, request.cluster, request.namespace, keys, charging, pending
        )
        failed = [k for k in keys if Quantity.from_int(used[k] + requested[k]).compare(hard[k]) > 0]
        if not failed:
            return
        self.on_denied(request.cluster, request.namespace)
        raise AdmissionDenied(
            request.resource,
            request.name,
            f"exceeded quota: {quota['metadata']['name']}, "
            f"requested: {_listing(failed, lambda k: str(requested[k]))}, "
            f"used: {_listing(failed, lambda k: str(used[k]))}, "
            f"limited: {_listing(failed, lambda k: str(hard[k]))}",
        )


def _listing(keys: list[str], value: Callable[[str], str]) -> str:
    return ",".join(f"{key}={value(key)}" for key in keys)
