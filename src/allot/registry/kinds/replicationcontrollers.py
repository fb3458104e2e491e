"""ReplicationController: serving details (short name ``rc``), a new controller's status,
``kubectl get rc`` columns (upstream's ``printReplicationController``), defaulting and
validation. The ReplicaSet controller runs them too (:mod:`allot.controllers.replicaset`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.registry.kinds.daemonsets import format_labels
from allot.registry.kinds.workloadcolumns import (
    CONTAINERS,
    IMAGES,
    selector_column,
    template_containers,
)
from allot.types import Obj
from allot.validation import apps
from allot.validation.objects import KindRules


def _cells(obj: Obj, now: dt.datetime) -> list[Any]:
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
        format_labels(spec.get("selector")),
    ]


def _empty_status(obj: Obj) -> None:
    """``PrepareForCreate``: a client's status is dropped (``replicas`` is always written)."""
    obj["status"] = {"replicas": 0}


STRATEGIES = (
    KindStrategy(
        "ReplicationController",
        "replicationcontroller",
        short_names=("rc",),
        categories=("all",),
        subresources=("status", "scale"),
        rules=KindRules(
            defaults=apps.default_replication_controller,
            validate=lambda obj, context: apps.validate_replication_controller(obj),
            validate_status=lambda new, old, context: apps.validate_replication_controller_status(
                new, old
            ),
        ),
        initial_status=_empty_status,
        table=Table(
            [
                NAME,
                column("Desired", "Replicas is the number of desired replicas.", kind="integer"),
                column(
                    "Current",
                    "Replicas is the most recently observed number of replicas.",
                    kind="integer",
                ),
                column(
                    "Ready",
                    "The number of ready replicas for this replication controller.",
                    kind="integer",
                ),
                AGE,
                CONTAINERS,
                IMAGES,
                selector_column(
                    "Selector is a label query over pods that should match the Replicas count."
                ),
            ],
            _cells,
        ),
    ),
)
