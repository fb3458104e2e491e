"""ReplicaSet: serving details, a new ReplicaSet's status, ``kubectl get rs`` columns
(upstream's ``printReplicaSet``), defaulting and validation."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.registry.kinds.workloadcolumns import (
    CONTAINERS,
    IMAGES,
    selector_column,
    selector_text,
    template_containers,
)
from allot.types import Obj
from allot.validation import apps
from allot.validation.objects import KindRules


def replica_cells(
    selector: Callable[[Any], str],
) -> Callable[[Obj, dt.datetime], list[Any]]:
    """The row of a ReplicaSet or a ReplicationController, whose selectors print apart
    (a ``LabelSelector``, a plain map)."""

    def cells(obj: Obj, now: dt.datetime) -> list[Any]:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        names, images = template_containers(spec.get("template"))
        return [
            obj["metadata"]["name"],
            int(spec.get("replicas") or 0),
            int(status.get("replicas") or 0),
            int(status.get("readyReplicas") or 0),
            age(obj, now),
            names,
            images,
            selector(spec.get("selector")),
        ]

    return cells


def empty_replica_status(obj: Obj) -> None:
    """``PrepareForCreate``: a client's status is dropped (``replicas`` is always written)."""
    obj["status"] = {"replicas": 0}


STRATEGIES = (
    KindStrategy(
        "ReplicaSet",
        "replicaset",
        short_names=("rs",),
        categories=("all",),
        subresources=("status", "scale"),
        rules=KindRules(
            defaults=apps.default_replica_set,
            validate=lambda obj, context: apps.validate_replica_set(obj),
            validate_update=lambda new, old, context: apps.validate_replica_set_update(new, old),
            validate_status=lambda new, old, context: apps.validate_replica_set_status(new, old),
        ),
        initial_status=empty_replica_status,
        table=Table(
            [
                NAME,
                column("Desired", "Replicas is the number of desired pods.", kind="integer"),
                column(
                    "Current",
                    "Replicas is the most recently observed number of non-terminating pods.",
                    kind="integer",
                ),
                column(
                    "Ready",
                    "The number of non-terminating pods targeted by this ReplicaSet with a "
                    "Ready Condition.",
                    kind="integer",
                ),
                AGE,
                CONTAINERS,
                IMAGES,
                selector_column("Selector is a label query over pods."),
            ],
            replica_cells(selector_text),
        ),
    ),
)
