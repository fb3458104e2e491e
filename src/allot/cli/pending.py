"""``allot explain pod/NAME [--tenant T]``: why a pod (or a claim's pods) waits.

With ``--tenant``, the pod or claim of that tenant (in its namespace ``-n``), read through
its host twin; without, a host pod or claim in namespace ``-n``. Reads the host objects
from the running platform (``allot.cli.up.platform_client``) and prints
:func:`allot.tenancy.explain.explain_twin`'s answer: waiting for a claim the resourceclaim
controller cannot create (its ``FailedResourceClaimCreation`` Events are read), for quota,
for a preemption in progress (with the pods being evicted), or for capacity. Imported by
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
from allot.tenancy.explain import explain_twin
from allot.types import Obj

TENANT_API_VERSION = "allot.dev/v1alpha1"


def explain_live(args: argparse.Namespace, kind: str, name: str) -> int:
    tenant: str | None = args.tenant
    host_ns = names.host_namespace(tenant) if tenant else args.namespace
    where = f"of tenant {tenant}" if tenant else "on the host"
    try:
        client = platform_client(args.data_dir)
        missing = _missing_tenant(client, tenant) if tenant else None
        if missing:
            print(f"error: {missing}", file=sys.stderr)
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
    for pod in found:
        explanation = explain_twin(pod, neighbours, events)
        annotations = pod["metadata"].get("annotations") or {}
        shown = annotations.get(names.NAME_ANNOTATION) if tenant else pod["metadata"]["name"]
        print(explanation.text(f"pod {args.namespace}/{shown} {where}"))
        pending = pending or explanation.pending
    if not found:
        print(f"no pod uses resourceclaim {args.namespace}/{name} {where}")
    return 1 if pending else 0


def _missing_tenant(client: Client, tenant: str) -> str | None:
    """Why ``tenant`` cannot be explained (it does not exist: the tenants that do), or None."""
    try:
        client.get(TENANT_API_VERSION, "Tenant", tenant)
    except KubeNotFound:
        found = sorted(t["metadata"]["name"] for t in client.list(TENANT_API_VERSION, "Tenant"))
        return f'tenant "{tenant}" not found (tenants: {", ".join(found) or "none"})'
    return None


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
