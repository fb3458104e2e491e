"""DaemonSet: serving details (short name ``ds``), a new DaemonSet's status, its template
generation, ``kubectl get ds`` columns (upstream's ``printDaemonSet``), defaulting and
validation.

The template generation is kept, as apps/v1 shows it, in the annotation
``deprecated.daemonset.template.generation``: 1 on create, and one more each time an
update changes the template (upstream's strategy keeps it in ``spec.templateGeneration``
of its internal type, which a client cannot set). The daemon set controller labels its
pods with it (:mod:`allot.controllers.daemonset`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.api.documents import semantic
from allot.registry.kinds import KindStrategy, Preparation, Table
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

TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def format_labels(labels: dict[str, str] | None) -> str:
    """``labels.FormatLabels``: ``k=v`` pairs sorted by key, ``<none>`` when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    template = spec.get("template") or {}
    names, images = template_containers(template)
    return [
        obj["metadata"]["name"],
        int(status.get("desiredNumberScheduled") or 0),
        int(status.get("currentNumberScheduled") or 0),
        int(status.get("numberReady") or 0),
        int(status.get("updatedNumberScheduled") or 0),
        int(status.get("numberAvailable") or 0),
        format_labels((template.get("spec") or {}).get("nodeSelector")),
        age(obj, now),
        names,
        images,
        selector_text(spec.get("selector")),
    ]


def _empty_status(obj: Obj) -> None:
    """``PrepareForCreate``: a client's status is dropped (the four counts upstream
    always writes stay, at zero)."""
    obj["status"] = {
        "currentNumberScheduled": 0,
        "desiredNumberScheduled": 0,
        "numberMisscheduled": 0,
        "numberReady": 0,
    }


def template_generation(obj: Obj) -> int:
    """The DaemonSet's template generation (0 when it has none)."""
    text = str((obj["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION, ""))
    return int(text) if text.isdigit() else 0


def _first_generation(obj: Obj, preparation: Preparation) -> None:
    """A new DaemonSet's template generation is 1 (a client's higher one is kept)."""
    metadata = obj.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        return  # decoding reports it
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = metadata["annotations"] = {}
    if template_generation(obj) < 1:
        annotations[TEMPLATE_GENERATION] = "1"


def _next_generation(obj: Obj, stored: Obj) -> None:
    """An update keeps the stored generation, one more when the template changed."""
    generation = template_generation(stored)
    old_template = (stored.get("spec") or {}).get("template")
    if semantic((obj.get("spec") or {}).get("template")) != semantic(old_template):
        generation += 1
    obj["metadata"].setdefault("annotations", {})[TEMPLATE_GENERATION] = str(generation)


STRATEGIES = (
    KindStrategy(
        "DaemonSet",
        "daemonset",
        short_names=("ds",),
        categories=("all",),
        subresources=("status",),
        rules=KindRules(
            defaults=apps.default_daemon_set,
            validate=lambda obj, context: apps.validate_daemon_set(obj),
            validate_update=lambda new, old, context: apps.validate_daemon_set_update(new, old),
            validate_status=lambda new, old, context: apps.validate_daemon_set_status(new, old),
        ),
        initial_status=_empty_status,
        prepare_create=_first_generation,
        finish_update=_next_generation,
        table=Table(
            [
                NAME,
                column(
                    "Desired",
                    "The total number of nodes that should be running the daemon pod "
                    "(including nodes correctly running the daemon pod).",
                    kind="integer",
                ),
                column(
                    "Current",
                    "The number of nodes that are running at least 1 daemon pod and are "
                    "supposed to run the daemon pod.",
                    kind="integer",
                ),
                column(
                    "Ready",
                    "The number of nodes that should be running the daemon pod and have one "
                    "or more of the daemon pod running with a Ready Condition.",
                    kind="integer",
                ),
                column(
                    "Up-to-date",
                    "The total number of nodes that are running updated daemon pod",
                    kind="integer",
                ),
                column(
                    "Available",
                    "The number of nodes that should be running the daemon pod and have one "
                    "or more of the daemon pod running and available (ready for at least "
                    "spec.minReadySeconds)",
                    kind="integer",
                ),
                column(
                    "Node Selector",
                    "NodeSelector is a selector which must be true for the pod to fit on a "
                    "node. Selector which must match a node's labels for the pod to be "
                    "scheduled on that node.",
                ),
                AGE,
                CONTAINERS,
                IMAGES,
                selector_column(
                    "A label query over pods that are managed by the daemon set. Must match in "
                    "order to be controlled."
                ),
            ],
            _cells,
        ),
    ),
)
