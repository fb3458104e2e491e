"""CronJob: serving details, a new CronJob's empty status, ``kubectl get cronjobs``
columns (upstream's ``printCronJob``), defaulting and validation (the schedule parsed)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
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


def _last_schedule(status: Obj, now: dt.datetime) -> str:
    last = status.get("lastScheduleTime")
    if not last:
        return "<none>"
    moment = dt.datetime.fromisoformat(last.replace("Z", "+00:00"))
    return human_duration((now - moment).total_seconds())


def _suspend(spec: Obj) -> str:
    suspend = spec.get("suspend")
    return "<unset>" if suspend is None else str(bool(suspend))


def _cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = template_containers(job_spec.get("template"))
    return [
        obj["metadata"]["name"],
        spec.get("schedule") or "",
        spec.get("timeZone") or "<none>",
        _suspend(spec),
        len(status.get("active") or []),
        _last_schedule(status, now),
        age(obj, now),
        names,
        images,
        selector_text(job_spec.get("selector")),
    ]


def _empty_status(obj: Obj) -> None:
    """``PrepareForCreate``: a client's status is dropped."""
    obj["status"] = {}


STRATEGIES = (
    KindStrategy(
        "CronJob",
        "cronjob",
        short_names=("cj",),
        categories=("all",),
        subresources=("status",),
        rules=KindRules(
            defaults=batch.default_cron_job,
            validate=lambda obj, context: batch.validate_cron_job(obj),
            validate_update=lambda new, old, context: batch.validate_cron_job_update(new, old),
        ),
        initial_status=_empty_status,
        table=Table(
            [
                NAME,
                column("Schedule", "The schedule in Cron format."),
                column("Timezone", "The time zone name for the given schedule."),
                column("Suspend", "Whether subsequent executions are suspended.", kind="boolean"),
                column("Active", "A list of pointers to currently running jobs.", kind="integer"),
                column(
                    "Last Schedule",
                    "Information when was the last time the job was successfully scheduled.",
                ),
                AGE,
                CONTAINERS,
                IMAGES,
                selector_column("A label query over pods that should match the pod count."),
            ],
            _cells,
        ),
    ),
)
