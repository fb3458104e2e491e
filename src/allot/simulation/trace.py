"""Trace files for ``allot simulate --trace``: tenants, DeviceClasses and timed workloads.

```yaml
horizon: 28800               # seconds simulated (default: the last arrival)
reclaimGraceSeconds: 30      # an evicted workload holds its devices this long (default 30)
cycleSeconds: 1              # admission and scheduling run every this many seconds (default 1)
deviceClasses: [...]         # DeviceClass manifests, as the platform team publishes them
tenants:
- name: research             # `sharing` as in a Tenant's spec; in hard-quota mode the tenant
  sharing: {...}             # may hold at most each `guaranteed`, and borrows nothing
workloads:
- {arrival: 0, tenant: research, pods: 4, devices: {gpu-h100: 1}, duration: 3600, priority: 0}
```

A workload is a gang: its ``pods`` start together and end ``duration`` seconds later. Each
pod asks ``devices`` (DeviceClass name: count) and/or ``gpuMemory`` (a quantity; alone, it
asks for one device with at least that much memory). Problems are raised as
:class:`TraceError` naming the field path (``workloads[3].devices.gpu-h101: ...``). Pure:
the CLI reads the file; :mod:`allot.simulation.traces` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from allot.api import kinds
from allot.api import resource_v1 as resourceapi
from allot.api.errors import ApiError
from allot.api.quantity import NANO, Quantity
from allot.api.tenancy import SharedAmount, SharingPreemption, TenantSharing
from allot.fairshare.model import (
    RECLAIM_POLICIES,
    WITHIN_TENANT_POLICIES,
    Queue,
    queue_from_sharing,
)

TRACE_KEYS = {
    "description",
    "horizon",
    "reclaimGraceSeconds",
    "cycleSeconds",
    "deviceClasses",
    "tenants",
    "workloads",
}
TENANT_KEYS = {"name", "sharing"}
WORKLOAD_KEYS = {
    "name",
    "arrival",
    "tenant",
    "pods",
    "devices",
    "gpuMemory",
    "duration",
    "priority",
}
DEFAULT_GRACE, DEFAULT_CYCLE = 30.0, 1.0


class TraceError(Exception):
    """The trace is not usable; the message starts with the field path."""


@dataclass(frozen=True)
class TraceWorkload:
    key: str
    tenant: str
    arrival: float
    pods: int
    devices: tuple[tuple[str, int], ...]
    """Per pod: (DeviceClass name, count), by name."""
    gpu_memory: int | None
    """Per pod, in bytes; with no ``devices``, the pod takes one device this large."""
    duration: float
    priority: int


@dataclass
class Trace:
    classes: list[resourceapi.DeviceClass]
    queues: dict[str, Queue]
    workloads: list[TraceWorkload]
    horizon: float
    grace: float = DEFAULT_GRACE
    cycle: float = DEFAULT_CYCLE
    description: str = ""
    tenants: list[str] = field(default_factory=list)


def parse_trace(document: Any) -> Trace:
    if not isinstance(document, dict):
        raise TraceError("a trace is an object with 'deviceClasses', 'tenants' and 'workloads'")
    unknown = sorted(set(document) - TRACE_KEYS)
    if unknown:
        raise TraceError(
            f"unknown key(s): {', '.join(unknown)} (known: {', '.join(sorted(TRACE_KEYS))})"
        )
    classes = [_device_class(i, d) for i, d in enumerate(_list(document, "deviceClasses"))]
    names = {c.metadata.name or "" for c in classes}
    queues: dict[str, Queue] = {}
    for index, raw in enumerate(_list(document, "tenants")):
        queue = _tenant(f"tenants[{index}]", raw, names)
        if queue.tenant in queues:
            raise TraceError(f"tenants[{index}].name: duplicate tenant {queue.tenant!r}")
        queues[queue.tenant] = queue
    workloads = [
        _workload(f"workloads[{i}]", i, raw, queues, names)
        for i, raw in enumerate(_list(document, "workloads"))
    ]
    horizon = document.get("horizon")
    last = max((w.arrival for w in workloads), default=0.0)
    return Trace(
        classes,
        queues,
        sorted(workloads, key=lambda w: (w.arrival, w.key)),
        last if horizon is None else _seconds("horizon", horizon, positive=True),
        _seconds("reclaimGraceSeconds", document.get("reclaimGraceSeconds", DEFAULT_GRACE)),
        _seconds("cycleSeconds", document.get("cycleSeconds", DEFAULT_CYCLE), positive=True),
        str(document.get("description") or ""),
        list(queues),
    )


def _list(document: dict[str, Any], key: str) -> list[Any]:
    value = document.get(key)
    if not isinstance(value, list) or not value:
        raise TraceError(f"{key}: required, a non-empty list")
    return value


def _seconds(where: str, value: Any, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise TraceError(f"{where}: must be a number of seconds >= 0, not {value!r}")
    if positive and value == 0:
        raise TraceError(f"{where}: must be more than 0 seconds")
    return float(value)


def _device_class(index: int, document: Any) -> resourceapi.DeviceClass:
    where = f"deviceClasses[{index}]"
    try:
        obj = kinds.decode(document)
    except ApiError as err:
        raise TraceError(f"{where}: {err}") from None
    if not isinstance(obj, resourceapi.DeviceClass) or not obj.metadata.name:
        raise TraceError(f"{where}: must be a DeviceClass with metadata.name")
    return obj


def _tenant(where: str, raw: Any, classes: set[str]) -> Queue:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise TraceError(f"{where}.name: required, the tenant's name")
    unknown = sorted(set(raw) - TENANT_KEYS)
    if unknown:
        raise TraceError(f"{where}: unknown key(s): {', '.join(unknown)} (known: name, sharing)")
    try:
        sharing = TenantSharing.model_validate(raw.get("sharing") or {})
    except ValidationError as err:
        first = err.errors()[0]
        path = ".".join(str(p) for p in first["loc"])
        raise TraceError(f"{where}.sharing.{path}: {first['msg']}") from None
    _check_sharing(f"{where}.sharing", sharing, classes)
    return queue_from_sharing(raw["name"], sharing)


def _check_sharing(where: str, sharing: TenantSharing, classes: set[str]) -> None:
    amounts: list[tuple[str, SharedAmount]] = []
    if sharing.gpu_memory is not None:
        amounts.append((f"{where}.gpuMemory", sharing.gpu_memory))
    for index, class_share in enumerate(sharing.device_classes or []):
        path = f"{where}.deviceClasses[{index}]"
        if class_share.name not in classes:
            raise TraceError(
                f"{path}.name: no DeviceClass {class_share.name!r} in deviceClasses "
                f"(known: {', '.join(sorted(classes))})"
            )
        amounts.append((path, class_share))
    for path, share in amounts:
        for key, value in (
            ("guaranteed", share.guaranteed),
            ("borrowingLimit", share.borrowing_limit),
            ("lendingLimit", share.lending_limit),
        ):
            if value is not None and value.nanos < 0:
                raise TraceError(f"{path}.{key}: must be greater than or equal to 0")
        lending, guaranteed = share.lending_limit, share.guaranteed
        if lending is not None and lending.nanos > (guaranteed.nanos if guaranteed else 0):
            raise TraceError(f"{path}.lendingLimit: must be less than or equal to guaranteed")
    preemption = sharing.preemption or SharingPreemption()
    for policy, chosen, allowed in (
        ("reclaimWithinCohort", preemption.reclaim_within_cohort, RECLAIM_POLICIES),
        ("withinTenant", preemption.within_tenant, WITHIN_TENANT_POLICIES),
    ):
        if chosen and chosen not in allowed:
            raise TraceError(
                f"{where}.preemption.{policy}: unsupported value {chosen!r} "
                f"(supported: {', '.join(allowed)})"
            )


def _workload(
    where: str, index: int, raw: Any, queues: dict[str, Queue], classes: set[str]
) -> TraceWorkload:
    if not isinstance(raw, dict):
        raise TraceError(f"{where}: a workload must be an object")
    unknown = sorted(set(raw) - WORKLOAD_KEYS)
    if unknown:
        raise TraceError(
            f"{where}: unknown key(s): {', '.join(unknown)} "
            f"(known: {', '.join(sorted(WORKLOAD_KEYS))})"
        )
    tenant = raw.get("tenant")
    if tenant not in queues:
        raise TraceError(f"{where}.tenant: no tenant {tenant!r} (tenants: {', '.join(queues)})")
    for key in ("arrival", "duration"):
        if key not in raw:
            raise TraceError(f"{where}.{key}: required, in seconds")
    devices = _devices(f"{where}.devices", raw.get("devices") or {}, classes)
    memory = _memory(f"{where}.gpuMemory", raw.get("gpuMemory"))
    if not devices and memory is None:
        raise TraceError(f"{where}: a pod must ask for 'devices', 'gpuMemory' or both")
    pods = raw.get("pods", 1)
    if isinstance(pods, bool) or not isinstance(pods, int) or pods < 1:
        raise TraceError(f"{where}.pods: must be a whole number >= 1, not {pods!r}")
    priority = raw.get("priority", queues[tenant].default_priority)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TraceError(f"{where}.priority: must be a whole number, not {priority!r}")
    return TraceWorkload(
        key=str(raw.get("name") or f"w{index:05d}"),
        tenant=tenant,
        arrival=_seconds(f"{where}.arrival", raw["arrival"]),
        pods=pods,
        devices=devices,
        gpu_memory=memory,
        duration=_seconds(f"{where}.duration", raw["duration"], positive=True),
        priority=priority,
    )


def _devices(where: str, raw: Any, classes: set[str]) -> tuple[tuple[str, int], ...]:
    if not isinstance(raw, dict):
        raise TraceError(f"{where}: a map of DeviceClass name to count per pod")
    found = []
    for name, count in sorted(raw.items()):
        if name not in classes:
            raise TraceError(
                f"{where}.{name}: no DeviceClass {name!r} in deviceClasses "
                f"(known: {', '.join(sorted(classes))})"
            )
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise TraceError(f"{where}.{name}: must be a whole number >= 1, not {count!r}")
        found.append((str(name), count))
    return tuple(found)


def _memory(where: str, raw: Any) -> int | None:
    if raw is None:
        return None
    try:
        quantity = Quantity.parse(str(raw))
    except ApiError as err:
        raise TraceError(f"{where}: {err}") from None
    if quantity.nanos <= 0:
        raise TraceError(f"{where}: must be more than 0")
    return -(-quantity.nanos // NANO)
