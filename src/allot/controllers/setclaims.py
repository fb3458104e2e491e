"""A StatefulSet's PersistentVolumeClaims from its ``volumeClaimTemplates``.

As upstream's ``stateful_set_utils.go`` and ``stateful_pod_control.go``: pod ``<set>-<n>``
mounts claim ``<template>-<set>-<n>`` under the template's name (replacing a pod volume of
that name); the claim is the template with the set selector's ``matchLabels`` added,
created before the pod (Events ``create Claim <claim> Pod <pod> in StatefulSet <set>
success``) and never deleted by the set, except as ``persistentVolumeClaimRetentionPolicy``
says through owner references the garbage collector follows (``whenDeleted: Delete``: the
claim is owned by the set; ``whenScaled: Delete``: the claim of a pod beyond the replicas
is owned by that pod, so it goes with it). The default, Retain/Retain, keeps every claim.
A claim being deleted holds its pod's creation back. Used by
:mod:`allot.controllers.statefulset`.
"""

from __future__ import annotations

from allot.controllers.context import ControllerContext
from allot.statuses import to_status
from allot.store.errors import AlreadyExists
from allot.types import Obj

MANAGER = "statefulset-controller"


def claim_name(template: Obj, set_name: str, ordinal: int) -> str:
    return f"{(template.get('metadata') or {}).get('name', '')}-{set_name}-{ordinal}"


def add_volumes(statefulset: Obj, pod: Obj, ordinal: int) -> None:
    """``updateStorage``: the pod mounts its claims under the templates' names."""
    templates = (statefulset.get("spec") or {}).get("volumeClaimTemplates") or []
    if not templates:
        return
    name = statefulset["metadata"]["name"]
    claimed = [
        {
            "name": (t.get("metadata") or {}).get("name"),
            "persistentVolumeClaim": {"claimName": claim_name(t, name, ordinal)},
        }
        for t in templates
    ]
    names = {v["name"] for v in claimed}
    spec = pod.setdefault("spec", {})
    spec["volumes"] = claimed + [v for v in spec.get("volumes") or [] if v.get("name") not in names]


class SetClaims:
    def __init__(self, context: ControllerContext, statefulset: Obj) -> None:
        self.context = context
        self.set = statefulset
        self.name: str = statefulset["metadata"]["name"]
        self.namespace: str = statefulset["metadata"].get("namespace") or ""
        spec = statefulset.get("spec") or {}
        self.templates: list[Obj] = spec.get("volumeClaimTemplates") or []
        policy = spec.get("persistentVolumeClaimRetentionPolicy") or {}
        self.when_deleted = policy.get("whenDeleted", "Retain")
        self.when_scaled = policy.get("whenScaled", "Retain")

    def ensure(self, ordinal: int, pod: str) -> bool:
        """Create the pod's missing claims; False when the pod must wait (a claim is
        being deleted, or its creation was refused)."""
        for template in self.templates:
            name = claim_name(template, self.name, ordinal)
            existing = self.context.peek("PersistentVolumeClaim", self.namespace, name)
            if existing is not None:
                if existing["metadata"].get("deletionTimestamp"):
                    return False
                continue
            if not self._create(self._claim(template, name, None), pod):
                return False
        return True

    def _claim(self, template: Obj, name: str, pod: Obj | None) -> Obj:
        metadata = dict(template.get("metadata") or {})
        selector = ((self.set.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        labels = {**(metadata.get("labels") or {}), **selector}
        metadata.update(name=name, namespace=self.namespace)
        if labels:
            metadata["labels"] = labels
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": metadata,
            "spec": dict(template.get("spec") or {}),
        }
        owners = self._owners(claim, pod, scaled_down=False)
        if owners:
            metadata["ownerReferences"] = owners
        return claim

    def _create(self, claim: Obj, pod: str) -> bool:
        name = claim["metadata"]["name"]
        try:
            self.context.create("PersistentVolumeClaim", claim, MANAGER)
        except AlreadyExists:
            return True
        except Exception as err:  # refused (quota, a policy): reported as upstream does
            message = to_status(err).message or str(err)
            self.context.event(
                self.set,
                "Warning",
                "FailedCreate",
                f"create Claim {name} for Pod {pod} in StatefulSet {self.name} failed error: "
                f"{message}",
                MANAGER,
            )
            return False
        self.context.event(
            self.set,
            "Normal",
            "SuccessfulCreate",
            f"create Claim {name} Pod {pod} in StatefulSet {self.name} success",
            MANAGER,
        )
        return True

    def retain(self, pod: Obj, ordinal: int, scaled_down: bool) -> None:
        """``updateClaimOwnerRefForSetAndPod`` for each of the pod's claims."""
        for template in self.templates:
            name = claim_name(template, self.name, ordinal)
            claim = self.context.peek("PersistentVolumeClaim", self.namespace, name)
            if claim is None or claim["metadata"].get("deletionTimestamp"):
                continue
            owners = self._owners(claim, pod, scaled_down)
            if owners == (claim["metadata"].get("ownerReferences") or []):
                continue
            latest = self.context.get("PersistentVolumeClaim", self.namespace, name)
            if latest is None:
                continue
            latest["metadata"]["ownerReferences"] = owners
            if not owners:
                del latest["metadata"]["ownerReferences"]
            self.context.update("PersistentVolumeClaim", latest, MANAGER)

    def _owners(self, claim: Obj, pod: Obj | None, scaled_down: bool) -> list[Obj]:
        """The claim's owner references under the policy: the set's while the set's
        deletion should take it, the pod's once the pod is scaled down and scaling
        should take it; other owners are kept."""
        owned_by_set = self.when_deleted == "Delete" and not (
            scaled_down and self.when_scaled == "Delete"
        )
        owned_by_pod = scaled_down and self.when_scaled == "Delete" and pod is not None
        theirs = {self.set["metadata"].get("uid"), (pod or {}).get("metadata", {}).get("uid")}
        owners = [
            o for o in claim["metadata"].get("ownerReferences") or [] if o.get("uid") not in theirs
        ]
        if owned_by_set:
            owners.append(_reference(self.set))
        if owned_by_pod and pod is not None:
            owners.append(_reference(pod))
        return owners


def _reference(owner: Obj) -> Obj:
    return {
        "apiVersion": owner.get("apiVersion") or "v1",
        "kind": owner.get("kind") or "Pod",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
