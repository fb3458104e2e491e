"""ControllerRevision: ``kubectl get controllerrevisions`` columns (upstream's
``printControllerRevision``: the controller as ``statefulset.apps/web``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import apps
from allot.validation.objects import KindRules


def _controller(obj: Obj) -> str:
    for reference in obj["metadata"].get("ownerReferences") or []:
        if reference.get("controller"):
            group = str(reference.get("apiVersion", "")).rpartition("/")[0]
            kind = str(reference.get("kind", "")).lower()
            qualified = f"{kind}.{group}" if group else kind
            return f"{qualified}/{reference.get('name', '')}"
    return "<none>"


def _cells(obj: Obj, now: dt.datetime) -> list[Any]:
    return [obj["metadata"]["name"], _controller(obj), int(obj.get("revision") or 0), age(obj, now)]


STRATEGIES = (
    KindStrategy(
        "ControllerRevision",
        "controllerrevision",
        rules=KindRules(
            validate=lambda obj, context: apps.validate_controller_revision(obj),
            validate_update=lambda new, old, context: apps.validate_controller_revision_update(
                new, old
            ),
        ),
        table=Table(
            [
                NAME,
                column("Controller", "Controller of the object"),
                column(
                    "Revision",
                    "Revision indicates the revision of the state represented by Data.",
                    kind="integer",
                ),
                AGE,
            ],
            _cells,
        ),
    ),
)
