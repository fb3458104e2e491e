"""ResourceQuota: usage evaluation and the admission plugin that enforces it.

Usage follows Kubernetes 1.36's evaluators: every kind is charged ``count/<resource>``;
a ResourceClaim is charged, per device class, the devices its requests may take in the
worst case (``ExactCount`` its count, ``All`` 32, ``firstAvailable`` the largest count per
class among the alternatives, every class charged), under
``<class>.deviceclass.resource.k8s.io/devices`` and, with DRAExtendedResource, under
``requests.deviceclass.resource.kubernetes.io/<class>`` and the class's
``requests.<extendedResourceName>``; a Pod is charged ``pods`` while not terminal and its
containers' extended-resource requests. Usage comes from specs, not allocations. A create
that would take a namespace past a quota's ``hard`` is refused with the API server's text
(``exceeded quota: q, requested: k=1, used: k=2, limited: k=2``). ``QuotaAdmission.pending``
adds objects already admitted elsewhere and on their way to a namespace (a tenant's
claims before the sync has made their host twins), so concurrent creates cannot pass a
quota between admission and sync. Used as an admission hook and by the quota status
controller.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from allot.api.quantity import Quantity
from allot.apiserver.admission import AdmissionDenied, AdmissionRequest, Operation
from allot.apiserver.resources import ServedResource, all_resources, by_kind
from allot.store import Store

Obj = dict[str, Any]
Usage = Counter[str]
ALL_MODE_DEVICES = 32
EXTENDED_PREFIX = "deviceclass.resource.kubernetes.io/"
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
TERMINAL_PHASES = ("Succeeded", "Failed")


def count_key(resource: ServedResource) -> str:
    return f"count/{resource.info.qualified_resource}"


def usage(resource: ServedResource, obj: Obj, extended_names: dict[str, str]) -> Usage:
    """What ``obj`` is charged; ``extended_names`` maps class name to extendedResourceName."""
    charged: Usage = Counter({count_key(resource): 1})
    if resource.kind == "ResourceClaim":
        charged.update(claim_devices(obj, extended_names))
    elif resource.kind == "Pod":
        charged.update(pod_usage(obj))
    return charged


def claim_devices(claim: Obj, extended_names: dict[str, str]) -> Usage:
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
    charged: Usage = Counter()
    for name, count in per_class.items():
        charged[f"{name}.deviceclass.resource.k8s.io/devices"] += count
        charged[f"requests.{EXTENDED_PREFIX}{name}"] += count
        if name in extended_names:
            charged[f"requests.{extended_names[name]}"] += count
    annotations = claim["metadata"].get("annotations") or {}
    if annotations.get(EXTENDED_CLAIM_ANNOTATION) == "true":  # the pod was charged already
        charged = Counter({k: v for k, v in charged.items() if not k.startswith("requests.")})
    return charged


def _device_count(request: Obj) -> int:
    mode = request.get("allocationMode") or "ExactCount"
    if mode == "All":
        return ALL_MODE_DEVICES
    if mode == "ExactCount":
        return int(request.get("count") or 1)
    return 0


def pod_usage(pod: Obj) -> Usage:
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return Counter()
    charged: Usage = Counter({"pods": 1})
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        limits = (container.get("resources") or {}).get("limits") or {}
        for key, value in {**limits, **requests}.items():
            if "/" in key and not key.startswith("kubernetes.io/"):
                charged[f"requests.{key}"] += Quantity.parse(str(value)).as_integer()
    return charged


def namespace_usage(
    store: Store,
    cluster: str,
    namespace: str,
    keys: Iterable[str],
    extended: dict[str, str],
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
            total.update({k: v for k, v in usage(resource, item, extended).items() if k in wanted})
    for resource, item in pending:
        total.update({k: v for k, v in usage(resource, item, extended).items() if k in wanted})
    return total


def _may_charge(resource: ServedResource, keys: set[str]) -> bool:
    if count_key(resource) in keys:
        return True
    if resource.kind == "ResourceClaim":
        return any(k.endswith("/devices") or k.startswith("requests.") for k in keys)
    return resource.kind == "Pod" and any(k == "pods" or k.startswith("requests.") for k in keys)


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
        requested = usage(request.resource, request.object.to_wire(), extended)
        for quota in sorted(quotas, key=lambda q: q["metadata"]["name"]):
            self._check(request, quota, requested, extended)
        return []

    def _check(self, request: AdmissionRequest, quota: Obj, requested: Usage, ext: Obj) -> None:
        hard = hard_limits(quota)
        keys = [k for k in sorted(hard) if requested.get(k)]
        if not keys:
            return
        assert request.object is not None
        pending = self.pending(request.cluster, request.namespace, request.object.to_wire())
        used = namespace_usage(self.store, request.cluster, request.namespace, keys, ext, pending)
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
