"""The scheduler's VolumeBinding plugin for one pod that mounts PersistentVolumeClaims.

As kube-scheduler's ``pkg/scheduler/framework/plugins/volumebinding``:

* PreFilter: a missing claim (``persistentvolumeclaim "data" not found``), one being
  deleted, or an unbound claim whose class binds at once (``pod has unbound immediate
  PersistentVolumeClaims``) makes the pod wait; a claim the scheduler already gave a node
  to and that is not yet bound makes it wait silently (PreBind waits for the binding);
* Filter: a bound claim's volume must admit the node (``node(s) had volume node affinity
  conflict``); an unbound claim that waits for its first consumer needs an Available
  volume that admits the node or a class that provisions (``node(s) didn't find
  available persistent volumes to bind``);
* PreBind: for each waiting claim, an Available volume that admits the chosen node is
  pre-bound to it (``claimRef``), or else the node is written on the claim
  (``volume.kubernetes.io/selected-node``) for its provisioner; the controller binds, and
  the pod is bound once its claims are.

Built per pod by :mod:`allot.controllers.scheduler` only for pods with
``persistentVolumeClaim`` volumes, so pods without them cost one dictionary lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from allot.api import core_v1 as corev1
from allot.controllers import volumebinding as vb
from allot.controllers.context import ControllerContext
from allot.types import Obj

MANAGER = "allot-scheduler"


@dataclass
class PodVolumes:
    context: ControllerContext
    namespace: str
    refusal: str = ""
    """Why no node can take the pod now (PreFilter), "" when none."""
    pending_binding: bool = False
    """A claim has its node and waits for the controller to bind it."""
    bound: list[tuple[str, Obj | None]] = field(default_factory=list)
    delayed: list[tuple[Obj, Obj]] = field(default_factory=list)
    """(claim, class) of unbound claims waiting for their first consumer."""
    _volumes: list[Obj] | None = None

    @classmethod
    def of(cls, context: ControllerContext, pod: Obj) -> PodVolumes | None:
        claims = vb.pod_claims(pod)
        if not claims:
            return None
        volumes = cls(context, pod["metadata"].get("namespace") or "")
        for name, ephemeral in claims:
            volumes._add(name, pod if ephemeral else None)
            if volumes.refusal:
                break
        return volumes

    def _add(self, name: str, ephemeral_of: Obj | None) -> None:
        claim = self.context.peek("PersistentVolumeClaim", self.namespace, name)
        if claim is None:
            self.refusal = (
                "waiting for ephemeral volume controller to create the persistentvolumeclaim "
                f'"{name}"'
                if ephemeral_of is not None
                else f'persistentvolumeclaim "{name}" not found'
            )
            return
        if ephemeral_of is not None and not any(
            o.get("uid") == ephemeral_of["metadata"].get("uid")
            for o in claim["metadata"].get("ownerReferences") or []
        ):
            pod = ephemeral_of["metadata"]["name"]
            self.refusal = (
                f"PVC {self.namespace}/{name} was not created for pod {self.namespace}/{pod} "
                "(pod is not owner)"
            )
            return
        if claim["metadata"].get("deletionTimestamp"):
            self.refusal = f'persistentvolumeclaim "{name}" is being deleted'
            return
        volume_name = (claim.get("spec") or {}).get("volumeName")
        bound = (claim.get("status") or {}).get("phase") == "Bound"
        if volume_name and bound:
            volume = self.context.peek("PersistentVolume", "", volume_name)
            if volume is None:
                self.refusal = f'persistentvolume "{volume_name}" not found'
            self.bound.append((name, volume))
            return
        class_name = vb.claim_class(claim)
        storage_class = self.context.peek("StorageClass", "", class_name) if class_name else None
        if vb.delays_binding(claim, storage_class):
            assert storage_class is not None
            self.delayed.append((claim, storage_class))
        elif vb.SELECTED_NODE in (claim["metadata"].get("annotations") or {}):
            self.pending_binding = True
        else:
            self.refusal = vb.UNBOUND_IMMEDIATE

    def problem(self, node: corev1.Node) -> str | None:
        """The node's reason to refuse the pod's volumes (Filter), None when it fits."""
        for _, volume in self.bound:
            if volume is not None and not vb.admits(volume, node):
                return vb.NODE_CONFLICT
        if self.delayed:
            if self._volumes is None:  # once per pod, not per node
                self._volumes = self.context.scan("PersistentVolume")
            volumes = self._volumes
            for claim, storage_class in self.delayed:
                provisions = storage_class.get("provisioner") != "kubernetes.io/no-provisioner"
                if not provisions and vb.best_volume(claim, volumes, node) is None:
                    return vb.NO_VOLUME_TO_BIND
        return None

    def select(self, node: corev1.Node) -> bool:
        """PreBind for each claim waiting for its first consumer: pre-bind the smallest
        Available volume that admits the node (its ``claimRef``), else write the node on
        the claim for its provisioner (``selected-node``). True when a claim was waiting:
        the pod then waits for the controller to bind its claims."""
        chosen: set[str] = set()
        for claim, _ in self.delayed:
            free = [
                v
                for v in self.context.scan("PersistentVolume")
                if v["metadata"]["name"] not in chosen and not (v.get("spec") or {}).get("claimRef")
            ]
            volume = vb.best_volume(claim, free, node)
            if volume is not None:
                chosen.add(volume["metadata"]["name"])
                self._prebind(volume, claim)
            else:
                self._select_node(claim, node.metadata.name or "")
        return bool(self.delayed)

    def _prebind(self, volume: Obj, claim: Obj) -> None:
        latest = self.context.get("PersistentVolume", "", volume["metadata"]["name"])
        if latest is None:
            return
        latest["metadata"].setdefault("annotations", {})[vb.BOUND_BY_CONTROLLER] = "yes"
        latest["spec"]["claimRef"] = vb.claim_ref(claim)
        self.context.update("PersistentVolume", latest, MANAGER)

    def _select_node(self, claim: Obj, node: str) -> None:
        name = claim["metadata"]["name"]
        latest = self.context.get("PersistentVolumeClaim", self.namespace, name)
        if latest is not None:
            latest["metadata"].setdefault("annotations", {})[vb.SELECTED_NODE] = node
            self.context.update("PersistentVolumeClaim", latest, MANAGER)
