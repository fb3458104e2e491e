"""Node: published by the driver's node agent; ``kubectl get nodes`` columns."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj


def _node_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    status = obj.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    state = {"True": "Ready", "False": "NotReady"}.get(conditions.get("Ready") or "", "Unknown")
    if (obj.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = obj["metadata"].get("labels") or {}
    roles = sorted(
        k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k
    )
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        obj["metadata"]["name"],
        state,
        ",".join(roles) or "<none>",
        age(obj, now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP") or "<none>",
        addresses.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


STRATEGIES = (
    KindStrategy(
        "Node",
        "node",
        generation=False,
        short_names=("no",),
        subresources=("status",),
        table=Table(
            [
                NAME,
                column("Status", "The status of the node"),
                column("Roles", "The roles of the node"),
                AGE,
                column("Version", "Kubelet Version reported by the node."),
                column("Internal-IP", "List of internal IPs for the node.", 1),
                column("External-IP", "List of external IPs for the node.", 1),
                column("OS-Image", "OS image reported by the node.", 1),
                column("Kernel-Version", "Kernel version reported by the node.", 1),
                column("Container-Runtime", "Container runtime reported by the node.", 1),
            ],
            _node_cells,
        ),
    ),
)
