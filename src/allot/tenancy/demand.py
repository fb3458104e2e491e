"""What a fair-sharing workload asks for: devices per DeviceClass and bytes of GPU memory.

The fair-sharing admission controller (:mod:`allot.tenancy.queueing`) charges a workload,
before any device is allocated, the worst case of its DRA requests, exactly as the
ResourceQuota evaluator charges claims (:func:`allot.registry.quota.devices_per_class`:
``ExactCount`` its count, ``All`` 32, ``firstAvailable`` the largest count per class of the
alternatives, every class charged): a claim made from a template counts once per pod, a
claim named by several pods once per workload (and not at all when an admitted workload
has it reserved already: its holder is charged), and each DRA extended resource a pod
requests (``nvidia.com/gpu: 1`` where a class has that ``extendedResourceName``, or a
class's implicit ``deviceclass.resource.kubernetes.io/<class>``) counts as that many
devices of the class. GPU memory is ``count x`` the largest ``memory`` capacity among the
devices the class selects (the DRA index's per-class verdicts), so a workload is charged
the most its devices can hold. A claim or template that does not exist yet leaves the
demand partly unknown: :func:`workload_demand` names what is missing. Pure but for
reading through the caller's lookup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from allot.api.podresources import pod_requests
from allot.api.quantity import NANO
from allot.dra import DraIndex
from allot.fairshare.model import GPU_MEMORY
from allot.registry.quota import devices_per_class
from allot.types import Obj
from allot.validation.names import DEVICE_CLASS_RESOURCE_PREFIX

Lookup = Callable[[str, str], Obj | None]
"""(kind, name) -> the object in the workload's host namespace, or None."""


@dataclass
class ClassMemory:
    """The largest ``memory`` capacity among the devices each class selects, kept from
    the DRA index and recomputed only after slices or classes changed."""

    index: DraIndex
    _cache: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._changes = self.index.watch()

    def largest(self, class_name: str) -> int:
        changes = self._changes
        if changes.slices or changes.removed or changes.classes:
            self._cache.clear()
            changes.clear()
        cached = self._cache.get(class_name)
        if cached is None:
            cached = 0
            for slice_name, entry in self.index.slices.items():
                for device in self.index.selected(class_name, slice_name):
                    cached = max(cached, entry.memory.get(device, 0))
            self._cache[class_name] = cached
        return cached

    def extended_names(self) -> dict[str, str]:
        """extendedResourceName -> class, for the classes that declare one."""
        found: dict[str, str] = {}
        for name, entry in sorted(self.index.classes.items()):
            extended = entry.model.spec.extended_resource_name if entry.model.spec else None
            if extended:
                found.setdefault(extended, name)
        return found


def workload_demand(
    pods: Iterable[Obj],
    lookup: Lookup,
    memory: ClassMemory,
    charged_elsewhere: Iterable[str] = (),
) -> tuple[Counter[str], list[str]]:
    """Devices per class and ``gpuMemory`` bytes for ``pods`` as one workload, and the
    claims and templates they name that do not exist (``ResourceClaim x``), whose devices
    are not counted; ``charged_elsewhere``: named claims an admitted workload holds."""
    devices: Counter[str] = Counter()
    named: set[str] = set()
    missing: list[str] = []
    skip = set(charged_elsewhere)
    extended = memory.extended_names()
    for pod in pods:
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            template, claim = entry.get("resourceClaimTemplateName"), entry.get("resourceClaimName")
            if template:
                found = lookup("ResourceClaimTemplate", template)
                if found is None:
                    missing.append(f"ResourceClaimTemplate {template}")
                    continue
                devices.update(devices_per_class({"spec": (found.get("spec") or {}).get("spec")}))
            elif claim and claim not in named and claim not in skip:
                named.add(claim)
                found = lookup("ResourceClaim", claim)
                if found is None:
                    missing.append(f"ResourceClaim {claim}")
                    continue
                devices.update(devices_per_class(found))
        devices.update(extended_devices(pod, extended))
    return with_memory(devices, memory.largest), sorted(set(missing))


def extended_devices(pod: Obj, extended: Mapping[str, str]) -> Counter[str]:
    """Devices per class for the pod's DRA extended-resource requests (whole units, up)."""
    found: Counter[str] = Counter()
    for name, amount in pod_requests(pod.get("spec") or {}).items():
        class_name = extended.get(name)
        if class_name is None and name.startswith(DEVICE_CLASS_RESOURCE_PREFIX):
            class_name = name[len(DEVICE_CLASS_RESOURCE_PREFIX) :]
        if class_name and amount.sign() > 0:
            found[class_name] += -(-amount.nanos // NANO)
    return found


def with_memory(devices: Counter[str], largest: Callable[[str], int]) -> Counter[str]:
    """``devices`` plus :data:`GPU_MEMORY`: each class's count times its largest device."""
    demand = Counter({name: count for name, count in devices.items() if count > 0})
    total = sum(count * largest(name) for name, count in demand.items())
    if total:
        demand[GPU_MEMORY] = total
    return demand
