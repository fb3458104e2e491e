"""The walks of structured-merge-diff over wire objects, guided by a :mod:`.schema`.

- :func:`field_set`: the fields a value sets (what an applied configuration claims);
- :func:`compare`: the fields added, modified and removed from one value to another
  (equal subtrees are skipped at C speed, so a write that changes one field costs that
  field);
- :func:`merge`: an applied configuration merged into the live object (list maps by
  key, sets by value, atomic parts replaced, upstream's item order);
- :func:`remove`: the value without the given fields (pruning what an applier dropped);
- :func:`named_members`: a set with the struct fields above its members made members
  too, which pruning compares with.

Values are plain JSON (dicts, lists, scalars); absent is :data:`MISSING`. Problems with
the value (duplicate keys in a list map, an item without any of its keys) raise
:class:`ShapeError` with upstream's text.
"""

from __future__ import annotations

from typing import Any

from allot.managedfields.fieldpaths import FieldSet, Path, key_element, render, value_element
from allot.managedfields.schema import DEDUCED, Atom


class ShapeError(Exception):
    """A value that does not fit its list type (upstream's typed conversion errors)."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def _granular(atom: Atom, value: Any) -> str:
    """How a value is walked: ``map``, ``list`` or ``leaf``."""
    if isinstance(value, dict):
        return "map" if atom.shape == "map" and not atom.atomic else "leaf"
    if isinstance(value, list):
        return "list" if atom.shape == "list" and atom.list_type != "atomic" else "leaf"
    return "leaf"


def item_element(atom: Atom, item: Any, where: Path) -> str:
    """The path element of a list item: by its map keys, or by value in a set."""
    if atom.list_type == "set":
        if isinstance(item, (dict, list)):
            raise ShapeError(
                f"{_at(where)}associative list without keys has an element that's a "
                f"{'map' if isinstance(item, dict) else 'list'} type"
            )
        return value_element(item)
    if not isinstance(item, dict):
        what = "a null element" if item is None else "non-map elements"
        raise ShapeError(f"{_at(where)}associative list with keys may not have {what}")
    pairs = []
    for key in atom.keys:
        if key in item:
            pairs.append((key, item[key]))
        elif key in atom.key_defaults:
            pairs.append((key, atom.key_defaults[key]))
    if atom.keys and not pairs:
        listed = "[" + " ".join(f'"{k}"' for k in atom.keys) + "]"
        raise ShapeError(
            f"{_at(where)}associative list with keys has an element that omits all key fields "
            f"{listed} (and doesn't have default values for any key fields)"
        )
    return key_element(pairs)


def _at(where: Path) -> str:
    return f"{render(where)}: " if where else ""


def _items(atom: Atom, items: list[Any], where: Path) -> list[tuple[str, Any]]:
    return [(item_element(atom, item, where), item) for item in items]


# ------------------------------------------------------------------ field sets
def field_set(value: Any, atom: Atom, *, strict: bool = False) -> FieldSet:
    """The members ``value`` sets; ``strict`` refuses duplicate keys (an applied
    configuration), otherwise duplicates are owned as whole items (a stored object)."""
    out: set[Path] = set()
    _set_of(value, atom, (), out, strict)
    return frozenset(out)


def _set_of(value: Any, atom: Atom, path: Path, out: set[Path], strict: bool) -> None:
    shape = _granular(atom, value)
    if shape == "leaf":
        if path:
            out.add(path)
    elif shape == "map":
        for name, child in value.items():
            child_atom, named = atom.child(name)
            child_path = (*path, "f:" + name)
            _set_of(child, child_atom, child_path, out, strict)
            if child is None or child == {} or not named:
                out.add(child_path)
    else:
        element = atom.element or DEDUCED
        seen: set[str] = set()
        duplicates: set[str] = set()
        pairs = _items(atom, value, path)
        for pe, _ in pairs:
            if pe in seen and strict:
                raise ShapeError(f"{_at(path)}duplicate entries for key {render((pe,))}")
            (duplicates if pe in seen else seen).add(pe)
        for pe, item in pairs:
            item_path = (*path, pe)
            if pe not in duplicates:
                _set_of(item, element, item_path, out, strict)
            out.add(item_path)


def named_members(members: FieldSet, atom: Atom) -> FieldSet:
    """``EnsureNamedFieldsAreMembers``: struct fields above members become members."""
    extra: set[Path] = set()
    for path in members:
        current = atom
        for depth, element in enumerate(path[:-1], start=1):
            if element.startswith("f:"):
                current, named = current.child(element[2:])
                if named:
                    extra.add(path[:depth])
            else:
                current = current.element or DEDUCED
    return members | extra if extra else members


# ------------------------------------------------------------------- compare
class Comparison:
    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added: set[Path] = set()
        self.modified: set[Path] = set()
        self.removed: set[Path] = set()


def compare(old: Any, new: Any, atom: Atom) -> Comparison:
    result = Comparison()
    _compare(old, new, atom, (), result)
    return result


def _compare(old: Any, new: Any, atom: Atom, path: Path, result: Comparison) -> None:
    if old is MISSING:
        _one_side(new, atom, path, result.added)
        return
    if new is MISSING:
        _one_side(old, atom, path, result.removed)
        return
    if old == new:
        return
    shape = _shape_of_pair(atom, old, new)
    if shape == "leaf":
        result.modified.add(path)
    elif shape == "map":
        old_map = old if isinstance(old, dict) else {}
        new_map = new if isinstance(new, dict) else {}
        for name in {**old_map, **new_map}:
            child_atom, _ = atom.child(name)
            _compare(
                old_map.get(name, MISSING),
                new_map.get(name, MISSING),
                child_atom,
                (*path, "f:" + name),
                result,
            )
    else:
        _compare_lists(old, new, atom, path, result)


def _one_side(value: Any, atom: Atom, path: Path, out: set[Path]) -> None:
    """Everything in a value present on one side only: added (or removed), containers
    included."""
    if path:
        out.add(path)
    if not value:
        return
    shape = _granular(atom, value)
    if shape == "map":
        for name, child in value.items():
            _one_side(child, atom.child(name)[0], (*path, "f:" + name), out)
    elif shape == "list":
        element = atom.element or DEDUCED
        for pe, item in _items(atom, value, path):
            _one_side(item, element, (*path, pe), out)


def _shape_of_pair(atom: Atom, old: Any, new: Any) -> str:
    shapes = {_granular(atom, v) for v in (old, new) if v is not MISSING and v is not None}
    if len(shapes) != 1:
        return "leaf"
    (shape,) = shapes
    if shape != "leaf" and all(v is MISSING or v is None or not v for v in (old, new)):
        return "leaf"  # empty on both sides: kept as a leaf (empty and null differ)
    return shape


def _compare_lists(old: Any, new: Any, atom: Atom, path: Path, result: Comparison) -> None:
    element = atom.element or DEDUCED
    grouped: dict[str, tuple[list[Any], list[Any]]] = {}
    for side, items in ((0, old), (1, new)):
        for pe, item in _items(atom, items if isinstance(items, list) else [], path):
            grouped.setdefault(pe, ([], []))[side].append(item)
    for pe, (olds, news) in grouped.items():
        item_path = (*path, pe)
        if len(olds) <= 1 and len(news) <= 1:
            _compare(
                olds[0] if olds else MISSING,
                news[0] if news else MISSING,
                element,
                item_path,
                result,
            )
        elif len(olds) >= 2 and len(news) >= 2:
            if olds != news:
                result.modified.add(item_path)
        elif len(olds) >= 2:
            if news:
                _compare(MISSING, news[0], element, item_path, result)
            result.removed.add(item_path)
        else:
            if olds:
                _compare(olds[0], MISSING, element, item_path, result)
            result.added.add(item_path)


# --------------------------------------------------------------------- merge
def merge(live: Any, config: Any, atom: Atom) -> Any:
    """The live value with the configuration merged in (the configuration wins)."""
    return _merge(live, config, atom, ())


def _merge(lhs: Any, rhs: Any, atom: Atom, path: Path) -> Any:
    if rhs is MISSING:
        return lhs
    if lhs is MISSING:
        if _granular(atom, rhs) == "list":
            _check_unique(atom, rhs, path)
        return rhs
    shape = _shape_of_pair(atom, lhs, rhs)
    if shape == "leaf":
        return rhs
    if rhs is None:
        return lhs
    if shape == "map":
        if lhs is None:
            return rhs
        out = dict(lhs)
        for name, value in rhs.items():
            child_atom, _ = atom.child(name)
            out[name] = _merge(lhs.get(name, MISSING), value, child_atom, (*path, "f:" + name))
        return out
    if lhs is None:
        _check_unique(atom, rhs, path)
        return rhs
    return _merge_lists(lhs, rhs, atom, path)


def _check_unique(atom: Atom, items: list[Any], path: Path) -> None:
    seen: set[str] = set()
    for pe, _ in _items(atom, items, path):
        if pe in seen:
            raise ShapeError(f"{_at(path)}duplicate entries for key {render((pe,))}")
        seen.add(pe)


def _merge_lists(lhs: list[Any], rhs: list[Any], atom: Atom, path: Path) -> list[Any]:
    """Items matched by path element; the order is upstream's: shared items in the
    configuration's order, the live object's own items kept where they were."""
    _check_unique(atom, rhs, path)
    element = atom.element or DEDUCED
    right = _items(atom, rhs, path)
    left = _items(atom, lhs, path)
    right_of = dict(right)
    left_of: dict[str, Any] = {}
    for pe, item in left:
        left_of[pe] = None if pe in left_of else item  # duplicates are not merged
    shared = [pe for pe, _ in right if pe in left_of]
    shared.reverse()
    next_shared = shared.pop() if shared else None
    merged: set[str] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(left) or ri < len(right):
        if li < len(left) and ri < len(right):
            pe = left[li][0]
            if pe == right[ri][0]:
                merged.add(pe)
                out.append(_merge(left_of[pe], right_of[pe], element, (*path, pe)))
                li, ri = li + 1, ri + 1
                next_shared = shared.pop() if shared else None
                continue
            if pe in right_of and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(left):
            pe, item = left[li]
            if pe not in right_of:
                out.append(item)
                li += 1
                continue
            if pe in merged:
                li += 1
        if ri < len(right):
            pe = right[ri][0]
            merged.add(pe)
            out.append(_merge(left_of.get(pe, MISSING), right_of[pe], element, (*path, pe)))
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop() if shared else None
    return out


# -------------------------------------------------------------------- remove
def remove(value: Any, members: FieldSet, atom: Atom) -> Any:
    """``RemoveItems``: the value without the given members (and what is under them)."""
    if not members:
        return value
    return _remove(value, _by_first(members), atom, ())


def _by_first(members: FieldSet | set[Path]) -> dict[str, tuple[bool, set[Path]]]:
    grouped: dict[str, tuple[bool, set[Path]]] = {}
    for path in members:
        if not path:
            continue
        exact, rest = grouped.get(path[0], (False, set()))
        if len(path) == 1:
            exact = True
        else:
            rest.add(path[1:])
        grouped[path[0]] = (exact, rest)
    return grouped


def _remove(value: Any, grouped: dict[str, tuple[bool, set[Path]]], atom: Atom, path: Path) -> Any:
    shape = _granular(atom, value)
    if shape == "leaf" or not value:
        return value
    if shape == "map":
        out = {}
        for name, child in value.items():
            exact, rest = grouped.get("f:" + name, (False, set()))
            if exact:
                continue
            if rest:
                child = _remove(child, _by_first(rest), atom.child(name)[0], (*path, "f:" + name))
            out[name] = child
        return out or None
    element = atom.element or DEDUCED
    items = []
    for pe, item in _items(atom, value, path):
        exact, rest = grouped.get(pe, (False, set()))
        if exact:
            continue
        if rest:
            item = _remove(item, _by_first(rest), element, (*path, pe))
        items.append(item)
    return items or None


# ----------------------------------------------------------- creates, encoded
def created_tree(value: Any, zero: Any, atom: Atom) -> dict[str, Any]:
    """The ``fieldsV1`` of what ``value`` adds to the empty object ``zero``: the encoded
    :func:`compare` of a create, built in one walk without paths (creates are most
    writes: pods, claims, events)."""
    node: dict[str, Any] = {}
    for name in sorted(value):
        child = value[name]
        before = zero.get(name, MISSING)
        child_atom = atom.child(name)[0]
        if before is MISSING:
            node["f:" + name] = _tree_of(child, child_atom)
        elif before is None:  # written as null: the field is there, its content is new
            if child is not None and child != before:
                below = _tree_of(child, child_atom)
                below.pop(".", None)
                node["f:" + name] = below
        elif child != before:
            if isinstance(child, dict) and _granular(child_atom, child) == "map":
                below = created_tree(child, before, child_atom)
                if below:
                    node["f:" + name] = below
            else:
                node["f:" + name] = {}
    return node


def _tree_of(value: Any, atom: Atom) -> dict[str, Any]:
    """A member and everything under it."""
    if not value:
        return {}
    shape = _granular(atom, value)
    children: dict[str, Any] = {}
    if shape == "map":
        for name in sorted(value):
            children["f:" + name] = _tree_of(value[name], atom.child(name)[0])
    elif shape == "list":
        element = atom.element or DEDUCED
        items = sorted(_items(atom, value, ()), key=lambda pair: pair[0])
        for index, (pe, item) in enumerate(items):
            duplicated = pe in children or (index + 1 < len(items) and items[index + 1][0] == pe)
            children[pe] = {} if duplicated else _tree_of(item, element)  # upstream owns a
            # duplicated key as the item alone
    return {".": {}, **children} if children else {}
