"""Comparing two answers to one request, after normalising what legitimately differs.

What differs between any two API servers, and is normalised away: uids (any UUID, also
inside messages and owner references), times (any RFC 3339 string: creation and deletion
timestamps, managedFields times, conditions), resourceVersions and continue tokens (each
server counts its own), the random suffix of a generated name (also in Table cells), and
a Table's clock cells (ages, durations). Everything else is compared: the status code, the
media type, the ``Warning`` headers and the whole body, a ``Status`` (reason, message,
details, causes) included. A request's ``ignore`` paths and ``view`` narrow the comparison
where the corpus says so (see :mod:`.corpus`): ``discovery:<group>`` keeps the resources
of one API group that both servers serve, ``resources`` the entries of a legacy discovery
document both list, ``openapi:<A>,<B>`` those component schemas.

:func:`differences` returns one line a differing leaf (``body.details.causes.0.message:
'x' != 'y'``); :func:`fingerprint` reduces them to their paths with list indexes as ``*``,
which is what ``explained.yaml`` records. Called by :mod:`.run`.
"""

from __future__ import annotations

import re
from typing import Any

from tests.conformance.corpus import Request
from tests.conformance.replay import Answer

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
COUNTED = {"resourceVersion": "<rv>", "continue": "<continue>"}
GENERATED_SUFFIX = 5
COLLECTION = re.compile(r"^(body\.items|body\.rows|body)\.\*(\..*)?$")
CLOCK_COLUMNS = {"Age", "Duration", "Last Schedule", "Last Seen", "First Seen"}
SHOWN = 6
VALUE_WIDTH = 160


def comparable(answer: Answer, request: Request) -> dict[str, Any]:
    """The parts of an answer that are compared, normalised."""
    body = normalise(answer.body)
    for path in request.ignore:
        body = without(body, path.split("."))
    return {
        "code": answer.code,
        "contentType": answer.content_type.replace(" ", ""),
        "warnings": [normalise(text) for text in answer.warnings],
        "body": body,
    }


def normalise(value: Any) -> Any:
    if isinstance(value, dict):
        value = _table_cells(value)
        normal = {key: _normal_field(key, item) for key, item in value.items()}
        _generated_name(normal)
        return normal
    if isinstance(value, list):
        return [normalise(item) for item in value]
    if isinstance(value, str):
        return TIME.sub("<time>", UUID.sub("<uid>", value))
    return value


def _normal_field(key: str, value: Any) -> Any:
    if key in COUNTED and isinstance(value, str) and value:
        return COUNTED[key]
    return normalise(value)


def _generated_name(metadata: dict[str, Any]) -> None:
    prefix, name = metadata.get("generateName"), metadata.get("name")
    if not (isinstance(prefix, str) and isinstance(name, str)):
        return
    if name.startswith(prefix) and len(name) == len(prefix) + GENERATED_SUFFIX:
        metadata["name"] = prefix + "<generated>"


def _table_cells(table: dict[str, Any]) -> dict[str, Any]:
    """A Table with its clock cells (ages, durations: :data:`CLOCK_COLUMNS` or type
    ``date``) as ``<age>`` and each row's generated name as in its object."""
    if table.get("kind") != "Table":
        return table
    columns = table.get("columnDefinitions") or []
    clocks = {
        index
        for index, column in enumerate(columns)
        if column.get("type") == "date" or column.get("name") in CLOCK_COLUMNS
    }
    rows = []
    for row in table.get("rows") or []:
        metadata = (row.get("object") or {}).get("metadata") or {}
        generated = dict(metadata)
        _generated_name(generated)
        cells = [
            "<age>" if index in clocks
            else generated["name"] if cell == metadata.get("name")
            else cell
            for index, cell in enumerate(row.get("cells") or [])
        ]  # fmt: skip
        rows.append({**row, "cells": cells})
    return {**table, "rows": rows}


def without(value: Any, path: list[str]) -> Any:
    """``value`` less the field at ``path`` (``*``: every key or index)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        keys = list(value) if head == "*" else [head]
        result = dict(value)
        for key in keys:
            if key in result:
                if rest:
                    result[key] = without(result[key], rest)
                else:
                    del result[key]
        return result
    if isinstance(value, list) and head == "*":
        return [without(item, rest) for item in value] if rest else []
    return value


# ---------------------------------------------------------------------------- views
def project(view: str, left: Any, right: Any) -> tuple[Any, Any]:
    """The parts of two bodies a view compares (both at once: discovery keeps the
    resources both serve)."""
    if not view:
        return left, right
    kind, _, argument = view.partition(":")
    if kind == "discovery":
        return _common_resources(
            _group_resources(left, argument), _group_resources(right, argument)
        )
    if kind == "resources":
        return _common_resources(_listed_resources(left), _listed_resources(right))
    if kind == "openapi":
        names = argument.split(",")
        return _schemas(left, names), _schemas(right, names)
    raise ValueError(f"unknown view {view!r}")


def _group_resources(document: Any, group: str) -> dict[str, Any]:
    """``version/resource`` → its entry, for one group of an aggregated discovery list."""
    found: dict[str, Any] = {}
    if not isinstance(document, dict):
        return found
    for entry in document.get("items") or []:
        if (entry.get("metadata") or {}).get("name", "") != group:
            continue
        for version in entry.get("versions") or []:
            for resource in version.get("resources") or []:
                found[f"{version.get('version')}/{resource.get('resource')}"] = resource
    return found


def _listed_resources(document: Any) -> dict[str, Any]:
    if not isinstance(document, dict):
        return {}
    return {str(item.get("name")): item for item in document.get("resources") or []}


def _common_resources(left: dict[str, Any], right: dict[str, Any]) -> tuple[Any, Any]:
    common = sorted(set(left) & set(right))
    return {name: left[name] for name in common}, {name: right[name] for name in common}


def _schemas(document: Any, names: list[str]) -> dict[str, Any]:
    if not isinstance(document, dict):
        return {"document": document}
    schemas = (document.get("components") or {}).get("schemas") or {}
    return {name: schemas.get(name) for name in names}


# -------------------------------------------------------------------- differences
def differences(left: Any, right: Any, path: str = "") -> list[tuple[str, str]]:
    """(path, ``left != right``) for every differing leaf."""
    if isinstance(left, dict) and isinstance(right, dict):
        found: list[tuple[str, str]] = []
        for key in sorted(set(left) | set(right), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in left:
                found.append((where, f"absent != {_shown(right[key])}"))
            elif key not in right:
                found.append((where, f"{_shown(left[key])} != absent"))
            else:
                found += differences(left[key], right[key], where)
        return found
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        found = []
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            found += differences(a, b, f"{path}.{index}")
        return found
    if left == right:
        return []
    return [(path, f"{_shown(left)} != {_shown(right)}")]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."


def fingerprint(found: list[tuple[str, str]]) -> list[str]:
    """The differing paths, list indexes as ``*``, sorted and without repeats. A list of
    items, rows or watch events counts as one path (``body.items``): whether two lists
    differ item by item or in length depends on what else the cluster holds."""
    paths = {re.sub(r"\.\d+(?=\.|$)", ".*", path) for path, _ in found}
    return sorted({COLLECTION.sub(r"\1", path) for path in paths})


def summary(found: list[tuple[str, str]]) -> list[str]:
    lines = [f"{path}: {text}" for path, text in found[:SHOWN]]
    if len(found) > SHOWN:
        lines.append(f"(and {len(found) - SHOWN} more)")
    return lines
