"""What a pod's and a claim's wire documents say about DRA, read in one place.

Upstream keeps these rules in ``k8s.io/dynamic-resource-allocation/resourceclaim``
(``Name``: which ResourceClaim a pod's claim entry refers to) and repeats small loops over
``status.allocation`` in the scheduler, the kubelet and quota. allot reads them here, once:
the scheduler, the resourceclaim controller, the node agent, tenant sync, quota, capacity,
audit and alerts all call these functions instead of walking ``(x.get(..) or {})`` chains
of their own. Pure: documents in, values out.
"""

from __future__ import annotations

from collections.abc import Mapping

from allot.api.errors import ClaimNotCreatedError
from allot.api.quantity import Quantity
from allot.types import Obj

DeviceKey = tuple[str, str, str]  # (driver, pool, device)


def claim_name(pod: Obj, pod_claim: Obj) -> str | None:
    """The ResourceClaim a ``spec.resourceClaims`` entry refers to (upstream
    ``resourceclaim.Name``): its ``resourceClaimName``, or for a template the name recorded
    in ``status.resourceClaimStatuses``; None when the controller recorded that no claim
    is needed. ``ClaimNotCreatedError`` while the template's claim is not recorded yet."""
    if pod_claim.get("resourceClaimName"):
        return str(pod_claim["resourceClaimName"])
    if not pod_claim.get("resourceClaimTemplateName"):
        return None
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if status.get("name") == pod_claim.get("name"):
            name = status.get("resourceClaimName")
            return str(name) if name else None
    raise ClaimNotCreatedError(
        f'pod "{pod["metadata"].get("namespace", "")}/{pod["metadata"]["name"]}": '
        "ResourceClaim not created yet"
    )


def pod_claim_names(pod: Obj) -> dict[str, str]:
    """Each pod claim entry's ResourceClaim name, by entry name, as far as known; the
    claim behind extended-resource requests under the empty name."""
    names = {
        s["name"]: s["resourceClaimName"]
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if s.get("name") and s.get("resourceClaimName")
    }
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        if entry.get("resourceClaimName"):
            names[entry["name"]] = entry["resourceClaimName"]
    extended = extended_claim_name(pod)
    if extended:
        names[""] = extended
    return names


def referenced_claims(pod: Obj) -> set[str]:
    """Every ResourceClaim the pod names anywhere (spec, statuses, extended resources)."""
    return set(pod_claim_names(pod).values())


def extended_claim_name(pod: Obj) -> str | None:
    """The claim the scheduler created for the pod's extended-resource requests."""
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    name = status.get("resourceClaimName")
    return str(name) if name else None


def requests(claim: Obj) -> list[Obj]:
    """The claim's device requests (``spec.devices.requests``)."""
    devices = (claim.get("spec") or {}).get("devices") or {}
    found: list[Obj] = devices.get("requests") or []
    return found


def request_classes(request: Obj) -> list[str]:
    """The DeviceClasses one request may use: its ``exactly`` class, or each
    ``firstAvailable`` alternative's, in order."""
    exactly = request.get("exactly") or {}
    if exactly.get("deviceClassName"):
        return [exactly["deviceClassName"]]
    return [
        a["deviceClassName"]
        for a in request.get("firstAvailable") or []
        if a.get("deviceClassName")
    ]


def claim_classes(claim: Obj) -> list[str]:
    """Every DeviceClass a claim's requests name (alternatives too), first use first."""
    found: dict[str, None] = {}
    for request in requests(claim):
        for name in request_classes(request):
            found.setdefault(name)
    return list(found)


def request_class(claim: Obj, request_name: str) -> str:
    """The class behind an allocation result's ``request`` (``name`` or
    ``name/subrequest`` for a ``firstAvailable`` alternative); "" when unknown."""
    top, _, sub = request_name.partition("/")
    for request in requests(claim):
        if request.get("name") != top:
            continue
        if not sub:
            return str((request.get("exactly") or {}).get("deviceClassName", ""))
        for alternative in request.get("firstAvailable") or []:
            if alternative.get("name") == sub:
                return str(alternative.get("deviceClassName", ""))
    return ""


def allocation_results(claim: Obj) -> list[Obj]:
    """``status.allocation.devices.results``; empty while unallocated."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    found: list[Obj] = (allocation.get("devices") or {}).get("results") or []
    return found


def allocated_devices(claim: Obj, *, with_admin_access: bool = False) -> dict[DeviceKey, str]:
    """The devices allocated to the claim, each with the request it serves. Devices held
    with ``adminAccess`` are left out unless asked for: they are not in use (upstream's
    allocated-device tracking and quota skip them too)."""
    return {
        (r.get("driver", ""), r.get("pool", ""), r.get("device", "")): r.get("request", "")
        for r in allocation_results(claim)
        if with_admin_access or not r.get("adminAccess")
    }


def consumed_memory(result: Obj) -> int | None:
    """The ``memory`` an allocation result consumed of a device shared by capacity
    (``consumedCapacity``, KEP-5075), in bytes; None for a result that takes the device
    whole."""
    value = (result.get("consumedCapacity") or {}).get("memory")
    if value is None:
        return None
    return Quantity.parse(str(value)).as_integer()


def held_memory(
    allocation: Obj | None, device_memory: Mapping[DeviceKey, int]
) -> dict[DeviceKey, int]:
    """The GPU memory an allocation (``status.allocation``) holds, per device: of a device
    shared by capacity, the memory its result consumed; of any other, the device's whole
    ``memory`` (``device_memory``; 0 for a device without one). adminAccess results hold
    none. What GPU-memory quotas, metrics and chargeback count."""
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    held: dict[DeviceKey, int] = {}
    for result in results:
        if result.get("adminAccess"):
            continue
        key = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
        consumed = consumed_memory(result)
        held[key] = held.get(key, 0) + (
            consumed if consumed is not None else device_memory.get(key, 0)
        )
    return held


def reserved_for(claim: Obj) -> list[Obj]:
    """The consumers recorded in ``status.reservedFor``."""
    found: list[Obj] = (claim.get("status") or {}).get("reservedFor") or []
    return found
