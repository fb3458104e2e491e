"""The rules of volume binding shared by the persistent volume controller, the local-path
provisioner, the scheduler's volume filter and the tenant sync.

Upstream keeps them in ``pkg/controller/volume/persistentvolume`` (``findMatchingVolume``,
``checkVolumeSatisfyClaim``, the bind annotations) and the scheduler's VolumeBinding
plugin: which claims a pod mounts, whether a volume satisfies a claim (class, volume mode,
access modes, capacity, selector, a ``volumeName`` or ``claimRef`` pre-binding), the
smallest such volume, whether a claim's binding waits for its first consumer, and whether
a volume's node affinity admits a node. Everything here reads wire objects and writes
nothing. Used by :mod:`allot.controllers.volumes`, :mod:`allot.controllers.scheduler`,
:mod:`allot.controllers.statefulset` and :mod:`allot.tenancy.sync`.
"""

from __future__ import annotations

from collections.abc import Iterable

from allot.allocator.nodes import node_selector_matches
from allot.api import core_v1 as corev1
from allot.api.meta import selector_matches
from allot.api.quantity import Quantity
from allot.types import Obj

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
CLAIM_PROTECTION = "kubernetes.io/pvc-protection"
VOLUME_PROTECTION = "kubernetes.io/pv-protection"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NODE_CONFLICT = "node(s) had volume node affinity conflict"
NO_VOLUME_TO_BIND = "node(s) didn't find available persistent volumes to bind"
HOSTNAME = "kubernetes.io/hostname"
LOCAL_PATH = "rancher.io/local-path"
"""kind's provisioner, which allot simulates (:mod:`allot.controllers.volumes`)."""


def pod_claims(pod: Obj) -> list[tuple[str, bool]]:
    """(claim name, whether it is a generic ephemeral volume's) for each claim a pod
    mounts, in volume order: a ``persistentVolumeClaim`` volume names its claim, an
    ``ephemeral`` volume's claim is ``<pod>-<volume>``. A pod without volumes (most)
    costs one lookup."""
    volumes = (pod.get("spec") or {}).get("volumes")
    if not volumes:
        return []
    found = []
    for volume in volumes:
        if (volume.get("persistentVolumeClaim") or {}).get("claimName"):
            found.append((str(volume["persistentVolumeClaim"]["claimName"]), False))
        elif volume.get("ephemeral") is not None:
            found.append((f"{pod['metadata']['name']}-{volume.get('name', '')}", True))
    return found


def pod_claim_names(pod: Obj) -> list[str]:
    return [name for name, _ in pod_claims(pod)]


def ephemeral_claims(pod: Obj) -> list[tuple[str, Obj]]:
    """(claim name, ``volumeClaimTemplate``) of a pod's generic ephemeral volumes."""
    return [
        (
            f"{pod['metadata']['name']}-{v.get('name', '')}",
            v["ephemeral"].get("volumeClaimTemplate") or {},
        )
        for v in (pod.get("spec") or {}).get("volumes") or []
        if v.get("ephemeral") is not None
    ]


def pod_is_terminated(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def requested_storage(claim: Obj) -> Quantity:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    return Quantity.parse(str(requests.get("storage", "0")))


def volume_capacity(volume: Obj) -> Quantity:
    capacity = (volume.get("spec") or {}).get("capacity") or {}
    return Quantity.parse(str(capacity.get("storage", "0")))


def claim_class(claim: Obj) -> str:
    return str((claim.get("spec") or {}).get("storageClassName") or "")


def is_bound_to(volume: Obj, claim: Obj) -> bool:
    """The volume's ``claimRef`` names the claim (and its uid, when the ref has one)."""
    ref = (volume.get("spec") or {}).get("claimRef")
    if not ref:
        return False
    metadata = claim["metadata"]
    if (ref.get("namespace"), ref.get("name")) != (metadata.get("namespace"), metadata["name"]):
        return False
    return not ref.get("uid") or ref.get("uid") == metadata.get("uid")


def satisfies(volume: Obj, claim: Obj) -> bool:
    """``checkVolumeSatisfyClaim`` plus what ``findMatchingVolume`` asks first: the
    volume is not being deleted, free or pre-bound to this claim, of the claim's class and
    volume mode, with every access mode the claim asks for, at least its capacity, and
    selected by its selector."""
    spec, wanted = volume.get("spec") or {}, claim.get("spec") or {}
    if volume["metadata"].get("deletionTimestamp"):
        return False
    if spec.get("claimRef") and not is_bound_to(volume, claim):
        return False
    if not spec.get("claimRef") and (volume.get("status") or {}).get("phase") not in (
        None,
        "Pending",
        "Available",
    ):
        return False
    if str(spec.get("storageClassName") or "") != claim_class(claim):
        return False
    if spec.get("volumeMode", "Filesystem") != wanted.get("volumeMode", "Filesystem"):
        return False
    if not set(wanted.get("accessModes") or []) <= set(spec.get("accessModes") or []):
        return False
    if volume_capacity(volume).compare(requested_storage(claim)) < 0:
        return False
    selector = wanted.get("selector")
    return selector is None or selector_matches(selector, volume["metadata"].get("labels"))


def best_volume(claim: Obj, volumes: Iterable[Obj], node: corev1.Node | None = None) -> Obj | None:
    """The volume to bind ``claim`` to: the one named by ``spec.volumeName``, else one
    pre-bound to the claim, else the smallest that satisfies it (and admits ``node``)."""
    named = (claim.get("spec") or {}).get("volumeName")
    fitting = [
        v
        for v in volumes
        if (not named or v["metadata"]["name"] == named)
        and satisfies(v, claim)
        and (node is None or admits(v, node))
    ]
    prebound = [v for v in fitting if (v.get("spec") or {}).get("claimRef")]
    if prebound:
        return prebound[0]
    if not fitting:
        return None
    return min(fitting, key=lambda v: (volume_capacity(v).nanos, v["metadata"]["name"]))


def prebound_volume(claim: Obj, volumes: Iterable[Obj]) -> Obj | None:
    """A volume whose ``claimRef`` (with the claim's uid) pre-binds it to the claim and
    that satisfies it: what ``findMatchingVolume`` still returns when binding is delayed."""
    uid = claim["metadata"].get("uid")
    for volume in volumes:
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if ref.get("uid") == uid and satisfies(volume, claim):
            return volume
    return None


def delays_binding(claim: Obj, storage_class: Obj | None) -> bool:
    """``shouldDelayBinding``: the class waits for the first consumer and the scheduler
    has not yet chosen a node for it."""
    if storage_class is None or storage_class.get("volumeBindingMode") != WAIT_FOR_FIRST_CONSUMER:
        return False
    return SELECTED_NODE not in (claim["metadata"].get("annotations") or {})


def admits(volume: Obj, node: corev1.Node) -> bool:
    """The volume's ``nodeAffinity.required`` selects the node (no affinity: any node)."""
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if not required:
        return True
    return node_selector_matches(corev1.NodeSelector.model_validate(required), node)


def hostname_affinity(node: str, labels: dict[str, str] | None) -> Obj:
    """The node affinity of a volume that lives on one node, as local-path writes it
    (``kubernetes.io/hostname In [node]``); a node without that label is named by
    ``metadata.name`` instead, so the volume still admits it."""
    hostname = (labels or {}).get(HOSTNAME)
    term: Obj = (
        {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [hostname]}]}
        if hostname
        else {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    )
    return {"required": {"nodeSelectorTerms": [term]}}


def claim_ref(claim: Obj) -> Obj:
    """The ``claimRef`` a volume bound to ``claim`` holds."""
    metadata = claim["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": metadata.get("namespace"),
        "name": metadata["name"],
        "uid": metadata.get("uid"),
        "resourceVersion": metadata.get("resourceVersion"),
    }
