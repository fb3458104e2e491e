"""What the workload controllers share: one controller for every cluster, owner references,
pods from templates.

vCluster gives each tenant its own kube-controller-manager; allot runs each workload
controller (Deployment, ReplicaSet, StatefulSet, Job, CronJob) once for the host and every
tenant cluster: its keys carry the cluster, and :class:`ClusterContexts` gives the context
to read and write one cluster. In a tenant cluster the writes are admitted as that tenant's
own controller service account (``system:serviceaccount:kube-system:<controller>``), not as
the platform, so the tenant guard's host dry run, the entitlement policies and the quotas
judge a pod a ReplicaSet creates exactly as a pod the tenant creates itself; on the host
they are the platform's controllers' writes. Used by the workload controllers in
:mod:`allot.controllers`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import NamedTuple

from allot.api.documents import clone_document
from allot.controllers.context import ControllerContext
from allot.registry import HOST_CLUSTER
from allot.store import WatchEvent
from allot.types import Obj


class WorkloadKey(NamedTuple):
    """A workload controller's work key: one object of one cluster."""

    cluster: str
    namespace: str
    name: str


def service_account(controller: str) -> str:
    """The user kube-controller-manager's ``controller`` writes as (its service account)."""
    return f"system:serviceaccount:kube-system:{controller}"


class ClusterContexts:
    """A :class:`ControllerContext` per cluster for one workload controller; the host's
    writes are the platform's, a tenant's are the tenant's ``controller`` account's."""

    def __init__(
        self,
        host: ControllerContext,
        controller: str,
        is_workload_cluster: Callable[[str], bool] | None = None,
    ) -> None:
        self.host = host
        self.user = service_account(controller)
        self._serves = is_workload_cluster or (lambda cluster: True)
        self._contexts: dict[str, ControllerContext] = {HOST_CLUSTER: host}

    def serves(self, cluster: str) -> bool:
        """Whether the controller runs in ``cluster`` (the host and every tenant)."""
        return cluster == HOST_CLUSTER or self._serves(cluster)

    def __call__(self, cluster: str) -> ControllerContext:
        context = self._contexts.get(cluster)
        if context is None:
            host = self.host
            context = ControllerContext(cluster, host.store, host.handlers, host.clock, self.user)
            self._contexts[cluster] = context
        return context

    def forget(self, cluster: str) -> None:
        """Drop a removed cluster's context."""
        if cluster != HOST_CLUSTER:
            self._contexts.pop(cluster, None)

    def keys(self, kind: str, keep: Callable[[Obj], bool] = lambda obj: True) -> list[Hashable]:
        """A key for every stored ``kind`` object (that ``keep`` accepts) of every cluster
        the controller serves: a controller's initial keys."""
        return [
            WorkloadKey(cluster, obj["metadata"].get("namespace") or "", obj["metadata"]["name"])
            for cluster in self.host.store.clusters()
            if self.serves(cluster)
            for obj in self(cluster).scan(kind)
            if keep(obj)
        ]

    def read(self, key: WorkloadKey, kind: str) -> tuple[ControllerContext, Obj] | None:
        """The context of the key's cluster and a copy of its ``kind`` object; None when the
        object is gone, or the cluster is (its context is then forgotten)."""
        if not self.serves(key.cluster):  # a tenant removed meanwhile
            self.forget(key.cluster)
            return None
        context = self(key.cluster)
        stored = context.get(kind, key.namespace, key.name)
        return None if stored is None else (context, stored)


def event_key(event: WatchEvent) -> WorkloadKey:
    metadata = event.object["metadata"]
    return WorkloadKey(event.cluster, metadata.get("namespace") or "", metadata["name"])


def controller_ref(owner: Obj) -> Obj:
    """The owner reference a controller puts on what it creates (``metav1.NewControllerRef``)."""
    metadata = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": metadata["name"],
        "uid": metadata["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Obj) -> Obj | None:
    """The owner reference marked ``controller: true`` (``metav1.GetControllerOf``)."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def owner_key(event: WatchEvent, kind: str) -> WorkloadKey | None:
    """The key of the ``kind`` object controlling an event's object, if one does."""
    ref = controller_of(event.object)
    if ref is None or ref.get("kind") != kind:
        return None
    namespace = event.object["metadata"].get("namespace") or ""
    return WorkloadKey(event.cluster, namespace, ref["name"])


def is_controlled_by(obj: Obj, owner: Obj) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == owner["metadata"].get("uid")


def pod_from_template(
    owner: Obj,
    template: Obj,
    name: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    """A pod of ``owner`` made from a pod template (upstream's ``GetPodFromTemplate``):
    the template's labels, annotations, finalizers and spec, the owner as its controller,
    named ``name`` or generated from ``<owner>-``. ``labels`` and ``annotations`` are
    added to the template's (the controller's own, such as the pod-template hash)."""
    template_metadata = template.get("metadata") or {}
    metadata: Obj = {
        "namespace": owner["metadata"].get("namespace"),
        "labels": {**(template_metadata.get("labels") or {}), **(labels or {})},
        "ownerReferences": [controller_ref(owner)],
    }
    merged_annotations = {**(template_metadata.get("annotations") or {}), **(annotations or {})}
    if merged_annotations:
        metadata["annotations"] = merged_annotations
    if template_metadata.get("finalizers"):
        metadata["finalizers"] = list(template_metadata["finalizers"])
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = f"{owner['metadata']['name']}-"
    if not metadata["labels"]:
        del metadata["labels"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": clone_document(template.get("spec") or {}),
    }
