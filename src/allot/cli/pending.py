"""``allot explain pod/NAME [--tenant T]``: why a pod (or a claim's pods) waits.

With ``--tenant``, the pod or claim of that tenant (in its namespace ``-n``), read through
its host twin; without, a host pod or claim in namespace ``-n``. Reads the host objects
from the running platform (``allot.cli.up.platform_client``) and prints
:func:`allot.tenancy.explain.explain_twin`'s answer: waiting for a claim the resourceclaim
controller cannot create (its ``FailedResourceClaimCreation`` Events are read), for quota,
for a preemption in progress (with the pods being evicted), or for capacity: then also why
its claims fit on no node, request by request and device by device, as ``allot doctor``
says it, for a tenant restricted to what it may see (:func:`allot.tenancy.explain.
why_no_node`; the entitlement is the Tenant's ``status.entitledDeviceClasses``). Imported by
:mod:`allot.cli.simulate` only for such a target, so a scenario's ``allot explain`` never
loads the client. Exit status: 0 when nothing waits; 1 when something does, or the read
fails as a ``kubectl get`` would (platform not running, no such tenant, pod or claim).
"""

from __future__ import annotations

import argparse
import sys

from allot.cli.up import platform_client
from allot.controllers.claims import FAILED_CREATION
from allot.kube.client import Client
from allot.kube.errors import KubeError, KubeNotFound
from allot.tenancy import names
from allot.tenancy.explain import CAPACITY, Explanation, Fleet, explain_twin, why_no_node
from allot.types import Obj

TENANT_API_VERSION = "allot.dev/v1alpha1"


def explain_live(args: argparse.Namespace, kind: str, name: str) -> int:
    tenant: str | None = args.tenant
    host_ns = names.host_namespace(tenant) if tenant else args.namespace
    where = f"of tenant {tenant}" if tenant else "on the host"
    try:
        client = platform_client(args.data_dir)
        reader = _entitled(client, tenant) if tenant else None
        if isinstance(reader, str):
            print(f"error: {reader}", file=sys.stderr)
            return 1
        pods = client.list("v1", "Pod", host_ns)
        host_name = names.host_name(name, args.namespace) if tenant else name
        found = _twins(client, kind, host_name, host_ns, pods)
        neighbours = _cohort_pods(client) if tenant else []
        events = client.list("v1", "Event", host_ns, field_selector=f"reason={FAILED_CREATION}")
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if found is None:
        synced = " (or not synced to the host yet)" if tenant else ""
        print(
            f'error: {kind.lower()} "{name}" not found in namespace {args.namespace} '
            f"{where}{synced}",
            file=sys.stderr,
        )
        return 1
    pending = False
    fleet: list[Fleet] = []  # read once, for the first pod that waits for capacity
    for pod in found:
        explanation = explain_twin(pod, neighbours, events)
        try:
            _add_detail(client, explanation, pod, fleet, reader)
        except KubeError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        annotations = pod["metadata"].get("annotations") or {}
        shown = annotations.get(names.NAME_ANNOTATION) if tenant else pod["metadata"]["name"]
        print(explanation.text(f"pod {args.namespace}/{shown} {where}"))
        pending = pending or explanation.pending
    if not found:
        print(f"no pod uses resourceclaim {args.namespace}/{name} {where}")
    return 1 if pending else 0


def _entitled(client: Client, tenant: str) -> tuple[str, list[str]] | str:
    """``(tenant, the classes it is entitled to)``, or why it cannot be explained (it does
    not exist: the tenants that do)."""
    try:
        found = client.get(TENANT_API_VERSION, "Tenant", tenant)
    except KubeNotFound:
        known = sorted(t["metadata"]["name"] for t in client.list(TENANT_API_VERSION, "Tenant"))
        return f'tenant "{tenant}" not found (tenants: {", ".join(known) or "none"})'
    return tenant, list((found.get("status") or {}).get("entitledDeviceClasses") or [])


def _add_detail(
    client: Client,
    explanation: Explanation,
    pod: Obj,
    fleet: list[Fleet],
    tenant: tuple[str, list[str]] | None,
) -> None:
    """For a pod that waits for capacity, why its claims fit on no node."""
    gated = (pod.get("spec") or {}).get("schedulingGates")
    if explanation.waits_for != CAPACITY or gated:
        return
    if not fleet:
        fleet.append(
            Fleet(
                client.list("resource.k8s.io/v1", "ResourceSlice"),
                client.list("resource.k8s.io/v1", "DeviceClass"),
                client.list("resource.k8s.io/v1", "ResourceClaim", None),
                client.list("v1", "Node"),
            )
        )
    explanation.detail = why_no_node(pod, fleet[0], tenant)


def _twins(
    client: Client, kind: str, host_name: str, host_ns: str, pods: list[Obj]
) -> list[Obj] | None:
    """The host pods to explain: the pod's twin, or the pods using the claim's twin."""
    if kind == "Pod":
        found = [p for p in pods if p["metadata"]["name"] == host_name]
        return found or None
    try:
        client.get("resource.k8s.io/v1", "ResourceClaim", host_name, host_ns)
    except KubeNotFound:
        return None
    return [p for p in pods if _uses(p, host_name)]


def _uses(pod: Obj, claim: str) -> bool:
    entries = (pod.get("spec") or {}).get("resourceClaims") or []
    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
    return any(e.get("resourceClaimName") == claim for e in [*entries, *statuses])


def _cohort_pods(client: Client) -> list[Obj]:
    """Every tenant's host pods (victims of a preemption are in other tenants')."""
    return [
        p
        for p in client.list("v1", "Pod", None, label_selector=names.TENANT_LABEL)
        if names.tenant_of_namespace(p["metadata"].get("namespace", ""))
    ]
