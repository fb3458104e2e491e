"""Which feasible node a pod goes to: the order in which nodes are tried.

kube-scheduler scores feasible nodes; the DRA plugin does not score device choice, so any
feasible node is a valid answer. allot makes the choice explicit and reproducible, and the
scheduler and ``allot simulate`` share it (``--placement``):

- ``first-fit`` (default): nodes in name order; the first that fits wins.
- ``pack``: nodes with the fewest unallocated devices first (ties by name), so partly used
  GPUs nodes fill up before empty ones are touched, keeping whole nodes free for large
  claims. Devices carved from shared counters (DynamicMIG) each count as one device.

Pure; used by ``allot.allocator.scheduling.place``, which the scheduler and
``allot simulate`` share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from allot.api import core_v1_nodes as corev1

PLACEMENTS = ("first-fit", "pack")


class UnknownPlacementError(ValueError):
    """A placement policy name allot does not know."""


def check_placement(policy: str) -> str:
    if policy not in PLACEMENTS:
        raise UnknownPlacementError(
            f"unknown placement {policy!r} (known: {', '.join(PLACEMENTS)})"
        )
    return policy


def order_nodes(
    nodes: Sequence[corev1.Node], policy: str, free_devices: Callable[[corev1.Node], int]
) -> list[corev1.Node]:
    """``nodes`` in the order the policy tries them."""
    by_name = sorted(nodes, key=lambda n: n.metadata.name or "")
    if policy == "pack":
        return sorted(by_name, key=free_devices)  # stable: ties stay in name order
    return by_name
