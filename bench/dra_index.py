"""Handling one slice or class event on a 500-node fleet (issue 15): the scheduler used
to drop its allocator and rebuild it from every slice and class (then gather every node's
pools again); with the DRA index the event updates one slice entry and the allocator in
place. Printed: the median time of one event followed by one allocation, before (rebuild)
and after (index + in-place update), and with every node's pools gathered again.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from allot.allocator import Allocator
from allot.api import core_v1 as corev1
from allot.api import resource_v1 as resourceapi
from allot.dra import AllocatorFeed, DraIndex
from allot.dra.index import CLASSES, SLICES

NODES, DEVICES = 500, 8
DRIVER = "gpu.nvidia.com"
Obj = dict[str, Any]


@dataclass(frozen=True)
class _Event:
    type: str
    rv: int
    cluster: str
    resource: str
    object: Obj


def _slice(node: int, rv: int) -> Obj:
    devices = [
        {
            "name": f"gpu-{g}",
            "attributes": {"productName": {"string": "H100"}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for g in range(DEVICES)
    ]
    return {
        "metadata": {"name": f"node-{node}-gpu", "resourceVersion": str(rv)},
        "spec": {
            "driver": DRIVER,
            "nodeName": f"node-{node}",
            "pool": {"name": f"node-{node}", "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _class(rv: int) -> Obj:
    expression = f'device.attributes["{DRIVER}"].productName == "H100"'
    return {
        "metadata": {"name": "h100", "resourceVersion": str(rv)},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def main() -> None:
    raws = [_slice(i, 10 + i) for i in range(NODES)]
    nodes = [corev1.Node.model_validate({"metadata": {"name": f"node-{i}"}}) for i in range(NODES)]
    request = {"name": "r", "exactly": {"deviceClassName": "h100", "count": 1}}
    claim = resourceapi.ResourceClaim.model_validate(
        {"metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": {"requests": [request]}}}
    )

    def rebuild(all_nodes: bool) -> float:
        started = time.perf_counter()
        allocator = Allocator(
            [resourceapi.ResourceSlice.model_validate(s) for s in raws],
            [resourceapi.DeviceClass.model_validate(_class(1))],
        )
        for node in nodes if all_nodes else []:
            allocator.node_pools(node)
        allocator.allocate(nodes[-1], [claim])
        return time.perf_counter() - started

    index = DraIndex("host")
    index.refresh(raws, [_class(1)], [])
    feed = AllocatorFeed(index)
    rv = 100_000

    def update(resource: str, all_nodes: bool) -> float:
        nonlocal rv
        rv += 1
        obj = _slice(rv % NODES, rv) if resource == SLICES else _class(rv)
        started = time.perf_counter()
        index.observe(_Event("MODIFIED", rv, "host", resource, obj))
        allocator = feed.allocator()
        for node in nodes if all_nodes else []:
            allocator.node_pools(node)
        allocator.allocate(nodes[-1], [claim])
        return time.perf_counter() - started

    update(SLICES, True)  # warm: every node's pools gathered once
    for all_nodes in (False, True):
        before = statistics.median(rebuild(all_nodes) for _ in range(5))
        after_slice = statistics.median(update(SLICES, all_nodes) for _ in range(20))
        after_class = statistics.median(update(CLASSES, all_nodes) for _ in range(20))
        scope = "every node's pools + " if all_nodes else ""
        print(
            f"{NODES} nodes, event + {scope}one allocation: before {before * 1e3:.1f} ms; "
            f"after: slice {after_slice * 1e3:.2f} ms, class {after_class * 1e3:.2f} ms"
        )


if __name__ == "__main__":
    main()
