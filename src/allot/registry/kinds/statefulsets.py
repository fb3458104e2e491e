"""StatefulSet: serving details, a new StatefulSet's status, ``kubectl get sts`` columns
(upstream's ``printStatefulSet``), defaulting and validation."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.registry.kinds.workloadcolumns import CONTAINERS, IMAGES, template_containers
from allot.types import Obj
from allot.validation import apps
from allot.validation.objects import KindRules


def _cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = template_containers(spec.get("template"))
    return [
        obj["metadata"]["name"],
        f"{status.get('readyReplicas') or 0}/{spec.get('replicas') or 0}",
        age(obj, now),
        names,
        images,
    ]


def _empty_status(obj: Obj) -> None:
    """``PrepareForCreate``: a client's status is dropped (``replicas`` and
    ``availableReplicas`` are always written)."""
    obj["status"] = {"availableReplicas": 0, "replicas": 0}


STRATEGIES = (
    KindStrategy(
        "StatefulSet",
        "statefulset",
        short_names=("sts",),
        categories=("all",),
        subresources=("status", "scale"),
        rules=KindRules(
            defaults=apps.default_stateful_set,
            validate=lambda obj, context: apps.validate_stateful_set(obj),
            validate_update=lambda new, old, context: apps.validate_stateful_set_update(new, old),
            validate_status=lambda new, old, context: apps.validate_stateful_set_status(new, old),
        ),
        initial_status=_empty_status,
        table=Table(
            [
                NAME,
                column("Ready", "Number of the pod with ready state"),
                AGE,
                CONTAINERS,
                IMAGES,
            ],
            _cells,
        ),
    ),
)
