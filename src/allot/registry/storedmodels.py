"""The decoded models of the objects the handlers stored last, so that an object is decoded
once: the next write of it (its old object, for validation and admission), its binding
and its delete take the model its own write admitted instead of decoding the stored JSON
again (issue 30, item 4).

The model a write admitted is what the store holds but for the metadata the store and the
handlers set after admission (uid, resourceVersion, generation, managedFields), and for
the parts a strategy changed after it (a new pod's initial status, a binding's node and
condition): those are named ``stale`` and read again from the stored object when the
model is taken, a small decode of their own. An entry is used only while the store still
holds the very object it was made for (identity and resourceVersion), so a write that did
not go through the handlers, an undone transaction or a delete makes it miss, never
answer wrongly. At most :data:`LIMIT` entries, the oldest forgotten first. Used by
:mod:`allot.registry.handlers`.
"""

from __future__ import annotations

from typing import Any

from allot.api.base import ApiModel
from allot.registry.resources import ServedResource
from allot.types import Obj

LIMIT = 2048
"""Objects remembered: a pod's writes (create, binding, status) follow each other within
a few hundred writes of others even under the tenancy benchmark's load."""

Key = tuple[str, str, str, str]


class StoredModels:
    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._entries: dict[Key, tuple[Obj, ApiModel, tuple[str, ...]]] = {}

    def remember(
        self,
        cluster: str,
        resource: ServedResource,
        stored: Obj,
        model: ApiModel,
        stale: tuple[str, ...] = (),
    ) -> None:
        """``model`` is ``stored`` (the store's own object) but for its metadata and the
        ``stale`` top-level fields."""
        key = _key(cluster, resource, stored)
        self._entries.pop(key, None)
        self._entries[key] = (stored, model, stale)
        if len(self._entries) > self.limit:
            del self._entries[next(iter(self._entries))]

    def forget(self, cluster: str, resource: ServedResource, obj: Obj) -> None:
        self._entries.pop(_key(cluster, resource, obj), None)

    def model_of(self, cluster: str, resource: ServedResource, current: Obj) -> Any:
        """The model of ``current`` (the stored object), or None when none is remembered
        for this very version. A copy: its metadata and stale parts are its own."""
        entry = self._entries.get(_key(cluster, resource, current))
        if entry is None:
            return None
        stored, model, stale = entry
        if stored is not current or stored["metadata"].get("resourceVersion") != current[
            "metadata"
        ].get("resourceVersion"):
            return None
        fresh = model.model_copy()
        validator = type(model).__pydantic_validator__
        for name in ("metadata", *stale):
            validator.validate_assignment(fresh, name, current.get(name))
        return fresh


def _key(cluster: str, resource: ServedResource, obj: Obj) -> Key:
    metadata = obj["metadata"]
    return (cluster, resource.store.key, metadata.get("namespace") or "", metadata["name"])
