"""The apiextensions controllers' part of a CustomResourceDefinition's status: its accepted
names and its ``NamesAccepted`` and ``Established`` conditions.

As kube-apiserver 1.36's ``NamingConditionController`` and ``EstablishingController``
(``apiextensions-apiserver/pkg/controller/status`` and ``.../establish``): a CRD whose
requested names differ from its accepted ones gets each name that no other CRD of its group
(in its cluster) has accepted, ``NamesAccepted`` ``True`` ``NoConflicts`` (or ``False`` with
``PluralConflict``, ``SingularConflict``, ``ShortNamesConflict``, ``KindConflict`` or
``ListKindConflict`` and ``"x" is already in use``), and ``Established`` ``False``
``Installing`` until the establishing step, one write later, sets it ``True``
``InitialNamesAccepted``. So ``kubectl wait --for condition=established crd/NAME`` works as
on a real cluster. The storage version is added to ``storedVersions`` when it changes
(upstream does it in the update itself). It runs for the host's and every tenant's CRDs.
Built by :mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.controllers.workloads import ClusterContexts, WorkloadKey, event_key
from allot.store import WatchEvent
from allot.types import Obj, rfc3339

CRDS = "customresourcedefinitions.apiextensions.k8s.io"
KIND = "CustomResourceDefinition"
MANAGER = "apiextensions-controllers"
RESOURCE_NAMES = ("plural", "singular")
KIND_NAMES = ("kind", "listKind")
REASONS = {
    "plural": "PluralConflict",
    "singular": "SingularConflict",
    "kind": "KindConflict",
    "listKind": "ListKindConflict",
}


class CrdStatusController:
    name = "crd-status"
    watches = frozenset({CRDS})  # the resources keys_for answers for

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.resource != CRDS or not self.contexts.serves(event.cluster):
            return []
        if event.type != "DELETED":
            return [event_key(event)]
        group = (event.object.get("spec") or {}).get("group")  # its names are free again
        return [
            WorkloadKey(event.cluster, "", crd["metadata"]["name"])
            for crd in self.contexts(event.cluster).scan(KIND)
            if (crd.get("spec") or {}).get("group") == group
        ]

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys(KIND)

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, KIND)
        if found is None:
            return
        context, crd = found
        if crd["metadata"].get("deletionTimestamp"):
            return
        peers = [
            c
            for c in context.scan(KIND)
            if c["metadata"]["name"] != crd["metadata"]["name"]
            and (c.get("spec") or {}).get("group") == (crd.get("spec") or {}).get("group")
        ]
        status = next_status(crd, peers, rfc3339(context.clock()))
        if status != crd.get("status"):
            crd["status"] = status
            context.write_status(KIND, crd, MANAGER)


def next_status(crd: Obj, peers: list[Obj], now: str) -> Obj:
    """The status after one step: naming (when the requested names are not all accepted),
    else establishing; the storage version among the stored ones."""
    status: Obj = dict(crd.get("status") or {})
    requested = dict(((crd.get("spec") or {}).get("names")) or {})
    accepted = dict(status.get("acceptedNames") or {"plural": "", "kind": ""})
    conditions = list(status.get("conditions") or [])
    if _named(requested) != _named(accepted):
        names, naming, established = _names_and_conditions(requested, accepted, peers)
        status["acceptedNames"] = names
        conditions = _set_condition(_set_condition(conditions, naming, now), established, now)
    elif _condition(conditions, "NamesAccepted").get("status") == "True":
        established = {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                       "message": "the initial names have been accepted"}  # fmt: skip
        conditions = _set_condition(conditions, established, now)
    if conditions:
        status["conditions"] = conditions
    stored = list(status.get("storedVersions") or [])
    for version in (crd.get("spec") or {}).get("versions") or []:
        if version.get("storage") and version.get("name") not in stored:
            stored.append(version.get("name"))
    status["storedVersions"] = stored
    return status


def _named(names: Obj) -> Obj:
    """The names as compared (empty lists and strings as absent)."""
    return {k: v for k, v in names.items() if v not in (None, "", [])}


def _names_and_conditions(requested: Obj, accepted: Obj, peers: list[Obj]) -> tuple[Obj, Obj, Obj]:
    """``calculateNamesAndConditions``: the names taken where free, and the conditions."""
    taken_resources: set[str] = set()
    taken_kinds: set[str] = set()
    for peer in peers:
        names = (peer.get("status") or {}).get("acceptedNames") or {}
        taken_resources.update(str(names.get(n) or "") for n in RESOURCE_NAMES)
        taken_resources.update(names.get("shortNames") or [])
        taken_kinds.update(str(names.get(n) or "") for n in KIND_NAMES)
    new = dict(accepted)
    naming: Obj = {"type": "NamesAccepted", "status": "Unknown"}
    # upstream's order: plural, singular, short names, kind, list kind; the last conflict
    # found is the one the condition names
    for name in RESOURCE_NAMES:
        naming = _take(name, requested, accepted, taken_resources, new, naming)
    short = _short_names(requested, accepted, taken_resources)
    if isinstance(short, str):
        naming = {**naming, "status": "False", "reason": "ShortNamesConflict", "message": short}
    else:
        new["shortNames"] = short
    for name in KIND_NAMES:
        naming = _take(name, requested, accepted, taken_kinds, new, naming)
    new["categories"] = requested.get("categories") or []
    new = {k: v for k, v in new.items() if k in ("plural", "kind") or v}  # Go's omitempty
    if naming["status"] == "Unknown":
        naming = {**naming, "status": "True", "reason": "NoConflicts",
                  "message": "no conflicts found"}  # fmt: skip
    established = {"type": "Established", "status": "False", "reason": "NotAccepted",
                   "message": "not all names are accepted"}  # fmt: skip
    if naming["status"] == "True":
        established = {**established, "reason": "Installing",
                       "message": "the initial names have been accepted"}  # fmt: skip
    return new, naming, established


def _take(name: str, requested: Obj, accepted: Obj, taken: set[str], new: Obj, naming: Obj) -> Obj:
    """Accept the requested ``name`` into ``new`` if it is free; the naming condition."""
    conflict = _conflict(requested.get(name) or "", accepted.get(name) or "", taken)
    if conflict:
        return {**naming, "status": "False", "reason": REASONS[name], "message": conflict}
    new[name] = requested.get(name) or ""
    return naming


def _conflict(requested: str, accepted: str, taken: set[str]) -> str:
    """``equalToAcceptedOrFresh``: why the name cannot be had, or ''."""
    if requested == accepted or requested not in taken:
        return ""
    return f'"{requested}" is already in use'


def _short_names(requested: Obj, accepted: Obj, taken: set[str]) -> list[str] | str:
    """The short names to accept, or the aggregated conflict message."""
    wanted, had = list(requested.get("shortNames") or []), list(accepted.get("shortNames") or [])
    if wanted == had:
        return had
    errors = [
        f'"{name}" is already in use'
        for name in wanted
        if name not in had
        and name not in (accepted.get("plural"), accepted.get("singular"))
        and name in taken
    ]
    if not errors:
        return wanted
    return errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"


def _condition(conditions: list[Obj], kind: str) -> Obj:
    return next((c for c in conditions if c.get("type") == kind), {})


def _set_condition(conditions: list[Obj], condition: Obj, now: str) -> list[Obj]:
    """``SetCRDCondition``: the transition time changes only with the status."""
    existing = _condition(conditions, condition["type"])
    if not existing:
        return [*conditions, {**condition, "lastTransitionTime": now}]
    stamp = existing.get("lastTransitionTime")
    if existing.get("status") != condition["status"] or not stamp:
        stamp = now
    updated = {**condition, "lastTransitionTime": stamp}
    return [updated if c.get("type") == condition["type"] else c for c in conditions]
