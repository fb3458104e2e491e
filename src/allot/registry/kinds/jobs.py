"""Job: serving details, a new Job's empty status, ``kubectl get jobs`` columns (upstream's
``printJob``: STATUS from the conditions, COMPLETIONS, DURATION), defaulting (the generated
selector included) and validation."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Preparation, Table
from allot.registry.kinds.columns import AGE, NAME, age, column, human_duration
from allot.registry.kinds.workloadcolumns import (
    CONTAINERS,
    IMAGES,
    selector_column,
    selector_text,
    template_containers,
)
from allot.types import Obj
from allot.validation import batch
from allot.validation.objects import KindRules

_STATUS_ORDER = ("Complete", "Failed", "Terminating", "Suspended", "FailureTarget")


def job_status_text(obj: Obj) -> str:
    """The STATUS column: the first of Complete, Failed, Terminating (being deleted),
    Suspended, FailureTarget, SuccessCriteriaMet that holds, else Running."""
    true = {
        c.get("type")
        for c in (obj.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }
    if "Complete" in true:
        return "Complete"
    if "Failed" in true:
        return "Failed"
    if obj["metadata"].get("deletionTimestamp"):
        return "Terminating"
    for condition in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if condition in true:
            return condition
    return "Running"


def _completions(spec: Obj, status: Obj) -> str:
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = int(spec.get("parallelism") or 0)
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _duration(status: Obj, now: dt.datetime) -> str:
    started = status.get("startTime")
    if not started:
        return ""
    start = dt.datetime.fromisoformat(started.replace("Z", "+00:00"))
    finished = status.get("completionTime")
    end = dt.datetime.fromisoformat(finished.replace("Z", "+00:00")) if finished else now
    return human_duration((end - start).total_seconds())


def _cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = template_containers(spec.get("template"))
    return [
        obj["metadata"]["name"],
        job_status_text(obj),
        _completions(spec, status),
        _duration(status, now),
        age(obj, now),
        names,
        images,
        selector_text(spec.get("selector")),
    ]


def _generate_selector(obj: Obj, preparation: Preparation) -> None:
    batch.generate_selector(obj, preparation.uid)


def _empty_status(obj: Obj) -> None:
    """``PrepareForCreate``: a client's status is dropped."""
    obj["status"] = {}


STRATEGIES = (
    KindStrategy(
        "Job",
        "job",
        categories=("all",),
        subresources=("status",),
        rules=KindRules(
            defaults=batch.default_job,
            validate=lambda obj, context: batch.validate_job(obj),
            validate_update=lambda new, old, context: batch.validate_job_update(new, old),
        ),
        initial_status=_empty_status,
        prepare_create=_generate_selector,
        table=Table(
            [
                NAME,
                column("Status", "Status of the job."),
                column("Completions", "The completion status of the job."),
                column("Duration", "Time required to complete the job."),
                AGE,
                CONTAINERS,
                IMAGES,
                selector_column("A label query over pods that should match the pod count."),
            ],
            _cells,
        ),
    ),
)
