"""Plain data views of a snapshot for people: per pool, per tenant, the GPU tree, pending
claims, fair sharing. ``allot top`` prints them, the dashboard renders them, ``/allot/v1/capacity``
serves them as JSON; one module so all three show the same numbers. Pure.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Mapping

from allot.api.tenancy import TenantSpec
from allot.fairshare.books import show
from allot.fairshare.report import SharingSummary
from allot.ops.audit import HOST_TENANT
from allot.ops.capacity import NO_CLASS, ClaimInfo, DeviceKey, Snapshot, memory_text
from allot.ops.rules import Firing
from allot.registry.kinds.columns import human_duration
from allot.types import Obj, rfc3339


def pools(snapshot: Snapshot) -> list[Obj]:
    """Devices per node, pool and driver, from the slices' summaries and the allocations:
    free (each could be allocated now) and unavailable (unallocated, but its shared
    counters are used up or its pool is incomplete)."""
    rows: dict[tuple[str, str, str], Obj] = {}
    for summary in snapshot.summaries:
        if not summary.devices:
            continue
        first = summary.devices[0]
        row = rows.setdefault(
            (first.node, first.pool, first.driver),
            {"node": first.node, "pool": first.pool, "driver": first.driver,
             "devices": 0, "allocated": 0, "free": 0, "classes": set()},
        )  # fmt: skip
        row["devices"] += len(summary.devices)
        row["classes"].update(key[3] for key in summary.totals if key[3] != NO_CLASS)
    for key in snapshot.allocated:
        device = snapshot.devices.get(key)
        if device is not None and (device.node, device.pool, device.driver) in rows:
            rows[(device.node, device.pool, device.driver)]["allocated"] += 1
    result = []
    free = snapshot.availability().free
    for key in sorted(rows):
        row = rows[key]
        row["free"] = free[key]
        row["unavailable"] = row["devices"] - row["allocated"] - row["free"]
        row["classes"] = sorted(row["classes"])
        result.append(row)
    return result


def allocatable(snapshot: Snapshot) -> Obj:
    """What can still be allocated, fleet-wide: per class and per MIG profile, the devices,
    those allocated, those free (each could be allocated now on its own) and how many could
    be allocated one after the other (``allocatable``: free devices may exclude each
    other on a partitionable GPU); and the same per node."""
    classes: dict[str, Counter[str]] = defaultdict(Counter)
    nodes: dict[str, Obj] = defaultdict(lambda: {"classes": defaultdict(Counter),
                                                 "profiles": defaultdict(Counter)})  # fmt: skip
    for (node, _, _, device_class), counts in snapshot.device_rows().items():
        if device_class != NO_CLASS:
            classes[device_class].update(counts)
            nodes[node]["classes"][device_class].update(counts)
    for device_class in snapshot.classes:
        classes.setdefault(device_class, Counter())
    profiles = _profile_counts(snapshot)
    for (node, profile), counts in profiles.items():
        nodes[node]["profiles"][profile].update(counts)
    fleet_profiles: dict[str, Counter[str]] = defaultdict(Counter)
    for (_, profile), counts in profiles.items():
        fleet_profiles[profile].update(counts)
    return {
        "classes": _capacity_rows("class", classes),
        "profiles": _capacity_rows("profile", fleet_profiles),
        "nodes": {
            node: {"classes": _capacity_rows("class", entry["classes"]),
                   "profiles": _capacity_rows("profile", entry["profiles"])}
            for node, entry in sorted(nodes.items())
        },
    }  # fmt: skip


def _profile_counts(snapshot: Snapshot) -> dict[tuple[str, str], Counter[str]]:
    """(node, MIG profile) -> {total, allocated, free, allocatable}."""
    available = snapshot.availability()
    found: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for (node, _, _, profile), total in available.profile_total.items():
        found[(node, profile)]["total"] += total
    for key in snapshot.allocated:
        device = snapshot.devices.get(key)
        if device is not None and device.profile:
            found[(device.node, device.profile)]["allocated"] += 1
    for (node, _, _, profile), free in available.profile_free.items():
        found[(node, profile)]["free"] += free
    for (node, _, _, profile), count in available.profile_allocatable.items():
        found[(node, profile)]["allocatable"] += count
    return found


def _capacity_rows(name: str, counts: Mapping[str, Counter[str]]) -> list[Obj]:
    return [
        {name: key, "devices": c["total"], "allocated": c["allocated"], "free": c["free"],
         "unavailable": c["total"] - c["allocated"] - c["free"],
         "allocatable": c["allocatable"]}
        for key, c in sorted(counts.items(), key=lambda kv: _profile_order(kv[0]))
    ]  # fmt: skip


def _profile_order(name: str) -> tuple[int, str]:
    """MIG profiles by size (``1g.10gb`` before ``2g.20gb`` before ``7g.80gb``), other
    names alphabetically after them."""
    head = name.split("g.", 1)[0]
    return (int(head), name) if head.isdigit() else (1 << 30, name)


def tenants(snapshot: Snapshot, specs: Mapping[str, TenantSpec], quotas: list[Obj]) -> list[Obj]:
    memory = snapshot.tenant_memory()
    held = held_per_class(snapshot)
    pending: dict[str, int] = defaultdict(int)
    allocated: dict[str, int] = defaultdict(int)
    for claim in snapshot.claims:
        (allocated if claim.allocated else pending)[claim.tenant] += 1
    rows = []
    for name in sorted(specs):
        spec = specs[name]
        limit = spec.quota.gpu_memory if spec.quota else None
        rows.append(
            {
                "name": name,
                "pending": pending[name],
                "allocated": allocated[name],
                "gpuMemory": memory_text(memory.get(name, 0)),
                "gpuMemoryBytes": memory.get(name, 0),
                "gpuMemoryLimit": str(limit) if limit is not None else None,
                "quota": _quota_rows(name, quotas),
                "devices": held.get(name, []),
            }
        )
    return rows


def held_per_class(snapshot: Snapshot) -> dict[str, list[Obj]]:
    """Tenant (``host`` for host claims) -> per class its claims were allocated devices
    through: devices held and their GPU memory."""
    counts: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for claim in snapshot.claims:  # a device shared by capacity counts for each claim
        for key in claim.devices:
            device_class = claim.device_classes.get(key) or NO_CLASS
            entry = counts[claim.tenant or HOST_TENANT][device_class]
            entry["devices"] += 1
            entry["memory"] += claim.memory.get(key, 0)
    return {
        tenant: [
            {"class": name, "devices": c["devices"], "gpuMemoryBytes": c["memory"]}
            for name, c in sorted(classes.items())
        ]
        for tenant, classes in counts.items()
    }


def _quota_rows(tenant: str, quotas: list[Obj]) -> list[Obj]:
    rows = []
    for quota in quotas:
        if (quota["metadata"].get("labels") or {}).get("allot.dev/tenant") != tenant:
            continue
        status = quota.get("status") or {}
        for key, hard in sorted((status.get("hard") or {}).items()):
            rows.append(
                {"resource": key, "used": (status.get("used") or {}).get(key, "0"), "hard": hard}
            )
    return rows


def sharing(summary: SharingSummary) -> Obj:
    """Fair sharing as ``allot top`` and the dashboard show it: a row per tenant and
    resource (amounts as people read them, GPU memory in binary units), and each cohort's
    idle share."""
    rows = []
    for tenant, report in sorted(summary.tenants.items()):
        for resource, standing in report.resources.items():
            rows.append(
                {
                    "tenant": tenant,
                    "cohort": report.cohort or "",
                    "resource": resource,
                    **{part: show(resource, getattr(standing, part)) for part in _STANDING},
                    "admitted": report.admitted,
                    "waiting": report.waiting,
                    "preempted": summary.preempted.get(tenant, 0),
                }
            )
    cohorts = [
        {"cohort": cohort, "resource": resource, "idle": show(resource, idle)}
        for cohort, resources in sorted(summary.cohorts.items())
        for resource, idle in resources.items()
    ]
    return {"tenants": rows, "cohorts": cohorts}


_STANDING = ("guaranteed", "used", "borrowed", "lent")


def pending(snapshot: Snapshot, reasons: Mapping[tuple[str, str], str]) -> list[Obj]:
    rows = []
    for claim in sorted(snapshot.pending(), key=lambda c: c.created or snapshot.now):
        age = (snapshot.now - claim.created).total_seconds() if claim.created else 0.0
        rows.append(
            {
                "tenant": claim.tenant,
                "namespace": claim.tenant_namespace or claim.namespace,
                "claim": claim.tenant_claim,
                "hostClaim": f"{claim.namespace}/{claim.name}",
                "classes": list(claim.classes),
                "ageSeconds": int(age),
                "age": human_duration(age),
                "reason": reasons.get((claim.namespace, claim.name), ""),
            }
        )
    return rows


def alerts(firing: list[Firing]) -> list[Obj]:
    return [
        {
            "name": f.name,
            "rule": f.rule,
            "severity": f.severity,
            "tenant": f.tenant,
            "subject": "/".join(
                p for p in (f.subject_kind, f.subject_namespace, f.subject_name) if p
            ),
            "message": f.message,
        }
        for f in firing
    ]


def gpu_tree(snapshot: Snapshot, node: str | None = None) -> list[Obj]:
    """Nodes (all, or ``node``) -> GPUs -> devices, each with the tenant holding it
    (``None`` when free), the GPU's model and memory, and its state: ``held``, ``free``,
    ``partitioned`` (MIG devices of it allocated) or ``unavailable`` (unallocated, but its
    shared counters are used up or its pool is incomplete). Partitionable devices (they
    consume counters) are possibilities, not slices: only the allocated ones are listed,
    with the GPU's used share of its memory slices."""
    memory = _memory_slices(snapshot)
    free = snapshot.availability().devices
    nodes: dict[str, dict[str, Obj]] = defaultdict(dict)
    for key, device in snapshot.devices.items():
        if node is not None and device.node != node:
            continue
        holder = _holder(snapshot, key)
        if device.parent and device.consumes and holder is None:
            continue  # a MIG layout that is possible, not created
        gpu_name = device.parent or device.name
        gpus = nodes[device.node]
        gpu = gpus.get(gpu_name)
        if gpu is None:
            gpu = gpus[gpu_name] = {
                "name": gpu_name, "pool": device.pool, "driver": device.driver,
                "tenant": None, "whole": False, "slices": [], "product": device.product,
                "memory": None, "state": "partitioned",
                "memorySlices": memory.get((device.driver, device.pool, f"{gpu_name}-counter-set")),
            }  # fmt: skip
        if not device.parent:
            gpu["whole"] = True
            gpu["tenant"] = holder
            gpu["claim"] = _claim_name(snapshot, key)
            gpu["hostClaim"] = _host_claim(snapshot, key)
            gpu["memory"] = device.memory or None
            gpu["state"] = "held" if holder else "free" if key in free else "unavailable"
        else:
            gpu["slices"].append(
                {"name": device.name, "profile": device.profile, "tenant": holder,
                 "claim": _claim_name(snapshot, key), "hostClaim": _host_claim(snapshot, key),
                 "memory": device.memory, "state": "held" if holder else "free"}
            )  # fmt: skip
    for gpus in nodes.values():
        for gpu in gpus.values():
            gpu["slices"].sort(key=lambda s: s["name"])
            if gpu["state"] == "unavailable" and any(s["tenant"] for s in gpu["slices"]):
                gpu["state"] = "partitioned"  # its MIG devices hold the counters
    return [
        {"node": name, "gpus": [gpus[gpu] for gpu in sorted(gpus)]}
        for name, gpus in sorted(nodes.items())
    ]


def _host_claim(snapshot: Snapshot, key: DeviceKey) -> str | None:
    claim = snapshot.allocated.get(key)
    return f"{claim.namespace}/{claim.name}" if claim else None


def _holder(snapshot: Snapshot, key: DeviceKey) -> str | None:
    claim = snapshot.allocated.get(key)
    if claim is None:
        return None
    return claim.tenant or HOST_TENANT


def _claim_name(snapshot: Snapshot, key: DeviceKey) -> str | None:
    claim = snapshot.allocated.get(key)
    return f"{claim.tenant_namespace or claim.namespace}/{claim.tenant_claim}" if claim else None


def _memory_slices(snapshot: Snapshot) -> dict[tuple[str, str, str], Obj]:
    """(driver, pool, counter set) -> memory slices used and total."""
    found: dict[tuple[str, str, str], Obj] = {}
    for (driver, pool, counter_set, counter), value in snapshot.counters_total.items():
        if counter.startswith("memory-slice-"):
            entry = found.setdefault((driver, pool, counter_set), {"used": 0, "total": 0})
            entry["total"] += value
            entry["used"] += snapshot.counters_used.get((driver, pool, counter_set, counter), 0)
    return found


def stamp(moment: dt.datetime) -> str:
    return rfc3339(moment)


# ------------------------------------------------------------ drill-down pages
def node_view(snapshot: Snapshot, node: str, node_object: Obj | None) -> Obj | None:
    """One node: its GPUs, what it can still allocate per class and MIG profile, its pools,
    the claims holding its devices, and its labels and taints; None for a node that
    neither exists nor publishes devices."""
    tree = gpu_tree(snapshot, node)
    if not tree and node_object is None:
        return None
    capacity = allocatable(snapshot)["nodes"].get(node) or {"classes": [], "profiles": []}
    holding: dict[tuple[str, str], ClaimInfo] = {}
    for key, claim in snapshot.allocated.items():
        device = snapshot.devices.get(key)
        if device is not None and device.node == node:
            holding[(claim.namespace, claim.name)] = claim
    spec = (node_object or {}).get("spec") or {}
    return {
        "node": node,
        "gpus": tree[0]["gpus"] if tree else [],
        "capacity": capacity,
        "pools": [row for row in pools(snapshot) if row["node"] == node],
        "claims": [claim_row(snapshot, c) for c in _by_age(list(holding.values()), snapshot)],
        "labels": dict(((node_object or {}).get("metadata") or {}).get("labels") or {}),
        "taints": [
            f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
            for t in spec.get("taints") or []
        ],
    }


def tenant_view(snapshot: Snapshot, tenant: str) -> Obj:
    """A tenant's claims (``host``: the host's own), newest last, and its devices per class."""
    owner = "" if tenant == HOST_TENANT else tenant
    claims = [c for c in snapshot.claims if c.tenant == owner]
    return {
        "tenant": tenant,
        "claims": [claim_row(snapshot, c) for c in _by_age(claims, snapshot)],
        "devices": held_per_class(snapshot).get(tenant, []),
    }


def claim_row(snapshot: Snapshot, claim: ClaimInfo) -> Obj:
    """A claim as the pages list it: names in its tenant and on the host, state, age."""
    age = (snapshot.now - claim.created).total_seconds() if claim.created else None
    return {
        "tenant": claim.tenant or HOST_TENANT,
        "claim": f"{claim.tenant_namespace or claim.namespace}/{claim.tenant_claim}",
        "hostClaim": f"{claim.namespace}/{claim.name}",
        "classes": list(claim.classes),
        "state": "allocated" if claim.allocated else "pending",
        "devices": len(claim.devices),
        "age": human_duration(age) if age is not None else "<unknown>",
    }


def claim_view(snapshot: Snapshot, namespace: str, name: str) -> Obj | None:
    """One claim (by its host namespace and name): its row, the devices it holds (node,
    model, memory, MIG profile, the class they were allocated through), the pods it is
    reserved for, and what its classes can still allocate fleet-wide; None if unknown."""
    claim = next((c for c in snapshot.claims if c.namespace == namespace and c.name == name), None)
    if claim is None:
        return None
    devices = []
    for key in claim.devices:
        device = snapshot.devices.get(key)
        devices.append(
            {"driver": key[0], "pool": key[1], "device": key[2],
             "class": claim.device_classes.get(key, ""),
             "node": device.node if device else "", "product": device.product if device else "",
             "profile": device.profile if device else "",
             "memory": claim.memory.get(key, 0)}
        )  # fmt: skip
    fleet = allocatable(snapshot)
    classes = {row["class"]: row for row in fleet["classes"]}
    return {
        **claim_row(snapshot, claim),
        "tenantNamespace": claim.tenant_namespace,
        "reservedFor": list(claim.consumers),
        "allocatedDevices": devices,
        "capacity": [classes[c] for c in claim.classes if c in classes],
        "profiles": fleet["profiles"],
    }


def _by_age(claims: list[ClaimInfo], snapshot: Snapshot) -> list[ClaimInfo]:
    return sorted(claims, key=lambda c: (c.created or snapshot.now, c.namespace, c.name))
