"""The GPU-memory quota: the device ``memory`` a namespace's claims hold, and whether an
allocation would take it past the tenant's ``spec.quota.gpuMemory``.

One judgement for both engines: the embedded scheduler checks it as a filter before it
writes an allocation (:mod:`allot.controllers.scheduler`), and on a real cluster the
controller's validating webhook on ``resourceclaims/status`` refuses the allocation
kube-scheduler writes (:mod:`allot.cluster.webhook`). Pure: reads the DRA index only.
"""

from __future__ import annotations

from collections.abc import Iterable

from allot.api.claims import held_memory
from allot.api.quantity import Quantity, QuantityFormat
from allot.api.tenancy import Tenant
from allot.dra.index import DraIndex
from allot.types import Obj


def tenant_limit(tenant: Tenant) -> Quantity | None:
    """The tenant's hard GPU-memory quota (none in fair-sharing mode: GPU memory is then a
    share the admission controller counts, not a hard limit)."""
    quota = tenant.spec.quota
    if quota is None or quota.gpu_memory is None or tenant.spec.sharing is not None:
        return None
    return quota.gpu_memory


def overrun(
    index: DraIndex,
    namespace: str,
    allocations: Iterable[Obj],
    owner: str,
    most: Quantity,
    *,
    besides: str = "",
    also: Iterable[Obj] = (),
) -> str:
    """Why ``allocations`` (``status.allocation``-shaped results) in ``namespace`` would
    exceed ``most`` (the quota of ``owner``), or "" when they would not. Memory as
    :func:`allot.api.claims.held_memory` counts it (a device shared by capacity: what the
    result consumed). ``besides``: a claim (``namespace/name``) whose own allocation is not
    counted as held (the one being allocated); ``also``: allocations held that the index
    does not show yet."""
    memory = index.device_memory()
    held = sum(
        sum(held_memory(claim.allocation, memory).values())
        for key, claim in index.claims.items()
        if key.split("/", 1)[0] == namespace and key != besides
    )
    held += sum(sum(held_memory(a, memory).values()) for a in also)
    wanted = sum(sum(held_memory(a, memory).values()) for a in allocations)
    if Quantity.from_int(held + wanted).compare(most) <= 0:
        return ""
    return (
        f"would exceed the GPU memory quota of {owner} ({_gib(held)} allocated + "
        f"{_gib(wanted)} requested > {most})"
    )


def _gib(value: int) -> str:
    """Bytes as Kubernetes writes memory (``40Gi``, ``101120Mi``), not a bare byte count."""
    return str(Quantity.from_int(value, QuantityFormat.BINARY_SI))
