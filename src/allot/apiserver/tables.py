"""``meta.k8s.io/v1`` Tables: the columns ``kubectl get`` prints, per resource.

kubectl never formats cells itself, so the server does, with the column sets and cell
logic of upstream's ``printers.go`` (claims ``NAME STATE AGE``, pods ``NAME READY STATUS
RESTARTS AGE`` plus wide columns, ...) and ``duration.HumanDuration`` for ages. Rows carry
``PartialObjectMetadata`` (or the full object with ``includeObject=Object``) because kubectl
reads namespaces and labels from there. Called by the list, get and watch handlers.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Cells = Callable[[Obj, dt.datetime], list[Any]]

NAME = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "priority": 0,
    "description": "Name must be unique within a namespace.",
}
AGE = {
    "name": "Age",
    "type": "string",
    "format": "",
    "priority": 0,
    "description": "CreationTimestamp is a timestamp representing the server time when "
    "this object was created.",
}


def column(name: str, description: str, priority: int = 0, kind: str = "string") -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "format": "",
        "description": description,
        "priority": priority,
    }


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(obj: Obj, now: dt.datetime) -> str:
    created = obj.get("metadata", {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    moment = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    return human_duration((now - moment).total_seconds())


def _claim_state(obj: Obj) -> str:
    states = []
    if obj["metadata"].get("deletionTimestamp"):
        states.append("deleted")
    status = obj.get("status") or {}
    if not status.get("allocation"):
        if not states:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _pod_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    reason = status.get("reason") or status.get("phase") or "Pending"
    for container in statuses:
        state = container.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
    if obj["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [
        obj["metadata"]["name"],
        f"{ready}/{len(containers)}",
        reason,
        restarts,
        age(obj, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"{len(gates)}" if gates else "<none>",
    ]


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


def _event_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    involved = obj.get("involvedObject") or {}
    last = (
        obj.get("lastTimestamp") or obj.get("eventTime") or obj["metadata"].get("creationTimestamp")
    )
    seen = age({"metadata": {"creationTimestamp": last}}, now) if last else "<unknown>"
    return [
        seen,
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        obj.get("message", ""),
    ]


TABLES: dict[str, tuple[list[dict[str, Any]], Cells]] = {
    "resourceclaims": (
        [
            NAME,
            column("State", "A summary of the current state (allocated, pending, reserved, etc.)."),
            AGE,
        ],
        lambda o, n: [o["metadata"]["name"], _claim_state(o), age(o, n)],
    ),
    "resourceslices": (
        [
            NAME,
            column("Node", "The node which provides the devices."),
            column("Driver", "The name of the driver."),
            column("Pool", "The name of the pool."),
            AGE,
        ],
        lambda o, n: [
            o["metadata"]["name"],
            (o.get("spec") or {}).get("nodeName", ""),
            (o.get("spec") or {}).get("driver", ""),
            ((o.get("spec") or {}).get("pool") or {}).get("name", ""),
            age(o, n),
        ],
    ),
    "pods": (
        [
            NAME,
            column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
            column("Status", "The aggregate status of the containers in this pod."),
            column(
                "Restarts",
                "The number of times the containers in this pod have been "
                "restarted and when the last container in this pod has "
                "restarted.",
                kind="string",
            ),
            AGE,
            column("IP", "IP address allocated to the pod.", 1),
            column("Node", "Name of the Node this pod is assigned to.", 1),
            column("Nominated Node", "Name of the node this pod is nominated to run on.", 1),
            column("Readiness Gates", "Pod readiness gates.", 1),
        ],
        _pod_cells,
    ),
    "nodes": (
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
    "namespaces": (
        [NAME, column("Status", "The status of the namespace"), AGE],
        lambda o, n: [
            o["metadata"]["name"],
            (o.get("status") or {}).get("phase", "Active"),
            age(o, n),
        ],
    ),
    "events": (
        [
            column("Last Seen", "Time since the last occurrence."),
            column("Type", "Type of this event (Normal, Warning)."),
            column("Reason", "Why the action was taken."),
            column("Object", "The object this Event is about."),
            column("Message", "A human-readable description of the status of this operation."),
        ],
        _event_cells,
    ),
    "configmaps": (
        [NAME, column("Data", "Number of keys.", kind="integer"), AGE],
        lambda o, n: [
            o["metadata"]["name"],
            len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            age(o, n),
        ],
    ),
}


def _quota_usage(obj: Obj, limits: bool) -> str:
    """``key: used/hard`` pairs as kubectl prints them (REQUEST or LIMIT column)."""
    status = obj.get("status") or {}
    hard = status.get("hard") or (obj.get("spec") or {}).get("hard") or {}
    used = status.get("used") or {}
    parts = [
        f"{key}: {used.get(key, '0')}/{hard[key]}"
        for key in sorted(hard)
        if key.startswith("limits.") == limits
    ]
    return ", ".join(parts)


def _tenant_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    status = obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        status.get("phase", "Pending"),
        status.get("namespace", ""),
        ",".join(status.get("entitledDeviceClasses") or []) or "<none>",
        age(obj, now),
    ]


def _alert_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    since = status.get("activeSince")
    moment = dt.datetime.fromisoformat(since.replace("Z", "+00:00")) if since else None
    return [
        obj["metadata"]["name"],
        spec.get("rule", ""),
        spec.get("severity", ""),
        spec.get("tenant") or "<none>",
        human_duration((now - moment).total_seconds()) if moment else "<unknown>",
        spec.get("message", ""),
    ]


def _binding_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    ref = spec.get("paramRef") or {}
    shown = "<unset>"
    if ref:
        shown = f"{ref.get('namespace', '')}/{ref.get('name', '*')}".lstrip("/")
    return [obj["metadata"]["name"], spec.get("policyName", ""), shown, age(obj, now)]


def _policy_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    kind = spec.get("paramKind") or {}
    shown = f"{kind.get('apiVersion')}/{kind.get('kind')}" if kind else "<unset>"
    return [obj["metadata"]["name"], len(spec.get("validations") or []), shown, age(obj, now)]


TABLES.update(
    {
        "resourcequotas": (
            [
                NAME,
                AGE,
                column("Request", "Request represents a minimum amount of cpu/memory."),
                column("Limit", "Limits control the maximum amount of cpu/memory."),
            ],
            lambda o, n: [
                o["metadata"]["name"],
                age(o, n),
                _quota_usage(o, False),
                _quota_usage(o, True),
            ],
        ),
        "tenants": (
            [
                NAME,
                column("Phase", "Whether the tenant's virtual cluster is ready."),
                column("Namespace", "The tenant's namespace on the host."),
                column("Classes", "The host DeviceClasses the tenant is entitled to."),
                AGE,
            ],
            _tenant_cells,
        ),
        "alerts": (
            [
                NAME,
                column("Rule", "The alert rule."),
                column("Severity", "warning or critical."),
                column("Tenant", "The tenant concerned, if any."),
                column("Since", "How long the condition has held."),
                column("Message", "What is wrong."),
            ],
            _alert_cells,
        ),
        "validatingadmissionpolicies": (
            [
                NAME,
                column("Validations", "Number of validations.", kind="integer"),
                column("ParamKind", "The kind of the parameter resource."),
                AGE,
            ],
            _policy_cells,
        ),
        "validatingadmissionpolicybindings": (
            [
                NAME,
                column("PolicyName", "The policy this binding binds."),
                column("ParamRef", "The parameter resource."),
                AGE,
            ],
            _binding_cells,
        ),
    }
)


def _default_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    return [obj["metadata"]["name"], age(obj, now)]


def printer_columns(custom: tuple[tuple[str, str, str], ...]) -> tuple[list[Obj], Cells]:
    """A CRD's ``additionalPrinterColumns`` (simple ``.a.b`` JSON paths) after the name."""
    columns = [NAME] + [column(name, f"{name} ({path})", kind=kind) for name, kind, path in custom]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        values: list[Any] = [obj["metadata"]["name"]]
        for _, kind, path in custom:
            value = _json_path(obj, path)
            if kind == "date" and isinstance(value, str):
                moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
                value = human_duration((now - moment).total_seconds())
            elif isinstance(value, list):
                value = ",".join(str(v) for v in value)
            values.append("<none>" if value is None else value)
        return values

    return columns, cells


def _json_path(obj: Any, path: str) -> Any:
    """``.a.b``, ``.a[*].b`` and ``.a[0]`` paths, as printer columns use them."""
    values: list[Any] = [obj]
    for part in path.strip(".").split("."):
        name, _, index = part.partition("[")
        found = []
        for value in values:
            value = value.get(name) if isinstance(value, dict) and name else value
            if index and isinstance(value, list):
                selected = value if index == "*]" else value[int(index[:-1]) : int(index[:-1]) + 1]
                found += selected
            elif value is not None:
                found.append(value)
        values = found
    if not values:
        return None
    return values if "[*]" in path else values[0]


def table(
    plural: str,
    objects: list[Obj],
    now: dt.datetime,
    *,
    include_object: str,
    resource_version: str = "",
    continue_token: str = "",
    custom_columns: tuple[tuple[str, str, str], ...] = (),
) -> Obj:
    if custom_columns:
        columns, cells = printer_columns(custom_columns)
    else:
        columns, cells = TABLES.get(plural, ([NAME, AGE], _default_cells))
    rows = []
    for obj in objects:
        row: Obj = {"cells": cells(obj, now)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata", {}),
            }
        rows.append(row)
    metadata: Obj = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    }
