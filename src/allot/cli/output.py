"""``-o table|wide|json|yaml`` for every command that lists things, the way kubectl prints.

One flag and one printer for ``allot tenant list``, ``alerts``, ``audit`` and ``usage``:
``table`` (the default) and ``wide`` (more columns) are kubectl's plain columns, upper-case
headers, three spaces apart; ``json`` and ``yaml`` are a Kubernetes ``List`` (``apiVersion:
v1``, ``kind: List``, ``items``), so ``jq '.items[]'`` and ``yq`` work as on ``kubectl get
-o json``. Commands whose rows are not Kubernetes objects (audit entries, usage) list them
as plain items. ``csv`` stays available where a command offers it for spreadsheets.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from allot.types import Obj

OUTPUTS = ("table", "wide", "json", "yaml")


@dataclass(frozen=True)
class Column:
    """A table column: its header, how to read a cell from an item, and whether only
    ``-o wide`` shows it."""

    header: str
    cell: Callable[[Any], str]
    wide: bool = False


def add_output(parser: argparse.ArgumentParser, extra: Sequence[str] = ()) -> None:
    formats = (*OUTPUTS, *extra)
    parser.add_argument(
        "-o",
        "--output",
        choices=formats,
        default="table",
        help="output format: table, wide (more columns), json or yaml (a Kubernetes List)"
        + (f", or {', '.join(extra)}" if extra else ""),
    )


def add_report_output(parser: argparse.ArgumentParser) -> None:
    """``-o text|json`` of the commands that print a report rather than a list."""
    parser.add_argument(
        "-o",
        "--output",
        choices=["text", "json"],
        default="text",
        help="report format (json: Status objects and findings for machines)",
    )


def kube_list(items: Sequence[Any]) -> Obj:
    """Items as the ``List`` kubectl prints for ``get -o json`` across kinds: without
    ``metadata.managedFields``, which kubectl leaves out unless asked."""
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [_without_managed_fields(item) for item in items],
        "metadata": {"resourceVersion": ""},
    }


def _without_managed_fields(item: Any) -> Any:
    metadata = item.get("metadata") if isinstance(item, dict) else None
    if not isinstance(metadata, dict) or "managedFields" not in metadata:
        return item
    shown = {k: v for k, v in metadata.items() if k != "managedFields"}
    return {**item, "metadata": shown}


def emit(output: str, items: Sequence[Any], columns: Sequence[Column], empty: str) -> None:
    """Print ``items`` in ``output`` (one of ``OUTPUTS``); ``empty`` when a table has none."""
    if output == "json":
        print(json.dumps(kube_list(items), indent=2))
        return
    if output == "yaml":
        print(yaml.safe_dump(kube_list(items), sort_keys=False), end="")
        return
    if not items:
        print(empty, file=sys.stderr)
        return
    shown = [c for c in columns if output == "wide" or not c.wide]
    print(format_table([c.header for c in shown], [[c.cell(i) for c in shown] for i in items]))


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """kubectl's plain table: left-aligned columns three spaces apart, no trailing blanks."""
    table = [list(headers), *(list(r) for r in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    return "\n".join(
        "   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in table
    )
