"""The persistent volume controller, the pvc- and pv-protection controllers and a
simulated ``rancher.io/local-path`` provisioner, in the host and every tenant cluster.

Upstream's ``pkg/controller/volume/persistentvolume`` (``syncClaim``/``syncVolume``):

* an unbound claim binds to the volume its ``volumeName`` names, one pre-bound to it by
  ``claimRef``, or the smallest Available volume that satisfies it
  (:mod:`allot.controllers.volumebinding`); the volume gets the ``claimRef`` (and
  ``pv.kubernetes.io/bound-by-controller`` when the controller set it) and phase
  ``Bound``, the claim ``volumeName``, ``pv.kubernetes.io/bind-completed`` and phase
  ``Bound`` with the volume's access modes and capacity;
* a claim whose class waits for its first consumer is left ``Pending`` (Event
  ``WaitForFirstConsumer``) until the scheduler pre-binds a volume to it (``claimRef``)
  or writes ``volume.kubernetes.io/selected-node`` on it; without a volume, a class's
  provisioner is named in ``volume.kubernetes.io/storage-provisioner`` (Event
  ``ExternalProvisioning``);
* a volume whose claim is gone is ``Released``; reclaim ``Delete`` deletes a volume the
  provisioner made, ``Retain`` keeps it ``Released``; a bound claim whose volume is gone
  is ``Lost``.

The provisioner plays kind's local-path-provisioner for classes of provisioner
``rancher.io/local-path``: the volume ``pvc-<claim uid>`` is a ``hostPath`` at
``/var/local-path-provisioner/<volume>_<namespace>_<claim>`` (the path local-path uses on
a kind node; nodes are simulated, so nothing is created or mounted), pre-bound to the
claim, with node affinity for the selected node when the class waits for a consumer.

Protection (``kubernetes.io/pvc-protection``, ``kubernetes.io/pv-protection``, added at
creation by :mod:`allot.registry.storageprotection`): a claim being deleted keeps its
finalizer while a pod that is not finished mounts it; a volume being deleted keeps its
finalizer while it is ``Bound``.

In a tenant's cluster nothing schedules pods (the host does, for their twins), so a pod
the sync bound to a node chooses that node for its unbound claims that wait for a
consumer (``selects_nodes``). Only pods that mount claims are looked at. Built by
:mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import NamedTuple

from allot.api import core_v1 as corev1
from allot.controllers import volumebinding as vb
from allot.controllers.context import ControllerContext
from allot.controllers.workloads import ClusterContexts, WorkloadKey
from allot.store import WatchEvent
from allot.store.errors import AlreadyExists
from allot.types import Obj, rfc3339

MANAGER = "persistentvolume-binder-controller"
CLAIM = "PersistentVolumeClaim"
COMPONENT = "persistentvolume-controller"
PROVISIONER_COMPONENT = "rancher.io/local-path_local-path-provisioner"
LOCAL_PATH_ROOT = "/var/local-path-provisioner"
WAITING = "waiting for first consumer to be created before binding"
PROVISIONER_WAIT = (
    "Waiting for a volume to be created either by the external provisioner '{}' or "
    "manually by the system administrator. If volume creation is delayed, please verify "
    "that the provisioner is running and correctly registered."
)


class VolumeKey(NamedTuple):
    kind: str  # "claim" or "volume"
    cluster: str
    namespace: str
    name: str


class PersistentVolumeController:
    name = "persistentvolume-binder"
    watches = frozenset(
        {"persistentvolumes", "persistentvolumeclaims", "pods", "storageclasses.storage.k8s.io"}
    )

    def __init__(
        self, contexts: ClusterContexts, selects_nodes: Callable[[str], bool] | None = None
    ) -> None:
        """``selects_nodes(cluster)``: the cluster has no scheduler of its own (a
        tenant's), so a bound pod selects the node of its waiting claims."""
        self.contexts = contexts
        self.selects_nodes = selects_nodes or (lambda cluster: False)

    # ------------------------------------------------------------------ events
    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        obj, cluster = event.object, event.cluster
        metadata = obj["metadata"]
        if event.resource == "pods":
            namespace = metadata.get("namespace") or ""
            return [VolumeKey("claim", cluster, namespace, c) for c in vb.pod_claim_names(obj)]
        if event.resource == "persistentvolumeclaims":
            key = VolumeKey("claim", cluster, metadata.get("namespace") or "", metadata["name"])
            volume = (obj.get("spec") or {}).get("volumeName")
            return [key, VolumeKey("volume", cluster, "", volume)] if volume else [key]
        if event.resource == "persistentvolumes":
            keys: list[Hashable] = [VolumeKey("volume", cluster, "", metadata["name"])]
            ref = (obj.get("spec") or {}).get("claimRef")
            if ref and event.type != "DELETED":
                keys.append(VolumeKey("claim", cluster, ref.get("namespace") or "", ref["name"]))
            return keys
        if event.type != "ADDED":  # a class: the claims that waited for it
            return []
        return [
            VolumeKey("claim", cluster, c["metadata"].get("namespace") or "", c["metadata"]["name"])
            for c in self.contexts(cluster).scan("PersistentVolumeClaim")
            if vb.claim_class(c) == metadata["name"] and not c["spec"].get("volumeName")
        ]

    def initial_keys(self) -> list[Hashable]:
        return [
            VolumeKey(kind, *key)
            for kind, resource in (("volume", "PersistentVolume"), ("claim", CLAIM))
            for key in self.contexts.keys(resource)
            if isinstance(key, WorkloadKey)
        ]

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, VolumeKey)
        if not self.contexts.serves(key.cluster):
            self.contexts.forget(key.cluster)
            return
        context = self.contexts(key.cluster)
        if key.kind == "claim":
            claim = context.get("PersistentVolumeClaim", key.namespace, key.name)
            if claim is not None:
                ClaimSync(context, claim, self.selects_nodes(key.cluster)).sync()
        else:
            volume = context.get("PersistentVolume", "", key.name)
            if volume is not None:
                VolumeSync(context, volume).sync()


class ClaimSync:
    """One ``syncClaim``."""

    def __init__(self, context: ControllerContext, claim: Obj, selects_nodes: bool) -> None:
        self.context = context
        self.claim = claim
        self.namespace: str = claim["metadata"].get("namespace") or ""
        self.name: str = claim["metadata"]["name"]
        self.selects_nodes = selects_nodes

    def sync(self) -> None:
        if self.claim["metadata"].get("deletionTimestamp"):
            self._release_protection()
        elif (self.claim.get("spec") or {}).get("volumeName") and _annotation(
            self.claim, vb.BIND_COMPLETED
        ):
            self._sync_bound()
        else:
            self._sync_unbound()

    # ------------------------------------------------------------ protection
    def _release_protection(self) -> None:
        finalizers = self.claim["metadata"].get("finalizers") or []
        if vb.CLAIM_PROTECTION not in finalizers or self._in_use():
            return
        self.claim["metadata"]["finalizers"] = [f for f in finalizers if f != vb.CLAIM_PROTECTION]
        self.context.update("PersistentVolumeClaim", self.claim, "pvc-protection-controller")

    def _in_use(self) -> bool:
        return any(
            self.name in vb.pod_claim_names(pod) and not vb.pod_is_terminated(pod)
            for pod in self.context.scan_namespace("Pod", self.namespace)
        )

    # ------------------------------------------------------------------ bound
    def _sync_bound(self) -> None:
        name = self.claim["spec"]["volumeName"]
        volume = self.context.get("PersistentVolume", "", name)
        if volume is None or not vb.is_bound_to(volume, self.claim):
            if (self.claim.get("status") or {}).get("phase") != "Lost":
                message = "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
                if volume is None:
                    message = (
                        "Bound claim has lost reference to PersistentVolume. Data on the "
                        "volume is lost!"
                    )
                self._claim_phase("Lost", None)
                self.context.event(self.claim, "Warning", "ClaimLost", message, COMPONENT)
            return
        if (volume.get("spec") or {}).get("claimRef", {}).get("uid") is None:
            self._bind(volume)
            return
        _volume_phase(self.context, volume, "Bound")
        self._claim_phase("Bound", volume)

    # ---------------------------------------------------------------- unbound
    def _sync_unbound(self) -> None:
        class_name = vb.claim_class(self.claim)
        storage_class = self.context.peek("StorageClass", "", class_name) if class_name else None
        if vb.delays_binding(self.claim, storage_class):
            prebound = vb.prebound_volume(self.claim, self.context.scan("PersistentVolume"))
            if prebound is not None:  # the scheduler chose it for the claim's pod
                self._bind(self.context.get("PersistentVolume", "", prebound["metadata"]["name"]))
            elif not self.selects_nodes or not self._select_node_of_pod():
                self._waiting_for_consumer()
            return
        node = self._selected_node()
        volume = vb.best_volume(self.claim, self.context.scan("PersistentVolume"), node)
        if volume is not None:
            self._bind(self.context.get("PersistentVolume", "", volume["metadata"]["name"]))
            return
        if (self.claim.get("spec") or {}).get("volumeName"):
            return  # the volume it names does not exist (yet), or does not fit: Pending
        self._provision(class_name, storage_class)

    def _waiting_for_consumer(self) -> None:
        self.context.event(self.claim, "Normal", "WaitForFirstConsumer", WAITING, COMPONENT)

    def _select_node_of_pod(self) -> bool:
        """In a cluster without a scheduler: the node of a bound pod mounting the claim
        becomes the claim's selected node (as the scheduler's PreBind writes it)."""
        for pod in self.context.scan_namespace("Pod", self.namespace):
            node = (pod.get("spec") or {}).get("nodeName")
            if node and self.name in vb.pod_claim_names(pod) and not vb.pod_is_terminated(pod):
                annotations = self.claim["metadata"].setdefault("annotations", {})
                annotations[vb.SELECTED_NODE] = node
                self.context.update("PersistentVolumeClaim", self.claim, MANAGER)
                return True
        return False

    def _selected_node(self) -> corev1.Node | None:
        name = _annotation(self.claim, vb.SELECTED_NODE)
        node = self.context.peek("Node", "", name) if name else None
        return corev1.Node.model_validate(node) if node is not None else None

    def _provision(self, class_name: str, storage_class: Obj | None) -> None:
        if storage_class is None:
            if not class_name:
                message = (
                    "no persistent volumes available for this claim and no storage class is set"
                )
                self.context.event(self.claim, "Normal", "FailedBinding", message, COMPONENT)
            else:
                message = f'storageclass.storage.k8s.io "{class_name}" not found'
                self.context.event(self.claim, "Warning", "ProvisioningFailed", message, COMPONENT)
            return
        provisioner = str(storage_class.get("provisioner") or "")
        if provisioner == "kubernetes.io/no-provisioner":
            return
        if _annotation(self.claim, vb.STORAGE_PROVISIONER) != provisioner:
            annotations = self.claim["metadata"].setdefault("annotations", {})
            annotations[vb.STORAGE_PROVISIONER] = provisioner
            annotations[vb.BETA_STORAGE_PROVISIONER] = provisioner
            self.claim = self.context.update("PersistentVolumeClaim", self.claim, MANAGER)
            message = PROVISIONER_WAIT.format(provisioner)
            self.context.event(self.claim, "Normal", "ExternalProvisioning", message, COMPONENT)
        if provisioner == vb.LOCAL_PATH:
            self._provision_local_path(storage_class)

    def _provision_local_path(self, storage_class: Obj) -> None:
        metadata = self.claim["metadata"]
        name = f"pvc-{metadata['uid']}"
        if self.context.peek("PersistentVolume", "", name) is not None:
            return
        self.context.event(
            self.claim,
            "Normal",
            "Provisioning",
            f'External provisioner is provisioning volume for claim "{self.namespace}/{self.name}"',
            PROVISIONER_COMPONENT,
        )
        try:
            volume = self._local_volume(name, storage_class)
            self.context.create("PersistentVolume", volume, PROVISIONER_COMPONENT)
        except AlreadyExists:
            return
        self.context.event(
            self.claim,
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {name}",
            PROVISIONER_COMPONENT,
        )

    def _local_volume(self, name: str, storage_class: Obj) -> Obj:
        spec = self.claim.get("spec") or {}
        metadata = self.claim["metadata"]
        node = _annotation(self.claim, vb.SELECTED_NODE)
        annotations = {vb.PROVISIONED_BY: vb.LOCAL_PATH}
        volume_spec: Obj = {
            "capacity": {"storage": str(spec["resources"]["requests"]["storage"])},
            "accessModes": list(spec.get("accessModes") or []),
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "storageClassName": storage_class["metadata"]["name"],
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "claimRef": vb.claim_ref(self.claim),
            "hostPath": {
                "path": f"{LOCAL_PATH_ROOT}/{name}_{self.namespace}_{metadata['name']}",
                "type": "DirectoryOrCreate",
            },
        }
        if node:
            annotations["local.path.provisioner/selected-node"] = node
            found = self.context.peek("Node", "", node)
            labels = (found or {}).get("metadata", {}).get("labels")
            volume_spec["nodeAffinity"] = vb.hostname_affinity(node, labels)
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": annotations},
            "spec": volume_spec,
        }

    # ---------------------------------------------------------------- binding
    def _bind(self, volume: Obj | None) -> None:
        """``bind``: the volume to the claim, its phase, the claim to the volume, its
        phase, in upstream's order (each write a step a restart can resume from)."""
        if volume is None:
            return
        spec = volume.setdefault("spec", {})
        ref = spec.get("claimRef") or {}
        if ref.get("uid") != self.claim["metadata"].get("uid"):
            if not ref:
                volume["metadata"].setdefault("annotations", {})[vb.BOUND_BY_CONTROLLER] = "yes"
            spec["claimRef"] = vb.claim_ref(self.claim)
            volume = self.context.update("PersistentVolume", volume, MANAGER)
        _volume_phase(self.context, volume, "Bound")
        metadata = self.claim["metadata"]
        annotations = metadata.setdefault("annotations", {})
        claim_spec = self.claim.setdefault("spec", {})
        if claim_spec.get("volumeName") != volume["metadata"]["name"] or not annotations.get(
            vb.BIND_COMPLETED
        ):
            if not claim_spec.get("volumeName"):
                annotations[vb.BOUND_BY_CONTROLLER] = "yes"
            claim_spec["volumeName"] = volume["metadata"]["name"]
            annotations[vb.BIND_COMPLETED] = "yes"
            self.claim = self.context.update("PersistentVolumeClaim", self.claim, MANAGER)
        self._claim_phase("Bound", volume)

    def _claim_phase(self, phase: str, volume: Obj | None) -> None:
        status = dict(self.claim.get("status") or {})
        wanted = {**status, "phase": phase}
        if volume is not None:
            wanted["accessModes"] = list((volume.get("spec") or {}).get("accessModes") or [])
            wanted["capacity"] = dict((volume.get("spec") or {}).get("capacity") or {})
        if wanted == status:
            return
        self.claim["status"] = wanted
        self.claim = self.context.update_status("PersistentVolumeClaim", self.claim, MANAGER)


class VolumeSync:
    """One ``syncVolume``, the reclaim of a released volume, and pv-protection."""

    def __init__(self, context: ControllerContext, volume: Obj) -> None:
        self.context = context
        self.volume = volume
        self.name: str = volume["metadata"]["name"]

    def sync(self) -> None:
        self._sync_phase()
        deleting = self.volume["metadata"].get("deletionTimestamp")
        if deleting and (self.volume.get("status") or {}).get("phase") != "Bound":
            self._release_protection()

    def _sync_phase(self) -> None:
        phase = (self.volume.get("status") or {}).get("phase", "Pending")
        ref = (self.volume.get("spec") or {}).get("claimRef")
        if not ref:
            if phase in ("Pending", "Released"):
                _volume_phase(self.context, self.volume, "Available")
            return
        claim = self.context.peek("PersistentVolumeClaim", ref.get("namespace") or "", ref["name"])
        if claim is not None and (not ref.get("uid") or ref["uid"] == claim["metadata"].get("uid")):
            bound = (claim.get("spec") or {}).get("volumeName") == self.name
            _volume_phase(self.context, self.volume, "Bound" if bound else "Available")
            return
        if not ref.get("uid"):  # pre-bound to a claim still to come
            _volume_phase(self.context, self.volume, "Available")
            return
        self._reclaim(phase)

    def _reclaim(self, phase: str) -> None:
        if phase in ("Bound", "Pending", "Available"):
            _volume_phase(self.context, self.volume, "Released")
            phase = "Released"
        policy = (self.volume.get("spec") or {}).get("persistentVolumeReclaimPolicy", "Retain")
        if phase != "Released" or policy == "Retain":
            return
        if self.volume["metadata"].get("deletionTimestamp"):
            return  # being deleted already: pv-protection lets it go
        if policy == "Delete" and _annotation(self.volume, vb.PROVISIONED_BY) == vb.LOCAL_PATH:
            self.context.delete("PersistentVolume", "", self.name)
            return
        message = (
            f'error getting deleter volume plugin for volume "{self.name}": no deletable '
            "volume plugin matched"
            if policy == "Delete"
            else f'No recycler plugin found for the volume "{self.name}"'
        )
        self.volume = self.context.get("PersistentVolume", "", self.name) or self.volume
        _volume_phase(self.context, self.volume, "Failed", message)
        reason = "VolumeFailedDelete" if policy == "Delete" else "VolumeFailedRecycle"
        self.context.event(self.volume, "Warning", reason, message, COMPONENT)

    def _release_protection(self) -> None:
        finalizers = self.volume["metadata"].get("finalizers") or []
        if vb.VOLUME_PROTECTION not in finalizers:
            return
        self.volume["metadata"]["finalizers"] = [f for f in finalizers if f != vb.VOLUME_PROTECTION]
        self.context.update("PersistentVolume", self.volume, "pv-protection-controller")


def _volume_phase(context: ControllerContext, volume: Obj, phase: str, message: str = "") -> None:
    status = volume.get("status") or {}
    if status.get("phase") == phase:
        return
    volume["status"] = {"phase": phase, "lastPhaseTransitionTime": rfc3339(context.clock())}
    if message:
        volume["status"]["message"] = message
    updated = context.update_status("PersistentVolume", volume, MANAGER)
    volume.clear()
    volume.update(updated)


def _annotation(obj: Obj, key: str) -> str:
    return str((obj["metadata"].get("annotations") or {}).get(key) or "")
