"""A tenant pod's PersistentVolumeClaims: the host schedules the pod's twin, the tenant's
own cluster keeps the claims and volumes.

Each tenant cluster has its own default class ``standard``, persistent volume
controller and local-path provisioner (:mod:`allot.controllers.volumes`, one instance
for every cluster), as a vCluster whose virtual control plane runs them; claims are not
synced to the host. So the sync plays the part of the scheduler's VolumeBinding plugin
for the twin: the twin is created only once every claim the pod mounts exists and is
bound, or waits for its first consumer (:func:`claims_waiting`, reported as the sync's
``SyncWaiting`` Event with kube-scheduler's words); the twin mounts an ``emptyDir`` in
place of each claim (the host has no such claim; allot mounts no volume data anyway:
:mod:`allot.tenancy.translate`); a bound volume's node affinity becomes the twin's
(:func:`add_volume_affinity`), so a StatefulSet pod comes back to its local volume's
node. Once the host binds the twin, the sync binds the tenant's pod, and the tenant's
volume controller takes that node for its claims that waited (``selected-node``) and
provisions there. Used by :mod:`allot.tenancy.sync`.
"""

from __future__ import annotations

import itertools

from allot.api.documents import clone_document
from allot.client.protocol import Client
from allot.controllers import volumebinding as vb
from allot.types import Obj


def claims_waiting(ctx: Client, pod: Obj) -> str:
    """Why the pod's twin must wait for its claims ("" when it need not)."""
    namespace = pod["metadata"].get("namespace", "")
    for name in vb.pod_claim_names(pod):
        claim = ctx.peek("PersistentVolumeClaim", namespace, name)
        if claim is None:
            return f'persistentvolumeclaim "{name}" not found'
        if claim["metadata"].get("deletionTimestamp"):
            return f'persistentvolumeclaim "{name}" is being deleted'
        if (claim.get("status") or {}).get("phase") == "Bound":
            continue
        class_name = vb.claim_class(claim)
        storage_class = ctx.peek("StorageClass", "", class_name) if class_name else None
        if not vb.delays_binding(claim, storage_class):
            return vb.UNBOUND_IMMEDIATE
    return ""


def add_volume_affinity(ctx: Client, pod: Obj, twin: Obj) -> None:
    """AND the node affinity of the pod's bound volumes into the twin's required node
    affinity (each term of one with each term of the other)."""
    namespace = pod["metadata"].get("namespace", "")
    for name in vb.pod_claim_names(pod):
        claim = ctx.peek("PersistentVolumeClaim", namespace, name)
        volume_name = ((claim or {}).get("spec") or {}).get("volumeName")
        volume = ctx.peek("PersistentVolume", "", volume_name) if volume_name else None
        required = (((volume or {}).get("spec") or {}).get("nodeAffinity") or {}).get("required")
        if required:
            _require(twin, clone_document(required.get("nodeSelectorTerms") or []))


def _require(twin: Obj, terms: list[Obj]) -> None:
    node_affinity = twin["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
    field = "requiredDuringSchedulingIgnoredDuringExecution"
    current = (node_affinity.get(field) or {}).get("nodeSelectorTerms")
    if current:
        terms = [
            {
                key: (mine.get(key) or []) + (theirs.get(key) or [])
                for key in ("matchExpressions", "matchFields")
                if mine.get(key) or theirs.get(key)
            }
            for mine, theirs in itertools.product(current, terms)
        ]
    node_affinity[field] = {"nodeSelectorTerms": terms}
