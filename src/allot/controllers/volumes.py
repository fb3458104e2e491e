"""PersistentVolume phases: a new volume becomes ``Available``.

Upstream's persistent volume controller (``pkg/controller/volume/persistentvolume``)
binds claims to volumes and reclaims released ones; its first step on a volume that no
claim is bound to is to mark it ``Available`` (``syncVolume``, with
``lastPhaseTransitionTime``). allot binds no claim (claims stay ``Pending``: see the
conformance ledger), so this controller does that first step only: a volume created
``Pending`` is written ``Available``, in the host and every tenant cluster. Built by
:mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.controllers.workloads import ClusterContexts, WorkloadKey, event_key
from allot.store import WatchEvent
from allot.types import rfc3339

MANAGER = "persistentvolume-binder-controller"


class VolumePhaseController:
    name = "persistentvolume-phase"
    watches = frozenset({"persistentvolumes"})

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.type == "DELETED" or not self.contexts.serves(event.cluster):
            return []
        return [event_key(event)]

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("PersistentVolume")

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, "PersistentVolume")
        if found is None:
            return
        context, volume = found
        status = volume.get("status") or {}
        if status.get("phase", "Pending") != "Pending" or volume["metadata"].get(
            "deletionTimestamp"
        ):
            return
        volume["status"] = {
            **status,
            "phase": "Available",
            "lastPhaseTransitionTime": rfc3339(context.clock()),
        }
        context.update_status("PersistentVolume", volume, MANAGER)
