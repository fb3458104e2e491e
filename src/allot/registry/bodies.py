"""Decoding request bodies: UTF-8 JSON (and YAML for patches), bounded in nesting and size.

Python's JSON and YAML decoders, and every later step that walks a document (copies, merges,
validation, encoding), recurse once per nesting level, so a body of ten thousand ``[`` used
to exhaust the stack and answer 500. kube-apiserver's decoders stop at 10,000 levels; allot
stops every request document at :data:`MAX_DEPTH` levels, far beyond any real object, with a
400. The walk that measures depth also counts values, which bounds YAML aliases that expand
to billions of nodes (or to a cycle) the way goyaml's "excessive aliasing" check does,
measuring each shared node once.
Bodies must be UTF-8 (Kubernetes' only JSON encoding); invalid bytes are a 400 where Go's
decoder would substitute U+FFFD. Called by ``app`` (create, update, delete options, access
reviews) and ``handlers`` (patches and their results).
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from allot.registry.errors import BadRequest

_DECIMAL = re.compile(r"-?[0-9]{1,19}")  # int64 has 19 digits; int() refuses 4,300+
MAX_DEPTH = 100
MAX_NODES = 1_000_000
_NOT_JSON = "the body of the request was not valid JSON"


def decode_json(raw: bytes) -> Any:
    """A JSON body, or ``BadRequest`` naming what is wrong with it."""
    text = _utf8(raw, _NOT_JSON)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise BadRequest(
            f"{_NOT_JSON}: {err.msg} at line {err.lineno} column {err.colno}"
        ) from None
    except RecursionError:
        raise _too_deep() from None
    _check_tree(document)
    return document


def decode_patch(raw: bytes) -> Any:
    """A patch body: JSON, else YAML (apply patches); empty means ``{}``."""
    text = _utf8(raw, "error decoding patch")
    if not text.strip():
        return {}
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = _yaml(text)
        check_nesting(document)  # YAML may share nodes through aliases
        return document
    except RecursionError:
        raise _too_deep() from None
    _check_tree(document)
    return document


def check_nesting(document: Any) -> None:
    """``BadRequest`` when ``document`` nests deeper than :data:`MAX_DEPTH` or, through YAML
    aliases, holds more than :data:`MAX_NODES` values. A shared (aliased) node is measured
    once and its size reused, so the check costs the document as sent, not as expanded: a
    few hundred bytes of nested anchors are refused at once. Iterative, never recursive."""
    measured: dict[int, tuple[int, int]] = {}  # id of a container -> (values, depth)
    open_nodes: set[int] = set()
    pending: list[tuple[Any, bool]] = [(document, False)]
    while pending:
        node, children_done = pending.pop()
        if not isinstance(node, dict | list) or (id(node) in measured and not children_done):
            continue
        children = list(node.values()) if isinstance(node, dict) else node
        if children_done:
            open_nodes.discard(id(node))
            measured[id(node)] = _measure(children, measured)
            continue
        if id(node) in open_nodes:  # an alias inside its own anchor: endless
            raise _too_deep()
        open_nodes.add(id(node))
        pending.append((node, True))
        pending.extend((child, False) for child in children if isinstance(child, dict | list))


def _check_tree(document: Any) -> None:
    """:func:`check_nesting` for a document without shared nodes (fresh from JSON): one
    visit per value, the faster walk for large bodies."""
    pending: list[tuple[Any, int]] = [(document, 1)]
    seen = 0
    while pending:
        node, depth = pending.pop()
        seen += 1
        if seen > MAX_NODES:
            raise BadRequest(f"the body of the request holds more than {MAX_NODES} values")
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > MAX_DEPTH:
            raise _too_deep()
        pending.extend((child, depth + 1) for child in children)


def _measure(children: list[Any], measured: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """Values and depth of a container whose container children are measured."""
    values, depth = 1 + len(children), 0
    for child in children:
        if isinstance(child, dict | list):
            child_values, child_depth = measured[id(child)]
            values += child_values - 1
            depth = max(depth, child_depth)
    if depth + 1 > MAX_DEPTH:
        raise _too_deep()
    if values > MAX_NODES:
        raise BadRequest(f"the body of the request holds more than {MAX_NODES} values")
    return values, depth + 1


def _utf8(raw: bytes, prefix: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadRequest(f"{prefix}: invalid UTF-8 at byte {err.start}") from None


def _yaml(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise BadRequest(f"error decoding patch: {err}") from None
    except RecursionError:
        raise _too_deep() from None


def _too_deep() -> BadRequest:
    return BadRequest(f"the body of the request nests deeper than {MAX_DEPTH} levels")


def go_json_type(value: object) -> str:
    """How Go's JSON decoder names a value's type in its errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def is_integer(text: str) -> bool:
    """An int64 written in ASCII decimal digits, as Go's ``strconv.ParseInt`` takes it."""
    return _DECIMAL.fullmatch(text) is not None and -(2**63) <= int(text) < 2**63


def is_count(text: str) -> bool:
    """A non-negative int64 in ASCII digits (``str.isdigit`` also takes ``²`` and ``٣``)."""
    return is_integer(text) and not text.startswith("-")
