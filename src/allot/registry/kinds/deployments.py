"""Deployment: serving details, a new Deployment's empty status, ``kubectl get deploy``
columns (upstream's ``printDeployment``), defaulting and validation."""

from __future__ import annotations

import datetime as dt
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


def _cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = template_containers(spec.get("template"))
    return [
        obj["metadata"]["name"],
        f"{status.get('readyReplicas') or 0}/{spec.get('replicas') or 0}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        age(obj, now),
        names,
        images,
        selector_text(spec.get("selector")),
    ]


def _empty_status(obj: Obj) -> None:
    """``PrepareForCreate``: a client's status is dropped."""
    obj["status"] = {}


STRATEGIES = (
    KindStrategy(
        "Deployment",
        "deployment",
        short_names=("deploy",),
        categories=("all",),
        subresources=("status", "scale"),
        rules=KindRules(
            defaults=apps.default_deployment,
            validate=lambda obj, context: apps.validate_deployment(obj),
            validate_update=lambda new, old, context: apps.validate_deployment_update(new, old),
            validate_status=lambda new, old, context: apps.validate_deployment_status(new, old),
        ),
        initial_status=_empty_status,
        table=Table(
            [
                NAME,
                column("Ready", "Number of the pod with ready state"),
                column(
                    "Up-to-date",
                    "Total number of non-terminating pods targeted by this deployment that "
                    "have the desired template spec.",
                    # a string column, as upstream declares it (the cells are numbers)
                ),
                column(
                    "Available",
                    "Total number of available non-terminating pods (ready for at least "
                    "minReadySeconds) targeted by this deployment.",
                    # a string column, as upstream declares it (the cells are numbers)
                ),
                AGE,
                CONTAINERS,
                IMAGES,
                selector_column("Label selector for pods."),
            ],
            _cells,
        ),
    ),
)
