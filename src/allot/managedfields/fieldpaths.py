"""Field paths and field sets, and their ``fieldsV1`` encoding.

A path is a tuple of path elements, each kept in its serialized form, the keys of a
``fieldsV1`` object: ``f:<name>`` (a field of a map or struct), ``k:<json>`` (an item of a
list keyed by its map keys, sorted by key name), ``v:<json>`` (an item of a set) and
``i:<n>`` (an index, only for sets read back from elsewhere). A field set is a
``frozenset`` of paths, its members; the path of a parent that is not itself a member is
implied. Encoded, a member with children carries ``".": {}``, a member without children is
``{}``, as structured-merge-diff writes them. Conflicts print paths the way upstream's
``fieldpath.Path.String`` does: ``.spec.containers[name="app"].image``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

Path = tuple[str, ...]
FieldSet = frozenset[Path]
EMPTY: FieldSet = frozenset()


def go_json(value: Any) -> str:
    """Compact JSON as Go's encoder writes it (HTML-significant characters escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def field(name: str) -> str:
    return "f:" + name


def key_element(keys: Iterable[tuple[str, Any]]) -> str:
    """The element of a keyed list item from its (key, value) pairs."""
    return "k:" + go_json(dict(sorted(keys)))


def value_element(value: Any) -> str:
    return "v:" + go_json(value)


def decode(fields_v1: Mapping[str, Any] | None) -> FieldSet:
    """The members of a ``fieldsV1`` object (``ValueError`` when it is not one)."""
    if not fields_v1:
        return EMPTY
    members: set[Path] = set()
    _decode_into(fields_v1, (), members)
    return frozenset(members)


def _decode_into(tree: Mapping[str, Any], prefix: Path, members: set[Path]) -> None:
    if not isinstance(tree, Mapping):
        raise ValueError(f"fieldsV1 below {render(prefix) or 'the top'} is not an object")
    for element, child in tree.items():
        if element == ".":
            members.add(prefix)
            continue
        path = (*prefix, element)
        if child:
            _decode_into(child, path, members)
        else:
            members.add(path)


def encode(members: Iterable[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` object of a field set (keys sorted, as kubectl prints them)."""
    root, marked = _tree(members)
    return _finish(root, marked)


def _tree(members: Iterable[Path]) -> tuple[dict[str, Any], set[int]]:
    """The members as nested nodes, with the ids of the nodes that are members."""
    root: dict[str, Any] = {}
    marked: set[int] = set()
    for path in members:
        node = root
        for element in path:
            node = node.setdefault(element, {})
        marked.add(id(node))
    return root, marked


def _finish(node: dict[str, Any], marked: set[int]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if node and id(node) in marked:
        result["."] = {}
    for element in sorted(node):
        result[element] = _finish(node[element], marked)
    return result


def contains(fields_v1: Mapping[str, Any] | None, path: Path) -> bool:
    """Whether ``path`` is a member of an encoded set, without decoding it."""
    node: Any = fields_v1 or {}
    for element in path:
        if not isinstance(node, Mapping):
            raise ValueError(f"fieldsV1 at {render(path)} is not an object")
        node = node.get(element)
        if node is None:
            return False
    if not isinstance(node, Mapping):
        raise ValueError(f"fieldsV1 at {render(path)} is not an object")
    return not node or "." in node


def without_prefixes(members: FieldSet, prefixes: Iterable[Path]) -> FieldSet:
    """The members not under any of ``prefixes`` (upstream's recursive difference)."""
    prefixes = tuple(prefixes)
    if not prefixes or not members:
        return members
    return frozenset(p for p in members if not any(p[: len(x)] == x for x in prefixes))


def added_fields(before: Any, after: Any, prefix: Path = ()) -> list[Path]:
    """The paths of the fields of maps and structs that ``after`` has and ``before`` lacks
    (each added subtree once, lists not entered): what a server-side step such as a
    strategy's ``PrepareForCreate`` completed on a wire object."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping) or before is after:
        return []
    added: list[Path] = []
    for name, value in after.items():
        path = (*prefix, field(name))
        if name not in before:
            added.append(path)
        elif isinstance(value, Mapping):
            added += added_fields(before[name], value, path)
    return added


def only_under(members: FieldSet, prefix: Path) -> FieldSet:
    return frozenset(p for p in members if p[: len(prefix)] == prefix and len(p) > len(prefix))


def render(path: Path) -> str:
    """``.spec.ports[containerPort=80,protocol="TCP"]``, as conflicts print a path."""
    return "".join(_render_element(element) for element in path)


def _render_element(element: str) -> str:
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return "." + body
    if kind == "i:":
        return f"[{body}]"
    value = json.loads(body)
    if kind == "k:":
        return "[" + ",".join(f"{k}={_go_string(v)}" for k, v in value.items()) + "]"
    return f"[={_go_string(value)}]"


def _go_string(value: Any) -> str:
    """``value.ToString``: strings quoted, numbers and booleans bare."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(_go_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={_go_string(v)}" for k, v in value.items())
    return str(value)


def in_order(members: Iterable[Path]) -> list[Path]:
    """The members in upstream's iteration order: at each level the members first, then
    the children, each by path element order (fields, keys, values, indexes)."""
    root, marked = _tree(members)
    ordered: list[Path] = []
    _walk_in_order(root, (), marked, ordered)
    return ordered


def _walk_in_order(node: dict[str, Any], prefix: Path, marked: set[int], out: list[Path]) -> None:
    elements = sorted(node, key=element_order)
    out.extend((*prefix, e) for e in elements if id(node[e]) in marked)
    for element in elements:
        if node[element]:
            _walk_in_order(node[element], (*prefix, element), marked, out)


def element_order(element: str) -> tuple[Any, ...]:
    """A sort key that orders elements as ``PathElement.Compare`` does."""
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return (0, body.encode())
    if kind == "i:":
        return (3, int(body))
    value = json.loads(body)
    if kind == "k:":
        return (1, tuple((name.encode(), value_order(v)) for name, v in value.items()))
    return (2, value_order(value))


def value_order(value: Any) -> tuple[Any, ...]:
    """``value.Compare``: numbers, then strings, booleans, lists, maps, null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, value)
    if isinstance(value, str):
        return (1, value.encode())
    if isinstance(value, list):
        return (3, tuple(value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k.encode(), value_order(v)) for k, v in sorted(value.items())))
    return (5,)
