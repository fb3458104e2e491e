"""``meta.k8s.io/v1`` Tables: the columns ``kubectl get`` prints, per resource.

kubectl never formats cells itself, so the server does: each kind's strategy module
(:mod:`allot.registry.kinds`) holds its column set and cell logic, as upstream's
``printers.go`` does (claims ``NAME STATE AGE``, pods ``NAME READY STATUS RESTARTS AGE``
plus wide columns, ...); CRDs get their ``additionalPrinterColumns`` (or NAME and AGE, even
where a CRD's plural is also a built-in one's, such as Volcano's ``jobs``). Rows carry
``PartialObjectMetadata`` (or the full object with ``includeObject=Object``) because kubectl
reads namespaces and labels from there. Called by the list, get and watch handlers.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import table_for
from allot.registry.kinds.columns import AGE, NAME, Cells, age, column, human_duration
from allot.registry.resources import ServedResource
from allot.types import Obj


def _default_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    return [obj["metadata"]["name"], age(obj, now)]


def printer_columns(custom: tuple[tuple[str, str, str], ...]) -> tuple[list[Obj], Cells]:
    """A CRD's ``additionalPrinterColumns`` (simple ``.a.b`` JSON paths) after the name."""
    columns = [NAME] + [column(name, f"{name} ({path})", kind=kind) for name, kind, path in custom]

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        values: list[Any] = [obj["metadata"]["name"]]
        for _, kind, path in custom:
            value = _json_path(obj, path)
            if kind == "date" and isinstance(value, str):
                moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
                value = human_duration((now - moment).total_seconds())
            elif isinstance(value, list):
                value = ",".join(str(v) for v in value)
            values.append("<none>" if value is None else value)
        return values

    return columns, cells


def _json_path(obj: Any, path: str) -> Any:
    """``.a.b``, ``.a[*].b`` and ``.a[0]`` paths, as printer columns use them."""
    values: list[Any] = [obj]
    for part in path.strip(".").split("."):
        name, _, index = part.partition("[")
        found = []
        for value in values:
            value = value.get(name) if isinstance(value, dict) and name else value
            if index and isinstance(value, list):
                selected = value if index == "*]" else value[int(index[:-1]) : int(index[:-1]) + 1]
                found += selected
            elif value is not None:
                found.append(value)
        values = found
    if not values:
        return None
    return values if "[*]" in path else values[0]


def table(
    resource: ServedResource,
    objects: list[Obj],
    now: dt.datetime,
    *,
    include_object: str,
    resource_version: str = "",
    continue_token: str = "",
) -> Obj:
    """The Table of ``objects`` of ``resource``: a custom resource's printer columns (or
    NAME and AGE), a built-in one's strategy columns."""
    if resource.columns:
        columns, cells = printer_columns(resource.columns)
    else:
        known = None if resource.custom else table_for(resource.plural)
        columns, cells = (known.columns, known.cells) if known else ([NAME, AGE], _default_cells)
    rows = []
    for obj in objects:
        row: Obj = {"cells": cells(obj, now)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata", {}),
            }
        rows.append(row)
    metadata: Obj = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    }
