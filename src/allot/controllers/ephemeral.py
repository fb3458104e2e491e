"""The ephemeral volume controller (upstream's ``pkg/controller/volume/ephemeral``): for
each generic ephemeral volume of a pod (``volumes[].ephemeral.volumeClaimTemplate``) it
creates the PersistentVolumeClaim ``<pod>-<volume>`` from the template (its labels,
annotations and spec), controlled by the pod, so the claim is bound and provisioned like
any other and goes with the pod (garbage collection). A claim of that name that the pod
does not control is not touched: the pod gets Event ``FailedBinding`` ``PVC ns/name was
not created for the pod`` and the scheduler keeps it waiting. Only pods with such volumes
are looked at. One instance serves the host and every tenant cluster; built by
:mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.controllers import volumebinding as vb
from allot.controllers.workloads import ClusterContexts, WorkloadKey, controller_ref, event_key
from allot.store import WatchEvent
from allot.store.errors import AlreadyExists

MANAGER = "ephemeral-volume-controller"


class EphemeralVolumeController:
    name = "ephemeral-volume"
    watches = frozenset({"pods"})

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.type == "DELETED" or not self.contexts.serves(event.cluster):
            return []
        volumes = (event.object.get("spec") or {}).get("volumes")
        if not volumes or not any(v.get("ephemeral") is not None for v in volumes):
            return []
        return [event_key(event)]

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("Pod", lambda pod: bool(vb.ephemeral_claims(pod)))

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, "Pod")
        if found is None:
            return
        context, pod = found
        if pod["metadata"].get("deletionTimestamp"):
            return
        namespace = pod["metadata"].get("namespace") or ""
        for name, template in vb.ephemeral_claims(pod):
            existing = context.peek("PersistentVolumeClaim", namespace, name)
            if existing is not None:
                owners = existing["metadata"].get("ownerReferences") or []
                if not any(o.get("uid") == pod["metadata"]["uid"] for o in owners):
                    message = f"PVC {namespace}/{name} was not created for the pod"
                    context.event(pod, "Warning", "FailedBinding", message, MANAGER)
                continue
            metadata = template.get("metadata") or {}
            claim = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    **{k: metadata[k] for k in ("labels", "annotations") if metadata.get(k)},
                    "name": name,
                    "namespace": namespace,
                    "ownerReferences": [controller_ref(pod)],
                },
                "spec": dict(template.get("spec") or {}),
            }
            try:
                context.create("PersistentVolumeClaim", claim, MANAGER)
            except AlreadyExists:
                continue
