"""The TTL-after-finished controller: a finished Job with ``ttlSecondsAfterFinished`` is
deleted that many seconds after it finished.

As kube-controller-manager 1.36's ``ttl-after-finished-controller``
(``pkg/controller/ttlafterfinished``): the finish time is the ``Complete`` or ``Failed``
condition's ``lastTransitionTime``; when it has passed by the TTL (on the context's
clock) the Job is deleted with foreground propagation and a uid precondition, so its
pods go with it; before that the controller asks to be called again when it expires
(``RetryLater``). Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable

from allot.controllers.jobrules import parse_time
from allot.controllers.runtime import RetryLater
from allot.controllers.workloads import ClusterContexts, WorkloadKey, event_key
from allot.store import WatchEvent
from allot.store.errors import Conflict
from allot.types import Obj

JOBS = "jobs.batch"


def finish_time(job: Obj) -> dt.datetime | None:
    """When the Job finished: its Complete or Failed condition's transition time."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime"))
    return None


def expires_at(job: Obj) -> dt.datetime | None:
    """When a finished Job with a TTL is due for deletion (None: never)."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    finished = finish_time(job)
    if ttl is None or finished is None or job["metadata"].get("deletionTimestamp"):
        return None
    return finished + dt.timedelta(seconds=int(ttl))


class TtlAfterFinishedController:
    name = "ttl-after-finished"
    watches = frozenset({JOBS})  # the resources keys_for answers for

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.resource != JOBS or event.type == "DELETED":
            return []
        if not self.contexts.serves(event.cluster) or expires_at(event.object) is None:
            return []
        return [event_key(event)]

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("Job", lambda job: expires_at(job) is not None)

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, "Job")
        expiry = expires_at(found[1]) if found is not None else None
        if found is None or expiry is None:
            return
        context, job = found
        remaining = (expiry - context.clock()).total_seconds()
        if remaining > 0:
            raise RetryLater(remaining)
        options = {
            "propagationPolicy": "Foreground",
            "preconditions": {"uid": job["metadata"].get("uid")},
        }
        try:
            context.delete("Job", key.namespace, key.name, options)
        except Conflict:
            return  # replaced by another Job of that name meanwhile
