"""``allot doctor``: what is wrong with a cluster's DRA state, and why.

The input is a cluster's objects, read live or from a dump (``kubectl get deviceclasses,
resourceslices,resourceclaims,resourceclaimtemplates,pods,namespaces -A -o yaml``).
``resource.k8s.io/v1beta2`` objects are read as v1 (same shape); ``v1beta1`` requests have
their fields moved under ``exactly`` and v1beta1 slices' ``basic`` devices are unwrapped;
anything else is reported as skipped, never silently ignored. The report has five parts:

* every pending claim, placed one by one with allot's allocator on the cluster's slices
  (what kube-scheduler would do for a pod using it), and for those that do not fit,
  ``allot explain``'s per-node, per-request reasons on the nodes that matter first (those
  that can still allocate the most of the claim's classes), every other node listed in
  groups of nodes alike in what they can still allocate of those classes;
* the catalogue lint (classes that match nothing, whole-GPU classes that take MIG
  slices, classes shared between tenants);
* allocations the classes no longer select: an allocated device that the request's class
  (as it is now) or the request's own selectors would not choose again, e.g. a tenant
  holding a MIG slice through a "whole GPU" class fixed after the allocation
  (:mod:`allot.lint.allocations`);
* entitlement violations: claims and templates in a tenant's namespace (label
  ``allot.dev/tenant``) naming a class outside its entitlement (from its params ConfigMap
  or Tenant object), including those created before a policy existed or before the class
  was revoked; an allocated claim among them (``allocated: true``) still holds devices
  through the revoked class until its pods end;
* fair sharing: guarantees of a cohort past what the published devices hold (from the
  Tenants, and from Kueue's ClusterQueues that no Tenant renders), and, where Kueue's
  ClusterQueues are present (``kueue.x-k8s.io`` v1beta1 or v1beta2), Tenants whose
  ClusterQueue is missing or differs from what ``allot render`` makes of them, and
  allot-managed ClusterQueues no sharing Tenant explains;
* capacity per class, per MIG profile and per pool: devices, allocated, free (each could
  be allocated now), unavailable (shared counters used up, or the pool incomplete) and how
  many could still be allocated one after the other (:mod:`allot.dra.allocatable`).

Pure: objects in, a :class:`Report` out; the CLI reads the cluster or the file.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from allot.api import claims as claims_api
from allot.api import resource_v1 as resourceapi
from allot.api.features import KUBERNETES_1_36
from allot.api.kinds import decode
from allot.api.meta import selector_matches
from allot.api.tenancy import Tenant
from allot.cel import SelectorCompiler
from allot.cluster import kueue
from allot.dra import DraIndex
from allot.lint.allocations import stale_allocations
from allot.lint.catalogue import CatalogueLinter
from allot.lint.sharing import overcommitments
from allot.ops import views
from allot.ops.capacity import CapacityView, Snapshot
from allot.registry.resources import by_kind
from allot.simulation.explain import explain_step, render_text
from allot.simulation.runner import Simulation
from allot.simulation.scenario import Scenario, Step
from allot.store import Store
from allot.tenancy.names import PLATFORM_NAMESPACE, TENANT_LABEL
from allot.types import Obj

DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")
READ_KINDS = (
    *DRA_KINDS,
    "Pod",
    "Namespace",
    "Node",
    "ConfigMap",
    "Tenant",
    "ClusterQueue",
    "Cohort",
)
KUEUE_VERSIONS = tuple(kueue.api_version(v) for v in kueue.VERSIONS)
EXPLAINED_NODES = 3  # explained device by device; the others are grouped by capacity
NAMED_PER_GROUP = 10  # node names printed per group of alike nodes (all in the JSON)
V1BETA1_REQUEST_FIELDS = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
)


@dataclass
class Report:
    summary: Obj
    pending: list[Obj] = field(default_factory=list)
    lint: list[Obj] = field(default_factory=list)
    stale: list[Obj] = field(default_factory=list)
    violations: list[Obj] = field(default_factory=list)
    sharing: list[Obj] = field(default_factory=list)
    capacity: Obj = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def problems(self) -> int:
        incomplete = [p for p in self.capacity.get("pools", []) if not p.get("complete", True)]
        found = self.pending + self.lint + self.stale + self.violations + self.sharing
        return len(found) + len(incomplete)

    def to_json(self) -> Obj:
        return {
            "summary": self.summary,
            "problems": self.problems,
            "pendingClaims": self.pending,
            "lint": self.lint,
            "staleAllocations": self.stale,
            "entitlementViolations": self.violations,
            "fairSharing": self.sharing,
            "capacity": self.capacity,
            "skipped": self.skipped,
        }


# -------------------------------------------------------------------- input
def normalise(documents: list[Any]) -> tuple[list[Obj], list[str]]:
    """The objects of a dump (Lists flattened, beta DRA versions converted) and what was
    skipped, with why."""
    objects: list[Obj] = []
    skipped: list[str] = []
    for document in documents:
        if not isinstance(document, dict):
            continue
        if document.get("kind", "").endswith("List") and "items" in document:
            inner, more = normalise(document.get("items") or [])
            objects += inner
            skipped += more
            continue
        converted = _converted(document)
        if converted is None:
            skipped.append(
                f"{document.get('apiVersion')} {document.get('kind')} "
                f"{(document.get('metadata') or {}).get('name')}: not a kind doctor reads"
            )
            continue
        objects.append(converted)
    return objects, skipped


def _converted(document: Obj) -> Obj | None:
    kind, version = document.get("kind"), str(document.get("apiVersion") or "")
    if kind not in READ_KINDS:
        return None
    if kind in ("ClusterQueue", "Cohort"):
        return _kueue_v1beta2(document) if version in KUEUE_VERSIONS else None
    if version in ("resource.k8s.io/v1beta2", "resource.k8s.io/v1"):
        return {**document, "apiVersion": "resource.k8s.io/v1"}
    if version == "resource.k8s.io/v1beta1":
        return _from_v1beta1(document)
    return document


def _kueue_v1beta2(document: Obj) -> Obj:
    """v1beta1's ``cohort`` is v1beta2's ``cohortName``; the rest allot reads is alike.
    Compared with what ``allot render`` makes in v1beta2, whichever version was applied."""
    spec = dict(document.get("spec") or {})
    cohort = kueue.COHORT_FIELD[kueue.V1BETA1]
    if cohort in spec:
        spec[kueue.COHORT_FIELD[kueue.V1BETA2]] = spec.pop(cohort)
    return {**document, "apiVersion": kueue.api_version(kueue.V1BETA2), "spec": spec}


def _from_v1beta1(document: Obj) -> Obj:
    converted: Obj = {**document, "apiVersion": "resource.k8s.io/v1"}
    if document["kind"] == "ResourceSlice":
        spec = dict(document.get("spec") or {})
        spec["devices"] = [
            {"name": d.get("name"), **(d.get("basic") or {})} for d in spec.get("devices") or []
        ]
        converted["spec"] = spec
    elif document["kind"] in ("ResourceClaim", "ResourceClaimTemplate"):
        converted["spec"] = _requests_v1(document["kind"], document.get("spec") or {})
    return converted


def _requests_v1(kind: str, spec: Obj) -> Obj:
    claim_spec = spec.get("spec") or {} if kind == "ResourceClaimTemplate" else spec
    devices = dict(claim_spec.get("devices") or {})
    requests = []
    for request in devices.get("requests") or []:
        if "firstAvailable" in request:
            requests.append(request)
            continue
        exact = {k: v for k, v in request.items() if k in V1BETA1_REQUEST_FIELDS}
        requests.append({"name": request.get("name"), "exactly": exact})
    devices["requests"] = requests
    fixed = {**claim_spec, "devices": devices}
    return {**spec, "spec": fixed} if kind == "ResourceClaimTemplate" else fixed


# ---------------------------------------------------------------- analysis
def diagnose(objects: list[Obj], now: dt.datetime) -> Report:
    by_kind_: dict[str, list[Obj]] = {k: [] for k in READ_KINDS}
    for obj in objects:
        by_kind_[obj["kind"]].append(obj)
    models = _models(by_kind_)
    report = Report(
        summary={
            "nodes": len(  # Nodes (a dump may hold none) and nodes that publish slices
                {n.metadata.name for n in models["nodes"]}
                | {s.spec.node_name for s in models["slices"] if s.spec.node_name}
            ),
            "slices": len(models["slices"]),
            "devices": sum(len(s.spec.devices or []) for s in models["slices"]),
            "classes": len(models["classes"]),
            "claims": len(models["claims"]),
        }
    )
    compiler = SelectorCompiler()  # one for the lint, the stale check and the capacity
    with tempfile.TemporaryDirectory() as scratch:
        store, slice_names = _scratch_store(Path(scratch), objects)
        # one DRA index for the lint and the capacity: each device's view built, and each
        # class evaluated on it, once
        index = DraIndex(compiler=compiler)
        index.refresh(
            slices=_listing(store, "ResourceSlice"), classes=_listing(store, "DeviceClass")
        )
        slices = [index.slices[name].model for name in slice_names]  # in the dump's order
        linter = CatalogueLinter(models["classes"], slices, compiler=compiler, index=index)
        report.lint = [f.to_json() for f in linter.lint()]
        report.stale = [
            s.to_json()
            for s in stale_allocations(
                models["claims"],
                models["classes"],
                {
                    (entry.driver, entry.pool, device): view
                    for entry in index.slices.values()
                    for device, view in entry.views.items()
                },
                compiler=compiler,
            )
        ]
        report.violations = _violations(by_kind_)
        report.sharing = _sharing(by_kind_, models, linter)
        snapshot = CapacityView(store, index=index).snapshot(now)
        report.capacity = _capacity(snapshot)
        report.pending = _pending(models, views.allocatable(snapshot)["nodes"])
        store.close()
    report.summary["pendingClaims"] = len(report.pending)
    return report


def _models(objects: dict[str, list[Obj]]) -> dict[str, Any]:
    """Strictly decoded models (a malformed object fails loudly, with its field)."""
    return {
        "classes": [decode(o, check_size=False) for o in objects["DeviceClass"]],
        "slices": [decode(o, check_size=False) for o in objects["ResourceSlice"]],
        "claims": [decode(o, check_size=False) for o in objects["ResourceClaim"]],
        "nodes": [decode(o, check_size=False) for o in objects["Node"]],
    }


def _pending(models: dict[str, Any], capacity: Obj) -> list[Obj]:
    """Each pending claim placed on its own; one that fits nowhere is explained on the nodes
    that matter first (those that can still allocate the most of its classes, ``capacity``
    per node as :func:`allot.ops.views.allocatable` gives it), and every other node is
    accounted for, grouped by what it can still allocate of those classes."""
    claims: list[resourceapi.ResourceClaim] = models["claims"]
    pending = [c for c in claims if c.status is None or c.status.allocation is None]
    if not pending:
        return []
    scenario = Scenario(
        KUBERNETES_1_36, models["classes"], models["slices"], claims, models["nodes"]
    )
    simulation = Simulation(scenario)
    found = []
    for index, claim in enumerate(sorted(pending, key=_label)):
        label = _label(claim)
        result = simulation.run_step(Step(index, label, [label]))
        entry: Obj = {"claim": label, "fits": result.success}
        if result.success:
            entry["reason"] = (
                f"fits on node {result.node} now: DRA allocates a claim when a pod that uses it "
                "is scheduled (no pod uses it, or its pod waits for something else)"
            )
        else:
            classes = sorted(claims_api.claim_classes(claim.to_wire()))
            ranked = _ranked_nodes(sorted(result.node_errors), classes, capacity)
            explanations = explain_step(
                simulation, result, limit=EXPLAINED_NODES, order=[node for node, _ in ranked]
            )
            entry["reason"] = result.error or "does not fit"
            entry["explanation"] = render_text(explanations)
            others = _node_groups(ranked[EXPLAINED_NODES:])
            if others:
                entry["otherNodes"] = others
                entry["explanation"] += "\n" + _other_nodes_text(others)
        found.append(entry)
    return found


def _ranked_nodes(
    nodes: list[str], classes: list[str], capacity: Obj
) -> list[tuple[str, list[Obj]]]:
    """The nodes with their capacity rows for ``classes``: those that can still allocate the
    most of them first, then those with the most free, then the most devices, then by name."""
    ranked = []
    for node in nodes:
        rows = {r["class"]: r for r in (capacity.get(node) or {}).get("classes", [])}
        empty = {"devices": 0, "allocated": 0, "free": 0, "unavailable": 0, "allocatable": 0}
        ranked.append((node, [{"class": c, **rows.get(c, empty)} for c in classes]))

    def weight(item: tuple[str, list[Obj]]) -> tuple[int, int, int, str]:
        rows = item[1]
        return (
            -sum(r["allocatable"] for r in rows),
            -sum(r["free"] for r in rows),
            -sum(r["devices"] for r in rows),
            item[0],
        )

    return sorted(ranked, key=weight)


def _node_groups(ranked: list[tuple[str, list[Obj]]]) -> list[Obj]:
    """Nodes with the same capacity for the claim's classes, in the order of ``ranked``."""
    groups: dict[str, Obj] = {}
    for node, rows in ranked:
        key = repr(rows)
        groups.setdefault(key, {"nodes": [], "capacity": rows})["nodes"].append(node)
    return list(groups.values())


def _other_nodes_text(groups: list[Obj]) -> str:
    lines = ["other nodes, by what they can still allocate of the claim's classes:"]
    for group in groups:
        nodes = group["nodes"]
        named = ", ".join(nodes[:NAMED_PER_GROUP])
        if len(nodes) > NAMED_PER_GROUP:
            named += f" and {len(nodes) - NAMED_PER_GROUP} more"
        rows = "; ".join(
            f"{r['class']}: {_counts(r)}" if r["devices"] else f"{r['class']}: no device"
            for r in group["capacity"]
        )
        lines.append(f"{named} ({len(nodes)} node(s)): {rows or 'no class requested'}")
    return "\n".join(lines)


def _label(claim: resourceapi.ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def _violations(objects: dict[str, list[Obj]]) -> list[Obj]:
    entitled = _entitlements(objects)
    tenants = {
        n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(TENANT_LABEL)
        for n in objects["Namespace"]
    }
    found = []
    for kind in ("ResourceClaim", "ResourceClaimTemplate"):
        for obj in objects[kind]:
            namespace = obj["metadata"].get("namespace", "")
            tenant = tenants.get(namespace)
            if not tenant:
                continue
            allowed = entitled.get(tenant)
            for device_class in sorted(_classes_named(kind, obj)):
                if allowed is None or device_class not in allowed:
                    found.append(
                        {
                            "tenant": tenant,
                            "kind": kind,
                            "object": f"{namespace}/{obj['metadata']['name']}",
                            "deviceClass": device_class,
                            "entitled": sorted(allowed or []),
                            "allocated": bool((obj.get("status") or {}).get("allocation")),
                        }
                    )
    return found


def _entitlements(objects: dict[str, list[Obj]]) -> dict[str, set[str]]:
    """Tenant -> entitled classes: the params ConfigMaps, else the Tenant selectors."""
    found: dict[str, set[str]] = {}
    for config in objects["ConfigMap"]:
        metadata = config["metadata"]
        tenant = (metadata.get("labels") or {}).get(TENANT_LABEL)
        if metadata.get("namespace") == PLATFORM_NAMESPACE and tenant:
            found[tenant] = set(str((config.get("data") or {}).get("deviceClasses", "")).split())
    for tenant in objects["Tenant"]:
        name = tenant["metadata"]["name"]
        if name in found:
            continue
        spec = tenant.get("spec") or {}
        selector = spec.get("deviceClassSelector") or (
            ((spec.get("sync") or {}).get("fromHost") or {}).get("deviceClasses") or {}
        ).get("selector")
        found[name] = {
            c["metadata"]["name"]
            for c in objects["DeviceClass"]
            if selector_matches(selector, c["metadata"].get("labels"))
        }
    return found


def _sharing(objects: dict[str, list[Obj]], models: dict[str, Any], linter: Any) -> list[Obj]:
    tenants = [Tenant.model_validate(t) for t in objects["Tenant"]]
    sharing = {t.metadata.name or "": t for t in tenants if t.spec.sharing is not None}
    queues = {q["metadata"]["name"]: q for q in objects["ClusterQueue"]}
    unexplained = [q for name, q in sorted(queues.items()) if name not in sharing]
    found = [
        {"problem": "overcommitted", "cohort": o.cohort, "resource": o.resource,
         "message": o.message()}
        for o in overcommitments(
            list(sharing.values()) + [_as_tenant(q) for q in unexplained], linter,
            models["classes"],
        )
    ]  # fmt: skip
    if not queues:
        return found  # Kueue absent, or nothing of it in the dump
    for name, tenant in sorted(sharing.items()):
        covered = kueue.cohort_classes(tenant, list(sharing.values()))
        found += _queue_problems(name, kueue.cluster_queue(tenant, covered), queues.get(name))
    for queue in unexplained:
        labels = queue["metadata"].get("labels") or {}
        if labels.get("app.kubernetes.io/managed-by") == "allot":
            name = queue["metadata"]["name"]
            message = (
                f"ClusterQueue {name} is managed by allot but no fair-sharing Tenant has that name"
            )
            found.append({"problem": "clusterQueueWithoutTenant", "message": message})
    return found


def _queue_problems(name: str, wanted: Obj, live: Obj | None) -> list[Obj]:
    if live is None:
        message = f"Tenant {name} shares devices but Kueue has no ClusterQueue {name} (allot apply)"
        return [{"problem": "clusterQueueMissing", "message": message}]
    spec = live.get("spec") or {}
    fields = [k for k, v in wanted["spec"].items() if _projected(spec.get(k), v) != v]
    if not fields:
        return []
    message = (
        f"ClusterQueue {name} differs from Tenant {name} in spec.{', spec.'.join(fields)} "
        "(allot apply makes them match)"
    )
    return [{"problem": "clusterQueueDiffers", "message": message}]


def _projected(live: Any, wanted: Any) -> Any:
    """What of ``live`` ``wanted`` speaks about (Kueue's defaults and status left out)."""
    if isinstance(live, dict) and isinstance(wanted, dict):
        return {k: _projected(live[k], v) for k, v in wanted.items() if k in live}
    if isinstance(live, list) and isinstance(wanted, list) and len(live) == len(wanted):
        return [_projected(a, b) for a, b in zip(live, wanted, strict=True)]
    return live


def _as_tenant(queue: Obj) -> Tenant:
    """A ClusterQueue's allot-mapped quotas (``allot.dev/<class>``) as a sharing Tenant."""
    spec = queue.get("spec") or {}
    shares = [
        {
            "name": r["name"].removeprefix(kueue.RESOURCE_PREFIX),
            "guaranteed": r.get("nominalQuota", "0"),
        }
        for group in spec.get("resourceGroups") or []
        for flavor in group.get("flavors") or []
        for r in flavor.get("resources") or []
        if str(r.get("name", "")).startswith(kueue.RESOURCE_PREFIX)
    ]
    sharing = {"cohort": spec.get(kueue.COHORT_FIELD[kueue.V1BETA2]), "deviceClasses": shares}
    return Tenant.model_validate({"metadata": {"name": queue["metadata"]["name"]},
                                  "spec": {"sharing": sharing}})  # fmt: skip


def _classes_named(kind: str, obj: Obj) -> set[str]:
    spec = obj.get("spec") or {}
    if kind == "ResourceClaimTemplate":
        spec = spec.get("spec") or {}
    requests = (spec.get("devices") or {}).get("requests") or []
    return {
        (r.get("exactly") or {}).get("deviceClassName", "") for r in requests if r.get("exactly")
    } | {a.get("deviceClassName", "") for r in requests for a in r.get("firstAvailable") or []}


def _scratch_store(directory: Path, objects: list[Obj]) -> tuple[Store, list[str]]:
    """The dump's classes, slices and claims in a store of their own, for the platform's
    capacity view and DRA index; and the slices' names there, in the dump's order (a
    slice with only a ``generateName`` gets its name from the store)."""
    store = Store(directory / "doctor.db", durable=False)
    slice_names = []
    for obj in objects:
        if obj["kind"] in ("DeviceClass", "ResourceSlice", "ResourceClaim"):
            stored = _store_copy(store, obj)
            if obj["kind"] == "ResourceSlice":
                slice_names.append(stored["metadata"]["name"])
    return store, slice_names


def _listing(store: Store, kind: str) -> list[Obj]:
    return store.list_objects("host", by_kind(kind).store, shared=True)[0]


def _capacity(snapshot: Snapshot) -> Obj:
    """Per class, per MIG profile and per pool, computed with the platform's own capacity
    view: what ``allot top`` and ``/metrics`` say of the same objects."""
    complete = {(p.driver, p.pool): p.complete for p in snapshot.pools}
    pools = [
        {**row, "complete": complete.get((row["driver"], row["pool"]), True)}
        for row in views.pools(snapshot)
    ]
    allocatable = views.allocatable(snapshot)
    return {"classes": allocatable["classes"], "profiles": allocatable["profiles"], "pools": pools}


def _store_copy(store: Store, obj: Obj) -> Obj:
    """``obj`` in the scratch store (server-set fields dropped, its namespace created); the
    stored object (read it, never modify it)."""
    metadata = {
        k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "uid")
    }
    namespace = metadata.get("namespace")
    if namespace and not store.namespace_exists("host", namespace):
        document = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        store.create("host", by_kind("Namespace").store, document)
    copy = {**obj, "metadata": metadata}  # the store keeps it as it is: nothing changes it
    return store.create("host", by_kind(obj["kind"]).store, copy, owned=True, copy_result=False)


def _counts(row: Obj) -> str:
    """A capacity row in words: devices, allocated, free, unavailable (shared counters used
    up or pool incomplete) and, per class and profile, how many could still be allocated."""
    text = f"{row['devices']} device(s), {row['allocated']} allocated, {row['free']} free"
    if row.get("unavailable"):
        text += f", {row['unavailable']} unavailable"
    if "allocatable" in row:
        text += f"; {row['allocatable']} can still be allocated"
    return text


def render_report(report: Report) -> str:
    summary = report.summary
    lines = [
        f"allot doctor: {summary['nodes']} node(s), {summary['slices']} slice(s) with "
        f"{summary['devices']} device(s), {summary['classes']} class(es), "
        f"{summary['claims']} claim(s)"
    ]
    lines.append(f"\n== Pending claims ({len(report.pending)})")
    for entry in report.pending:
        lines.append(f"{entry['claim']}: {entry['reason']}")
        if entry.get("explanation"):
            lines += ["    " + line for line in entry["explanation"].splitlines()]
    lines.append(f"\n== Catalogue ({len(report.lint)} finding(s))")
    for finding in report.lint:
        lines.append(f"{finding['class']}: [{finding['code']}] {finding['message']}")
        lines += [f"    - {d}" for d in finding["details"]]
        if finding["suggestion"]:
            lines.append(f"    suggested selector: {finding['suggestion']}")
    lines.append(f"\n== Allocations their classes no longer select ({len(report.stale)})")
    for entry in report.stale:
        lines.append(
            f"{entry['claim']} request {entry['request']}: device {entry['device']} "
            f"(class {entry['class']}): {entry['reason']}"
        )
    lines.append(f"\n== Entitlement violations ({len(report.violations)})")
    for violation in report.violations:
        entitled = ", ".join(violation["entitled"]) or "<none>"
        held = " and ALLOCATED: it still holds devices" if violation["allocated"] else ""
        lines.append(
            f"{violation['object']} ({violation['kind']}, tenant {violation['tenant']}): class "
            f"{violation['deviceClass']} is outside its entitlement ({entitled}){held}"
        )
    lines.append(f"\n== Fair sharing ({len(report.sharing)})")
    lines += [entry["message"] for entry in report.sharing]
    lines.append("\n== Capacity per class")
    lines += [f"{row['class']}: {_counts(row)}" for row in report.capacity["classes"]]
    if report.capacity["profiles"]:
        lines.append("\n== Capacity per MIG profile")
        lines += [f"{row['profile']}: {_counts(row)}" for row in report.capacity["profiles"]]
    lines.append("\n== Capacity per pool")
    for row in report.capacity["pools"]:
        state = "" if row["complete"] else " INCOMPLETE"
        where = f"{row['driver']}/{row['pool']} (node {row['node'] or '-'})"
        lines.append(f"{where}: {_counts(row)}{state}")
    if report.skipped:
        lines.append(f"\n== Skipped ({len(report.skipped)})")
        lines += report.skipped[:20]
    verdict = "nothing wrong" if report.problems == 0 else f"{report.problems} problem(s)"
    lines.append(f"\n{verdict}")
    return "\n".join(lines)
