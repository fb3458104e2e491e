"""What devices that consume shared counters can still be allocated, given what is allocated.

With partitionable devices (KEP 4815; the NVIDIA driver's DynamicMIG publishes every
possible MIG placement of a GPU, and the whole GPU, as devices drawing on the GPU's counter
set), an unallocated device is not necessarily one that can be allocated: a 3g.40gb
placement needs memory slices that a 1g.10gb beside it may already hold. The allocator
decides it per device (``allot.allocator.search``: what the allocated devices of the pool
consume, plus the device's own consumption, must stay within each counter's capacity);
this module asks the same question of a whole pool at once:

* :func:`left_over`: each counter's capacity less what the allocated devices consume;
* :func:`fits`: whether one more device fits in what is left;
* :func:`one_at_a_time`: how many of a group of devices could still be allocated, one
  after the other: a greedy pass, smallest consumption first, taking each device that
  still fits. Two free devices may exclude each other, so the number of free devices
  overstates it; for the placements of one MIG profile the greedy pass finds the most
  that fit (the placements are aligned runs of equal length), for a class mixing
  profiles it counts the small ones first (the most devices, not the most memory).

Used by :mod:`allot.ops.capacity`, which ``allot top``, ``/metrics``, the alert rules, the
dashboard and ``allot doctor`` read. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

CounterKey = tuple[str, str]  # counter set, counter
Consumption = tuple[tuple[str, str, int], ...]  # (counter set, counter, amount)


class Consumer(Protocol):
    """A device as these functions read it: what it consumes of its pool's counters, each
    (counter set, counter) once (:func:`merged`; :class:`allot.dra.SliceEntry` keeps it so)."""

    @property
    def consumes(self) -> Consumption: ...


def left_over(
    capacity: Mapping[CounterKey, int], allocated: Iterable[Consumer]
) -> dict[CounterKey, int]:
    """Each counter of a pool's counter sets, less what its allocated devices consume."""
    left = dict(capacity)
    for device in allocated:
        for counter_set, counter, amount in device.consumes:
            left[(counter_set, counter)] = left.get((counter_set, counter), 0) - amount
    return left


def fits(device: Consumer, left: Mapping[CounterKey, int]) -> bool:
    """Whether the device's consumption fits in what is left (a counter the pool does not
    publish has nothing left, as the allocator treats it)."""
    return all(left.get((s, c), 0) >= amount for s, c, amount in device.consumes)


def one_at_a_time(devices: Iterable[Consumer], left: Mapping[CounterKey, int]) -> int:
    """How many of ``devices`` (all unallocated, of one pool) a greedy pass allocates one
    after the other, smallest total consumption first, each taking its counters."""
    remaining = dict(left)
    count = 0
    for device in sorted(devices, key=lambda d: sum(amount for _, _, amount in d.consumes)):
        consumes = device.consumes
        if all(remaining.get((s, c), 0) >= amount for s, c, amount in consumes):
            for counter_set, counter, amount in consumes:
                remaining[(counter_set, counter)] = (
                    remaining.get((counter_set, counter), 0) - amount
                )
            count += 1
    return count


def merged(consumption: Iterable[tuple[str, str, int]]) -> Consumption:
    """A device's consumption with each (counter set, counter) once, amounts added up: the
    form :func:`fits` and :func:`one_at_a_time` read (the API lets two ``consumesCounters``
    entries name one counter set)."""
    totals: dict[CounterKey, int] = {}
    for counter_set, counter, amount in consumption:
        totals[(counter_set, counter)] = totals.get((counter_set, counter), 0) + amount
    return tuple(
        (counter_set, counter, amount) for (counter_set, counter), amount in totals.items()
    )
