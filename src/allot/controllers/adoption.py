"""Adopting and releasing what a workload selects, as upstream's ``ControllerRefManager``.

A controller owns the objects whose controller reference names it. An object its selector
matches and nobody controls is adopted (its controller reference added); an object it
controls that its selector no longer matches is released (the reference removed). An owner
being deleted adopts nothing. Used by the ReplicaSet, Deployment and StatefulSet
controllers for their pods and ReplicaSets.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Hashable

from allot.api.documents import clone_document
from allot.api.meta import selector_matches
from allot.controllers.context import ControllerContext
from allot.controllers.workloads import (
    ClusterContexts,
    WorkloadKey,
    controller_of,
    controller_ref,
    owner_key,
)
from allot.store import WatchEvent
from allot.types import Obj


def spec_selector(owner: Obj) -> Obj | None:
    """An owner's ``spec.selector`` (a ``metav1.LabelSelector``)."""
    selector: Obj | None = (owner.get("spec") or {}).get("selector")
    return selector


def owner_keys(
    contexts: ClusterContexts,
    event: WatchEvent,
    kind: str,
    selector_of: Callable[[Obj], Obj | None] = spec_selector,
) -> list[Hashable]:
    """The ``kind`` objects an event's object concerns: the one controlling it, or, for an
    orphan, every one in its namespace whose selector (``selector_of``, as a
    ``metav1.LabelSelector``) matches it (each may adopt it)."""
    owner = owner_key(event, kind)
    if owner is not None:
        return [owner]
    if event.type == "DELETED" or controller_of(event.object) is not None:
        return []
    metadata = event.object["metadata"]
    namespace, labels = metadata.get("namespace") or "", metadata.get("labels")
    return [
        WorkloadKey(event.cluster, namespace, owner["metadata"]["name"])
        for owner in in_namespace(contexts(event.cluster), kind, namespace)
        if selector_matches(selector_of(owner), labels)
    ]


def typed(obj: Obj, api_version: str, kind: str) -> Obj:
    """``obj`` with its type (the store keeps objects without ``apiVersion``/``kind``)."""
    return {**obj, "apiVersion": api_version, "kind": kind}


def claim(
    context: ControllerContext,
    owner: Obj,
    kind: str,
    candidates: list[Obj],
    manager: str,
) -> list[Obj]:
    """The candidates ``owner`` controls once orphans its selector matches are adopted and
    controlled objects it no longer matches are released (``ClaimPods``/``ClaimReplicaSets``).
    ``owner`` carries its type; candidates are of ``kind`` in its namespace."""
    selector = (owner.get("spec") or {}).get("selector")
    uid = owner["metadata"].get("uid")
    deleting = bool(owner["metadata"].get("deletionTimestamp"))
    claimed: list[Obj] = []
    for candidate in candidates:
        ref = controller_of(candidate)
        matches = selector_matches(selector, candidate["metadata"].get("labels"))
        if ref is not None and ref.get("uid") == uid:
            if matches:
                claimed.append(candidate)
            elif not deleting:  # an owner being deleted releases nothing
                _release(context, kind, candidate, uid, manager)
            continue
        if ref is not None or not matches or deleting:
            continue
        if candidate["metadata"].get("deletionTimestamp"):
            continue
        adopted = _adopt(context, kind, owner, candidate, manager)
        if adopted is not None:
            claimed.append(adopted)
    return claimed


def _adopt(
    context: ControllerContext, kind: str, owner: Obj, candidate: Obj, manager: str
) -> Obj | None:
    latest = context.get(kind, candidate["metadata"].get("namespace", ""), _name(candidate))
    if latest is None or controller_of(latest) is not None:
        return None
    refs = list(latest["metadata"].get("ownerReferences") or [])
    latest["metadata"]["ownerReferences"] = [*refs, controller_ref(owner)]
    return context.update(kind, latest, manager)


def _release(context: ControllerContext, kind: str, candidate: Obj, uid: str, manager: str) -> None:
    latest = context.get(kind, candidate["metadata"].get("namespace", ""), _name(candidate))
    if latest is None:
        return
    refs = [r for r in latest["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
    if refs:
        latest["metadata"]["ownerReferences"] = refs
    else:
        latest["metadata"].pop("ownerReferences", None)
    context.update(kind, latest, manager)


def _name(obj: Obj) -> str:
    name: str = obj["metadata"]["name"]
    return name


def in_namespace(context: ControllerContext, kind: str, namespace: str) -> list[Obj]:
    """Every ``kind`` object of a namespace (read-only store dicts)."""
    return context.scan_namespace(kind, namespace)


def ready_since(pod: Obj) -> dt.datetime | None:
    """When the pod's ``Ready`` condition last became ``True`` (None: not ready)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            stamp = condition.get("lastTransitionTime")
            if not stamp:
                return dt.datetime.min.replace(tzinfo=dt.UTC)
            return dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return None


def is_pod_available(pod: Obj, min_ready_seconds: int, now: dt.datetime) -> bool:
    """Ready for at least ``minReadySeconds`` (upstream's ``IsPodAvailable``)."""
    since = ready_since(pod)
    if since is None:
        return False
    return min_ready_seconds == 0 or since + dt.timedelta(seconds=min_ready_seconds) < now


def copy(obj: Obj) -> Obj:
    return clone_document(obj)
