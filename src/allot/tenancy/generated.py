"""Claims generated from templates, as a tenant sees them.

A tenant pod with ``resourceClaimTemplateName`` has its host twin's claim generated on the
host by the resourceclaim controller (``<twin>-<claim>-<5 chars>``, owned by the twin).
The tenant sees it read-only under the name upstream's controller would have given it in
the tenant (``<pod>-<claim>-`` truncated as upstream, then the same 5 characters), which is
also the name its pod's ``status.resourceClaimStatuses`` gives: owned by the tenant pod
(controller reference, as upstream's generated claims are), annotated
``resource.kubernetes.io/pod-claim-name`` and ``allot.dev/host-name`` (the host claim:
the mark of a mirror, which tenants cannot set), with the host claim's spec and status
(``reservedFor`` naming the tenant pod). It goes with its pod. Pure; used by the tenant
sync (which writes the mirrors) and the tenant guard (which keeps them read-only).
"""

from __future__ import annotations

from collections.abc import Callable

from allot.api.documents import clone_document
from allot.controllers.claims import POD_CLAIM_ANNOTATION, generate_name
from allot.tenancy import names
from allot.tenancy.translate import claim_status_to_tenant
from allot.types import Obj

SUFFIX = 5  # the random characters the API server appends to a generateName


def is_mirror(claim: Obj) -> bool:
    """Whether a tenant claim is the mirror of a host claim generated for its pod."""
    return names.HOST_NAME_ANNOTATION in (claim["metadata"].get("annotations") or {})


def owner_pod(claim: Obj) -> str | None:
    """The tenant pod a mirrored claim belongs to (None: not a mirror)."""
    if not is_mirror(claim):
        return None
    for owner in claim["metadata"].get("ownerReferences") or []:
        if owner.get("kind") == "Pod" and owner.get("controller"):
            return str(owner.get("name"))
    return None


def generated_for(twin: Obj, host_claim: Obj) -> str | None:
    """The pod claim entry ``host_claim`` was generated for, if the twin owns it."""
    metadata = host_claim["metadata"]
    entry = (metadata.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
    owned = any(
        o.get("kind") == "Pod" and o.get("uid") == twin["metadata"].get("uid")
        for o in metadata.get("ownerReferences") or []
    )
    return str(entry) if entry is not None and owned else None


def tenant_claim_name(tenant_pod: str, pod_claim: str, host_claim: str) -> str:
    """The tenant's name for a claim generated on the host (see the module)."""
    return generate_name(tenant_pod, pod_claim) + host_claim[-SUFFIX:]


def mirror_name(host_claim: Obj) -> tuple[str, str] | None:
    """The tenant ``(namespace, name)`` of the mirror of a claim generated on the host for a
    tenant pod's twin (``<pod>.<namespace>``), read from the claim alone: its controller Pod
    and its pod claim annotation. None for any other claim."""
    metadata = host_claim["metadata"]
    entry = (metadata.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
    twin = next(
        (o.get("name", "") for o in metadata.get("ownerReferences") or []
         if o.get("kind") == "Pod" and o.get("controller")),
        "",
    )  # fmt: skip
    if entry is None or not twin:
        return None
    try:
        pod, namespace = names.tenant_name(twin)
    except ValueError:
        return None
    return namespace, tenant_claim_name(pod, str(entry), metadata["name"])


def mirror_claim(
    tenant_pod: Obj, pod_claim: str, host_claim: Obj, pod_twin: Callable[[str], Obj | None]
) -> Obj:
    """The tenant's read-only view of ``host_claim``, owned by ``tenant_pod``."""
    pod_meta, host_meta = tenant_pod["metadata"], host_claim["metadata"]
    labels = {
        k: v
        for k, v in (host_meta.get("labels") or {}).items()
        if not k.startswith(names.PLATFORM_PREFIX)
    }
    annotations = {
        **{
            k: v
            for k, v in (host_meta.get("annotations") or {}).items()
            if not k.startswith(names.PLATFORM_PREFIX)
        },
        names.HOST_NAME_ANNOTATION: host_meta["name"],
    }
    metadata: Obj = {
        "name": tenant_claim_name(pod_meta["name"], pod_claim, host_meta["name"]),
        "namespace": pod_meta.get("namespace", "default"),
        "annotations": annotations,
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod_meta["name"],
                "uid": pod_meta.get("uid"),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": host_claim.get("apiVersion", "resource.k8s.io/v1"),
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": clone_document(host_claim.get("spec") or {}),
        "status": claim_status_to_tenant(host_claim.get("status") or {}, pod_twin),
    }


def same_mirror(current: Obj, desired: Obj) -> bool:
    """Whether the tenant's mirror already shows what the host claim does."""
    metadata, wanted = current["metadata"], desired["metadata"]
    return bool(
        (metadata.get("labels") or None) == wanted.get("labels")
        and metadata.get("annotations") == wanted["annotations"]
        and metadata.get("ownerReferences") == wanted["ownerReferences"]
        and (current.get("status") or {}) == desired["status"]
    )
