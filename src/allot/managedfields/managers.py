"""``metadata.managedFields``: who owns which fields, kept on every write.

Upstream's field manager in pure form. :func:`update` is a create, update or patch
(operation ``Update``): the fields the write added or changed become the writer's, taken
from whoever owned them; removed fields leave every owner. :func:`apply` is server-side
apply: the configuration is merged into the live object, the fields the applier applied
last time and no longer applies are removed unless someone else owns them, and changing a
field another manager owns is a conflict (:class:`ApplyConflicts`, 409) unless forced, which
takes it over; applying the value a field already has shares it. Entries are identified as
upstream identifies them: an applier by (manager, subresource), an updater by (manager,
apiVersion, subresource). An object that has no managed fields is not tracked by updates
(upstream's "skip non-applied"); its first apply gives its existing fields to
``before-first-apply``. The fields of ``apiVersion``, ``kind`` and the bookkeeping of
``metadata`` are never owned. Called by :mod:`allot.registry.handlers`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from allot.managedfields import fieldpaths
from allot.managedfields.fieldpaths import EMPTY, FieldSet, Path
from allot.managedfields.schema import NULL_FIELDS, VALUE_STRUCTS, Atom
from allot.managedfields.typed import (
    MISSING,
    ShapeError,
    compare,
    created_tree,
    field_set,
    merge,
    named_members,
    remove,
)

STRIPPED: FieldSet = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        *(
            ("f:metadata", "f:" + name)
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        ),
    }
)
"""Paths no manager owns (upstream's ``stripMetaManager``)."""

DECODE_ABOVE = 16
"""A write touching more paths than this decodes each entry instead of probing it."""


@dataclass
class Entry:
    """One managedFields entry; its field set is decoded only when a write needs it."""

    manager: str
    operation: str
    api_version: str
    subresource: str = ""
    time: str | None = None
    raw: dict[str, Any] | None = None
    _members: FieldSet | None = field(default=None, repr=False)

    @property
    def members(self) -> FieldSet:
        if self._members is None:
            self._members = fieldpaths.decode((self.raw or {}).get("fieldsV1"))
        return self._members

    @property
    def identity(self) -> tuple[str, str, str, str]:
        version = self.api_version if self.operation == "Update" else ""
        return (self.manager, self.operation, version, self.subresource)

    def owns_any(self, paths: set[Path] | FieldSet) -> bool:
        if self._members is not None or len(paths) > DECODE_ABOVE:
            return not self.members.isdisjoint(paths)
        encoded = (self.raw or {}).get("fieldsV1")
        return any(fieldpaths.contains(encoded, path) for path in paths)

    def extended(self, members: FieldSet, time: str) -> Entry:
        """This entry owning ``members`` too, written at ``time``; when it owns them
        already, its encoded fields are kept as they are."""
        if self._members is None and self.raw is not None and len(members) <= DECODE_ABOVE:
            encoded = self.raw.get("fieldsV1")
            if all(fieldpaths.contains(encoded, path) for path in members):
                return replace(self, time=time, raw={**self.raw, "time": time})
        return self.with_members(self.members | members, time)

    def with_members(self, members: FieldSet, time: str | None = None) -> Entry:
        return replace(self, raw=None, _members=members, time=time or self.time)

    def to_wire(self) -> dict[str, Any]:
        if self.raw is not None:
            return self.raw
        wire: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time:
            wire["time"] = self.time
        wire["fieldsType"] = "FieldsV1"
        wire["fieldsV1"] = fieldpaths.encode(self.members)
        if self.subresource:
            wire["subresource"] = self.subresource
        return wire

    def describe(self) -> str:
        """How a conflict names the manager (upstream's ``printManager``)."""
        text = _go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {_go_quote(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def sort_identity(self) -> str:
        """The JSON identifier upstream sorts conflicting managers by."""
        parts = [f'"manager":{fieldpaths.go_json(self.manager)}']
        parts.append(f'"operation":{fieldpaths.go_json(self.operation)}')
        if self.operation == "Update" and self.api_version:
            parts.append(f'"apiVersion":{fieldpaths.go_json(self.api_version)}')
        if self.subresource:
            parts.append(f'"subresource":{fieldpaths.go_json(self.subresource)}')
        return "{" + ",".join(parts) + "}"


def _go_quote(text: str) -> str:
    return (
        fieldpaths.go_json(text)
        .replace("\\u003c", "<")
        .replace("\\u003e", ">")
        .replace("\\u0026", "&")
    )


def read(wire: Iterable[Any] | None) -> list[Entry]:
    """The entries of an object's ``managedFields`` (malformed entries are dropped, as
    upstream resets fields it cannot decode)."""
    entries = []
    for item in wire or ():
        if not isinstance(item, dict) or (not item.get("manager") and not item.get("fieldsV1")):
            continue
        entries.append(
            Entry(
                str(item.get("manager") or ""),
                str(item.get("operation") or "Update"),
                str(item.get("apiVersion") or ""),
                str(item.get("subresource") or ""),
                item.get("time"),
                item,
            )
        )
    return entries


def write(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """The wire entries, in upstream's order: appliers first, then by time, manager,
    apiVersion and subresource."""
    ordered = sorted(
        entries,
        key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource),
    )
    return [e.to_wire() for e in ordered]


@dataclass(frozen=True)
class Write:
    """What one write is: who writes, through which version and subresource, when, the
    kind's schema, and which fields it cannot own (``ignored`` prefixes; for a
    subresource, only the fields under ``only``)."""

    manager: str
    api_version: str
    atom: Atom
    now: str
    subresource: str = ""
    ignored: tuple[Path, ...] = ()
    only: Path | None = None

    def owned(self, members: Iterable[Path]) -> FieldSet:
        """``members`` without what this write may not own (upstream's reset fields)."""
        only, ignored = self.only, self.ignored
        if only is None and not ignored:
            return frozenset(members)
        if (only is None or len(only) == 1) and all(len(x) == 1 for x in ignored):
            firsts = {x[0] for x in ignored}
            return frozenset(
                p for p in members if p and (only is None or p[0] == only[0]) and p[0] not in firsts
            )
        return frozenset(
            p
            for p in members
            if (only is None or p[: len(only)] == only)
            and not any(p[: len(x)] == x for x in ignored)
        )


class ApplyConflicts(Exception):
    """Applying would change fields other managers own."""

    def __init__(self, conflicts: list[tuple[Entry, Path]]) -> None:
        self.conflicts = conflicts
        super().__init__(conflict_message(conflicts))


def conflict_message(conflicts: list[tuple[Entry, Path]]) -> str:
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        return (
            f"Apply failed with 1 conflict: conflict with {entry.describe()}: "
            f"{fieldpaths.render(path)}"
        )
    lines = []
    last = None
    for entry, path in conflicts:
        if entry.sort_identity() != last:
            last = entry.sort_identity()
            lines.append(f"conflicts with {entry.describe()}:")
        lines.append(f"- {fieldpaths.render(path)}")
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


# -------------------------------------------------------------------- update
def update(
    entries: list[Entry], old: Any, new: Any, write_: Write, *, creating: bool
) -> list[Entry]:
    """The entries after a create, update or patch by ``write_.manager``."""
    if not entries and not creating:
        return entries
    if creating and not entries and write_.only is None:
        return _created(new, write_)
    atom = write_.atom
    before = empty_object(atom) if creating else with_value_structs(old, atom)
    comparison = compare(before, with_value_structs(new, atom), atom)
    changed = write_.owned(comparison.added | comparison.modified)
    touched = changed | write_.owned(comparison.removed)
    if not touched:
        return entries
    own = changed - STRIPPED if write_.manager else EMPTY
    mine = Entry(write_.manager, "Update", write_.api_version, write_.subresource)
    result = _without(entries, touched, mine.identity, own)
    if not own:
        return result
    for index, entry in enumerate(result):
        if entry.identity == mine.identity:
            result[index] = entry.extended(own, write_.now)
            return result
    result.append(mine.with_members(own, write_.now))
    return _capped(result)


MAX_UPDATERS = 10
ANCIENT = "ancient-changes"


def _capped(entries: list[Entry]) -> list[Entry]:
    """At most ten updater entries after an update: the oldest are merged into
    ``ancient-changes`` (one per apiVersion, with the time of the newest merged), as
    upstream's ``capManagersManager`` keeps managedFields short (appliers are not
    capped)."""
    updaters = [e for e in entries if e.operation == "Update"]
    if len(updaters) <= MAX_UPDATERS:
        return entries
    updaters.sort(key=lambda e: (e.time or "", e.sort_identity()))
    result = list(entries)
    count = len(updaters)
    for entry in updaters:
        if count <= MAX_UPDATERS:
            break
        bucket = Entry(ANCIENT, "Update", entry.api_version)
        if entry.identity == bucket.identity:
            continue
        result = [e for e in result if e is not entry]
        found = next((i for i, e in enumerate(result) if e.identity == bucket.identity), None)
        if found is None:
            result.append(bucket.with_members(entry.members, entry.time))
        else:
            members = result[found].members | entry.members
            result[found] = result[found].with_members(members, entry.time)
            count -= 1
    return result


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _with_last_applied(merged: Any, config: Any) -> Any:
    """kubectl's client-side annotation kept in step with its server-side applies, when
    the object has one (upstream's ``lastAppliedUpdater``): the applied configuration
    without the annotation, as Go's encoder writes it."""
    if not isinstance(merged, dict) or not isinstance(config, dict):
        return merged
    annotations = (merged.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED not in annotations:
        return merged
    applied = dict(config)
    metadata = dict(applied.get("metadata") or {})
    if isinstance(metadata.get("annotations"), dict):
        metadata["annotations"] = {
            k: v for k, v in metadata["annotations"].items() if k != LAST_APPLIED
        }
        applied["metadata"] = metadata
    text = fieldpaths.go_json(applied) + "\n"
    return {
        **merged,
        "metadata": {**merged["metadata"], "annotations": {**annotations, LAST_APPLIED: text}},
    }


def _created(new: Any, write_: Write) -> list[Entry]:
    """:func:`update` of a create with no entries yet, encoded in one walk."""
    tree = created_tree(new, empty_object(write_.atom), write_.atom)
    for prefix in (("f:apiVersion",), ("f:kind",), *write_.ignored):
        _drop_encoded(tree, prefix)
    metadata = tree.pop("f:metadata", None)
    if metadata:
        kept = {k: v for k, v in metadata.items() if k != "." and ("f:metadata", k) not in STRIPPED}
        if kept:
            tree["f:metadata"] = kept
    if not tree or not write_.manager:
        return []
    wire: dict[str, Any] = {
        "manager": write_.manager,
        "operation": "Update",
        "apiVersion": write_.api_version,
        "time": write_.now,
        "fieldsType": "FieldsV1",
        "fieldsV1": dict(sorted(tree.items())),
    }
    if write_.subresource:
        wire["subresource"] = write_.subresource
    return [
        Entry(write_.manager, "Update", write_.api_version, write_.subresource, write_.now, wire)
    ]


def _drop_encoded(tree: dict[str, Any], prefix: Path) -> None:
    """``tree`` (encoded fields) without what lies at ``prefix``; a parent left without
    children goes too, as it was no member by itself."""
    trail: list[tuple[dict[str, Any], str]] = []
    node = tree
    for element in prefix[:-1]:
        child = node.get(element)
        if not isinstance(child, dict):
            return
        trail.append((node, element))
        node = child
    if node.pop(prefix[-1], None) is None:
        return
    for parent, element in reversed(trail):
        if parent[element]:
            return
        del parent[element]


def _created_by_paths(new: Any, write_: Write) -> list[Entry]:
    atom = write_.atom
    comparison = compare(empty_object(atom), with_value_structs(new, atom), atom)
    own = write_.owned(comparison.added | comparison.modified) - STRIPPED
    if not own or not write_.manager:
        return []
    mine = Entry(write_.manager, "Update", write_.api_version, write_.subresource)
    return [mine.with_members(own, write_.now)]


def _without(
    entries: list[Entry],
    touched: FieldSet,
    writer: tuple[str, str, str, str] | None = None,
    kept: FieldSet = EMPTY,
) -> list[Entry]:
    """The entries without the touched fields; the ``writer``'s entry keeps ``kept``
    (what it is about to own again: a controller rewriting its own status fields
    leaves its entry undecoded)."""
    result = []
    for entry in entries:
        taken = touched - kept if kept and entry.identity == writer else touched
        if taken and entry.owns_any(taken):
            members = entry.members - taken
            if not members:
                continue
            entry = entry.with_members(members)
        result.append(entry)
    return result


def empty_object(atom: Atom) -> dict[str, Any]:
    """The empty object upstream compares a create with (value structs present)."""
    return _zero(atom, "") if atom.name else {}


def with_value_structs(obj: Any, atom: Atom) -> Any:
    """The object with the top-level structs Go always writes (``spec``, ``status``)
    present, so a first status write adds ``status.x``, not ``status`` itself."""
    if not atom.name or not isinstance(obj, dict):
        return obj
    missing = [
        name
        for name in VALUE_STRUCTS[""]
        if name not in obj and name in atom.fields and atom.fields[name].shape == "map"
    ]
    return {**obj, **{name: {} for name in missing}} if missing else obj


def _zero(atom: Atom, struct: str) -> dict[str, Any]:
    zero: dict[str, Any] = dict.fromkeys(NULL_FIELDS.get(struct, ()))
    for name in VALUE_STRUCTS.get(struct, ()):
        child = atom.fields.get(name)
        if child is not None and child.shape == "map":
            zero[name] = _zero(child, child.name)
    return zero


# --------------------------------------------------------------------- apply
def apply(
    entries: list[Entry],
    live: Any,
    config: Any,
    write_: Write,
    *,
    force: bool,
    last_applied: Any = None,
) -> tuple[Any, list[Entry], bool]:
    """Apply ``config`` over ``live`` (``MISSING`` for a create): the merged object, the
    entries, and whether the object changed. Raises :class:`ApplyConflicts`.

    ``last_applied`` is kubectl's client-side ``last-applied-configuration`` of the live
    object: for the manager ``kubectl``, conflicts on fields it holds with the live
    values are taken over, so moving from client-side to server-side apply does not
    conflict with ``kubectl-client-side-apply`` (upstream's ``lastAppliedManager``)."""
    creating = live is MISSING
    atom = write_.atom
    if not entries and not creating:
        first = replace(write_, manager="before-first-apply", subresource="")
        entries = update([], MISSING, live, first, creating=True)
    mine = Entry(write_.manager, "Apply", write_.api_version, write_.subresource)
    previous = next((e for e in entries if e.identity == mine.identity), None)
    others = [e for e in entries if e is not previous]
    applied = write_.owned(field_set(config, atom, strict=True))
    merged = merge(live, config, atom)
    if previous is not None and previous.members:
        managed = applied.union(*(e.members for e in others))
        merged = _prune(merged, previous.members, managed, atom)
    if creating:
        changed, removed = EMPTY, EMPTY
    else:
        comparison = compare(with_value_structs(live, atom), with_value_structs(merged, atom), atom)
        changed = write_.owned(comparison.added | comparison.modified)
        removed = write_.owned(comparison.removed)
    conflicts = _conflicts(others, changed)
    if conflicts and not force and write_.manager == "kubectl" and isinstance(last_applied, dict):
        allowed = _held_by_last_applied(last_applied, live, atom)
        conflicts = [(entry, path) for entry, path in conflicts if path not in allowed]
    if conflicts and not force:
        raise ApplyConflicts(conflicts)
    result = _without(others, changed | removed) if changed or removed else others
    unchanged = not creating and merged == live
    time = (previous.time if previous else None) if unchanged else write_.now
    own = applied - STRIPPED
    if own:
        result.append(mine.with_members(own, time))
    if write_.manager == "kubectl":
        merged = _with_last_applied(merged, config)
    return merged, result, not unchanged or merged != live


def _conflicts(others: list[Entry], changed: FieldSet) -> list[tuple[Entry, Path]]:
    if not changed:
        return []
    found: list[tuple[Entry, Path]] = []
    for entry in sorted(others, key=Entry.sort_identity):
        if entry.owns_any(changed):
            found.extend((entry, p) for p in fieldpaths.in_order(entry.members & changed))
    return found


def _held_by_last_applied(last_applied: dict[str, Any], live: Any, atom: Atom) -> FieldSet:
    """The fields of the last client-side applied configuration that still have its
    values in the live object."""
    try:
        members = field_set(last_applied, atom)
    except ShapeError:
        return EMPTY
    differing = compare(last_applied, live, atom)
    return members - differing.added - differing.modified - differing.removed


def _prune(merged: Any, last: FieldSet, managed: FieldSet, atom: Atom) -> Any:
    """Remove what the applier applied last time and no longer applies, unless another
    manager (or this configuration) owns it (upstream's ``prune``)."""
    last_named = named_members(last, atom)
    pruned = remove(merged, last_named, atom)
    merged_set = named_members(field_set(merged, atom), atom)
    kept = named_members(field_set(pruned, atom), atom) | named_members(managed, atom)
    pruned = remove(merged, merged_set - kept, atom)
    dangling = (merged_set - named_members(field_set(pruned, atom), atom)) & last_named
    return remove(merged, dangling, atom)
