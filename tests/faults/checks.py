"""What must hold after a crash: read over HTTPS and from the audit file, judged per rule.

``Snapshot.read`` lists claims, pods and slices of every cluster and the audit log's open
allocations. The rules return human-readable problems (empty: it holds):
``lost_writes`` (an acknowledged create missing, an acknowledged delete undone),
``double_allocations`` (a device in two claims, or a pool's shared counters overdrawn by
whole GPUs and MIG slices together), ``quota_excess`` (ResourceQuota counts and a tenant's
GPU-memory quota) are safety rules, true at every moment; ``divergences`` (twins one to one
both ways, followed deletions, no allocation or audit entry of a deleted claim, the audit
log equal to the allocations) hold once the platform has settled. Used by
``test_crash_rounds``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from allot.api.quantity import Quantity
from allot.ops.audit import AuditLog
from allot.tenancy import names
from tests.faults.load import Ledger, ObjectKey

Obj = dict[str, Any]
DeviceKey = tuple[str, str, str]  # driver, pool, device
LISTS = {
    "ResourceClaim": "/apis/resource.k8s.io/v1/resourceclaims",
    "Pod": "/api/v1/pods",
}


@dataclass
class Snapshot:
    objects: dict[ObjectKey, Obj]
    slices: list[Obj]
    audit_open: set[tuple[str, str, str, str]]

    @classmethod
    def read(cls, clients: dict[str, httpx.Client], data_dir: Path) -> Snapshot:
        objects: dict[ObjectKey, Obj] = {}
        for cluster, client in clients.items():
            for kind, path in LISTS.items():
                response = client.get(path)
                response.raise_for_status()
                for obj in response.json()["items"]:
                    metadata = obj["metadata"]
                    objects[(cluster, kind, metadata["namespace"], metadata["name"])] = obj
        response = clients["host"].get("/apis/resource.k8s.io/v1/resourceslices")
        response.raise_for_status()
        audit = AuditLog(data_dir / "audit.db", read_only=True)
        try:
            audit_open = set(audit.open_allocations())
        finally:
            audit.close()
        return cls(objects, response.json()["items"], audit_open)

    def host_claims(self, namespace: str | None = None) -> list[Obj]:
        return [
            obj
            for (cluster, kind, ns, _), obj in self.objects.items()
            if cluster == "host" and kind == "ResourceClaim" and namespace in (None, ns)
        ]

    def allocations(self) -> dict[tuple[str, DeviceKey], str]:
        """(claim uid, device) -> the host claim's namespace/name, for allocated claims."""
        found = {}
        for obj in self.host_claims():
            allocation = (obj.get("status") or {}).get("allocation") or {}
            for result in (allocation.get("devices") or {}).get("results") or []:
                device = (result["driver"], result["pool"], result["device"])
                metadata = obj["metadata"]
                found[(metadata["uid"], device)] = f"{metadata['namespace']}/{metadata['name']}"
        return found


def lost_writes(ledger: Ledger, snapshot: Snapshot) -> list[str]:
    """Acknowledged creates that are missing; acknowledged deletes that came back."""
    problems = []
    for key, record in ledger.records.items():
        found = snapshot.objects.get(key)
        same = found is not None and found["metadata"]["uid"] == record.uid
        if record.state == "present" and not same:
            problems.append(f"acknowledged create lost: {key}")
        terminating = same and found is not None and found["metadata"].get("deletionTimestamp")
        if record.state == "deleted" and same and not terminating:
            problems.append(f"acknowledged delete undone: {key}")
    return problems


def double_allocations(snapshot: Snapshot) -> list[str]:
    """A device held by two claims, or shared counters consumed past their capacity."""
    holders: dict[DeviceKey, list[str]] = defaultdict(list)
    for (_, device), claim in sorted(snapshot.allocations().items()):
        holders[device].append(claim)
    problems = [f"{device} allocated to {who}" for device, who in holders.items() if len(who) > 1]
    capacity, consumes = _counters(snapshot.slices)
    used: dict[tuple[str, str, str, str], Quantity] = {}
    for driver, pool, name in holders:
        for counter_set, counters in consumes.get((driver, pool, name), {}).items():
            for counter, amount in counters.items():
                key = (driver, pool, counter_set, counter)
                used[key] = used[key].add(amount) if key in used else amount
    for key, amount in sorted(used.items()):
        limit = capacity.get(key)
        if limit is None or amount.compare(limit) > 0:
            problems.append(f"counter {key} overdrawn: {amount} of {limit}")
    return problems


def _counters(
    slices: list[Obj],
) -> tuple[
    dict[tuple[str, str, str, str], Quantity], dict[DeviceKey, dict[str, dict[str, Quantity]]]
]:
    capacity = {}
    consumes: dict[DeviceKey, dict[str, dict[str, Quantity]]] = {}
    for resource_slice in slices:
        spec = resource_slice["spec"]
        driver, pool = spec["driver"], spec["pool"]["name"]
        for counter_set in spec.get("sharedCounters") or []:
            for counter, value in counter_set["counters"].items():
                key = (driver, pool, counter_set["name"], counter)
                capacity[key] = Quantity.parse(value["value"])
        for device in spec.get("devices") or []:
            consumes[(driver, pool, device["name"])] = {
                entry["counterSet"]: {
                    k: Quantity.parse(v["value"]) for k, v in entry["counters"].items()
                }
                for entry in device.get("consumesCounters") or []
            }
    return capacity, consumes


def quota_excess(snapshot: Snapshot, world: Obj) -> list[str]:
    """ResourceQuota claim counts (host and tenants, both sides) and GPU-memory quotas."""
    problems = []
    limits = {"default": world["hostQuota"]}
    limits |= {f"tenant-{t['name']}": t.get("quota") or {} for t in world["tenants"]}
    for namespace, hard in limits.items():
        limit = int(hard.get("count/resourceclaims.resource.k8s.io", 10**9))
        held = len(snapshot.host_claims(namespace))
        if held > limit:
            problems.append(f"{held} claims in host namespace {namespace} (quota {limit})")
    for tenant in world["tenants"]:
        hard = tenant.get("quota") or {}
        limit = int(hard.get("count/resourceclaims.resource.k8s.io", 10**9))
        held = sum(
            1 for k in snapshot.objects if k[0] == tenant["name"] and k[1] == "ResourceClaim"
        )
        if held > limit:
            problems.append(f"{held} claims in tenant {tenant['name']} (quota {limit})")
        if tenant.get("gpuMemory"):
            problems += _memory_excess(
                snapshot, tenant["name"], Quantity.parse(tenant["gpuMemory"])
            )
    return problems


def _memory_excess(snapshot: Snapshot, tenant: str, limit: Quantity) -> list[str]:
    memory = {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): Quantity.parse(
            d["capacity"]["memory"]["value"]
        )
        for s in snapshot.slices
        for d in s["spec"].get("devices") or []
    }
    total = Quantity.parse("0")
    for (_, device), claim in snapshot.allocations().items():
        if claim.startswith(f"{names.host_namespace(tenant)}/"):
            total = total.add(memory[device])
    if total.compare(limit) > 0:
        return [f"tenant {tenant} holds {total} of GPU memory (quota {limit})"]
    return []


def divergences(ledger: Ledger, snapshot: Snapshot, tenants: list[str]) -> list[str]:
    """What a settled platform must agree on: twins, followed deletions, audit."""
    problems = []
    for tenant in tenants:
        problems += _twin_problems(snapshot, tenant)
    for key, record in ledger.records.items():
        found = snapshot.objects.get(key)
        gone = record.state in ("followed", "deleted")
        if (
            gone
            and found is not None
            and (found["metadata"]["uid"] == record.uid or key[0] == "host")
        ):
            problems.append(f"{record.state} object still there: {key}")
    deleted = {r.uid for k, r in ledger.records.items() if r.state == "deleted" and r.uid}
    allocated = snapshot.allocations()
    for uid, device in allocated:
        claim = next(c for c in snapshot.host_claims() if c["metadata"]["uid"] == uid)
        origin = (claim["metadata"].get("annotations") or {}).get(names.UID_ANNOTATION)
        if uid in deleted or origin in deleted:
            problems.append(f"deleted claim {allocated[(uid, device)]} still holds {device}")
    if set(allocated) != {(uid, (d, p, n)) for uid, d, p, n in snapshot.audit_open}:
        problems.append(
            f"audit log disagrees: {len(snapshot.audit_open)} open entries, "
            f"{len(allocated)} allocated devices"
        )
    return problems


def _twin_problems(snapshot: Snapshot, tenant: str) -> list[str]:
    problems = []
    host_namespace = names.host_namespace(tenant)
    for kind in ("ResourceClaim", "Pod"):
        mine = {k[2:]: o for k, o in snapshot.objects.items() if k[0] == tenant and k[1] == kind}
        twins = {
            k[3]: o for k, o in snapshot.objects.items() if k[:3] == ("host", kind, host_namespace)
        }
        for (namespace, name), obj in mine.items():
            twin = twins.pop(names.host_name(name, namespace), None)
            uid = (twin or {"metadata": {}})["metadata"].get("annotations", {})
            if twin is None or uid.get(names.UID_ANNOTATION) != obj["metadata"]["uid"]:
                problems.append(f"{tenant} {kind} {namespace}/{name} has no host twin")
        problems += [f"host twin {host_namespace}/{n} has no {tenant} object" for n in twins]
    return problems
