"""What is already allocated on the cluster, as the allocator needs to know it.

``AllocatedState`` mirrors ``schedulerapi.AllocatedState``: devices allocated exclusively,
shared allocations (device plus share ID) and the capacity consumed on shared devices.
Unlike upstream it may also name the owner of each allocation, so explanations can say
*which* claim holds a device. Built by callers (simulate, the scheduler) from claims'
``status.allocation``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from allot.api import resource_v1 as resourceapi
from allot.api.quantity import Quantity

DeviceID = tuple[str, str, str]
"""(driver, pool, device)"""

SharedDeviceID = tuple[str, str, str, str]
"""(driver, pool, device, shareID)"""


def device_id_text(device_id: DeviceID) -> str:
    return "/".join(device_id)


@dataclass
class AllocatedState:
    allocated_devices: set[DeviceID] = field(default_factory=set)
    shared_device_ids: set[SharedDeviceID] = field(default_factory=set)
    aggregated_capacity: dict[DeviceID, dict[str, Quantity]] = field(default_factory=dict)
    owners: dict[DeviceID, str] = field(default_factory=dict)
    generation: int = 0
    """Moves on every change, so answers computed for one state can be kept until then
    (``allot.allocator.scheduling``): whatever changes the fields above bumps it."""

    def add_allocation(
        self,
        claim_name: str,
        allocation: resourceapi.AllocationResult,
        *,
        consumable_capacity: bool = True,
    ) -> None:
        """Record an allocation result (admin-access results do not count, as upstream)."""
        self.generation += 1
        results = allocation.devices.results if allocation.devices else None
        for result in results or []:
            if result.admin_access:
                continue
            device_id = (result.driver or "", result.pool or "", result.device or "")
            self.owners.setdefault(device_id, claim_name)
            if consumable_capacity and result.share_id:
                self.shared_device_ids.add((*device_id, result.share_id))
                totals = self.aggregated_capacity.setdefault(device_id, {})
                for name, amount in (result.consumed_capacity or {}).items():
                    totals[name] = totals.get(name, Quantity(0)).add(amount)
            else:
                self.allocated_devices.add(device_id)
