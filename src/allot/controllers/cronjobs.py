"""The CronJob controller: a Job per scheduled time, as kube-controller-manager 1.36's
``cronjob-controller`` (``pkg/controller/cronjob``, the v2 controller) does it.

Per CronJob, on the context's clock: finished Jobs leave ``status.active`` (event
SawCompletedJob) and set ``lastSuccessfulTime``; unless suspended, the most recent
unmet schedule time (:mod:`allot.controllers.cron`, in ``spec.timeZone``) becomes a Job
``<cronjob>-<minutes since the epoch>`` annotated with its scheduled time, unless it is
past ``startingDeadlineSeconds`` (MissSchedule) or ``concurrencyPolicy: Forbid`` finds
one running (JobAlreadyActive); ``Replace`` deletes the running ones first. More than 100
missed times warn (TooManyMissedTimes) and only the newest runs. Finished Jobs beyond
``successfulJobsHistoryLimit``/``failedJobsHistoryLimit`` are deleted, oldest first.
The controller asks to be called again just after the next schedule time
(``RetryLater``). Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable

from allot.api.documents import clone_document
from allot.controllers import cron
from allot.controllers.context import ControllerContext
from allot.controllers.jobrules import parse_time
from allot.controllers.runtime import RetryLater
from allot.controllers.workloads import (
    ClusterContexts,
    WorkloadKey,
    controller_ref,
    event_key,
    is_controlled_by,
    owner_key,
)
from allot.statuses import InvalidObjectError, RequestError
from allot.store import WatchEvent
from allot.store.errors import AlreadyExists, Conflict, StoreError
from allot.types import Obj, rfc3339

MANAGER = "cronjob-controller"
CRONJOBS = "cronjobs.batch"
JOBS = "jobs.batch"
SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_SCHEDULE_DELTA = 0.1  # seconds past the schedule time to look again
MANY_MISSED = 100
BACKGROUND = {"propagationPolicy": "Background"}


class CronJobController:
    name = "cronjob"
    watches = frozenset({CRONJOBS, JOBS})  # the resources keys_for answers for

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        if event.resource == CRONJOBS:
            return [event_key(event)]
        if event.resource == JOBS:
            key = owner_key(event, "CronJob")
            return [key] if key is not None else []
        return []

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("CronJob")

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, "CronJob")
        if found is None:
            return
        context, cronjob = found
        jobs = [
            j
            for j in context.scan("Job")
            if (j["metadata"].get("namespace") or "") == key.namespace
            and is_controlled_by(j, cronjob)
        ]
        original = clone_document(cronjob.get("status") or {})
        status = clone_document(original)
        _reconcile_active(context, cronjob, status, jobs)
        retry: float | None = None
        if not cronjob["metadata"].get("deletionTimestamp"):
            retry = _schedule(context, cronjob, status)
        _clean_history(context, cronjob, jobs)
        if status != original:
            cronjob["status"] = status
            context.update_status("CronJob", cronjob, MANAGER)
        if retry is not None:
            raise RetryLater(retry)


def _finished_condition(job: Obj) -> str | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return None


def _reconcile_active(
    context: ControllerContext, cronjob: Obj, status: Obj, jobs: list[Obj]
) -> None:
    """Finished Jobs leave the active list; ``lastSuccessfulTime`` follows the newest
    completion; references to Jobs that are gone are dropped; a running Job of the
    CronJob's that the list lacks is reported (UnexpectedJob), not adopted."""
    active = status.get("active") or []
    active_uids = {ref.get("uid") for ref in active}
    for job in jobs:
        metadata = job["metadata"]
        finished = _finished_condition(job)
        if metadata.get("uid") not in active_uids and finished is None:
            message = f"Saw a job that the controller did not create or forgot: {metadata['name']}"
            context.event(cronjob, "Warning", "UnexpectedJob", message, MANAGER)
        if metadata.get("uid") in active_uids and finished is not None:
            active = [ref for ref in active if ref.get("uid") != metadata.get("uid")]
            message = f"Saw completed job: {metadata['name']}, condition: {finished}"
            context.event(cronjob, "Normal", "SawCompletedJob", message, MANAGER)
        if finished == "Complete":
            completed = parse_time((job.get("status") or {}).get("completionTime"))
            last = parse_time(status.get("lastSuccessfulTime"))
            if completed is not None and (last is None or completed > last):
                status["lastSuccessfulTime"] = rfc3339(completed)
    existing = {j["metadata"].get("uid") for j in jobs}
    for ref in list(active):
        if ref.get("uid") not in existing:
            active.remove(ref)
            message = f"Active job went missing: {ref.get('name')}"
            context.event(cronjob, "Normal", "MissingJob", message, MANAGER)
    if active:
        status["active"] = active
    else:
        status.pop("active", None)


def most_recent(
    cronjob: Obj, schedule: cron.Schedule, zone: dt.tzinfo, now: dt.datetime, deadline: bool
) -> tuple[dt.datetime, dt.datetime | None, int]:
    """(earliest time considered, the most recent unmet schedule time or None, how many
    were missed), as upstream's ``mostRecentScheduleTime``; ``deadline`` applies
    ``startingDeadlineSeconds`` to the earliest time."""
    spec = cronjob.get("spec") or {}
    earliest = parse_time((cronjob.get("status") or {}).get("lastScheduleTime")) or parse_time(
        cronjob["metadata"].get("creationTimestamp")
    )
    earliest = earliest or now
    starting = spec.get("startingDeadlineSeconds")
    if deadline and starting is not None:
        earliest = max(earliest, now - dt.timedelta(seconds=int(starting)))
    first = cron.next_after(schedule, earliest, zone)
    if first is None or now < first:
        return earliest, None, 0
    second = cron.next_after(schedule, first, zone)
    if second is None or now < second:
        return earliest, first, 1
    interval = round((second - first).total_seconds())
    missed = int((now - first).total_seconds()) // interval + 1
    recent = first + dt.timedelta(seconds=(missed - 1) * interval)
    if recent > now or cron.next_after(schedule, recent - dt.timedelta(minutes=1), zone) != recent:
        recent = first  # an irregular schedule: walk to the newest time from the first
    while (following := cron.next_after(schedule, recent, zone)) is not None and following <= now:
        recent = following
    return earliest, recent, missed


def _schedule(context: ControllerContext, cronjob: Obj, status: Obj) -> float | None:
    """Start the Job of the most recent unmet schedule time if the rules allow; seconds
    until the controller should look again (None: not until something changes)."""
    spec = cronjob.get("spec") or {}
    try:
        zone = cron.zone(spec.get("timeZone"))
    except cron.ScheduleError as err:
        message = f"invalid timeZone: {spec.get('timeZone')!r}: {err}"
        context.event(cronjob, "Warning", "UnknownTimeZone", message, MANAGER)
        return None
    if spec.get("suspend"):
        return None
    try:
        schedule = cron.parse(spec.get("schedule") or "")
    except cron.ScheduleError as err:
        message = f"unparseable schedule: {spec.get('schedule')!r} : {err}"
        context.event(cronjob, "Warning", "UnparseableSchedule", message, MANAGER)
        return None
    now = context.clock()
    _, scheduled, missed = most_recent(cronjob, schedule, zone, now, deadline=True)
    if scheduled is not None and missed > MANY_MISSED:
        message = (
            "too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
            "or check clock skew"
        )
        context.event(cronjob, "Warning", "TooManyMissedTimes", message, MANAGER)
    if scheduled is not None:
        _start(context, cronjob, status, scheduled, zone, now)
    return _until_next(cronjob, status, schedule, zone, now)


def _start(
    context: ControllerContext,
    cronjob: Obj,
    status: Obj,
    scheduled: dt.datetime,
    zone: dt.tzinfo,
    now: dt.datetime,
) -> None:
    """Run the Job of ``scheduled`` unless the rules hold it back; record it as active."""
    name = job_name(cronjob["metadata"]["name"], scheduled)
    if _held_back(context, cronjob, status, name, scheduled, now):
        return
    made = _create_job(context, cronjob, _job_from_template(cronjob, name, scheduled, zone))
    if made is None:
        return
    metadata = made["metadata"]
    active = status.get("active") or []
    active.append(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": metadata["name"],
            "namespace": metadata.get("namespace"),
            "uid": metadata.get("uid"),
            "resourceVersion": metadata.get("resourceVersion"),
        }
    )
    status["active"] = active
    status["lastScheduleTime"] = rfc3339(scheduled)


def _held_back(
    context: ControllerContext,
    cronjob: Obj,
    status: Obj,
    name: str,
    scheduled: dt.datetime,
    now: dt.datetime,
) -> bool:
    """Whether the run must not start: past its starting deadline (MissSchedule), already
    started, or Forbid with a Job running (JobAlreadyActive). Replace deletes the running
    Jobs here."""
    spec = cronjob.get("spec") or {}
    starting = spec.get("startingDeadlineSeconds")
    if starting is not None and scheduled + dt.timedelta(seconds=int(starting)) < now:
        when = scheduled.strftime("%a, %d %b %Y %H:%M:%S +0000")
        message = f"Missed scheduled time to start a job: {when}"
        context.event(cronjob, "Warning", "MissSchedule", message, MANAGER)
        return True
    active = status.get("active") or []
    if any(ref.get("name") == name for ref in active):
        return True
    if parse_time(status.get("lastScheduleTime")) == scheduled:
        return True
    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy == "Forbid" and active:
        message = (
            "Not starting job because prior execution is running and concurrency policy is Forbid"
        )
        context.event(cronjob, "Normal", "JobAlreadyActive", message, MANAGER)
        return True
    if policy == "Replace":
        for ref in list(active):
            context.delete("Job", ref.get("namespace") or "", ref["name"], BACKGROUND)
            message = f"Deleted job {ref['name']}"
            context.event(cronjob, "Normal", "SuccessfulDelete", message, MANAGER)
            active.remove(ref)
    return False


def _create_job(context: ControllerContext, cronjob: Obj, job: Obj) -> Obj | None:
    """Create the Job (events SuccessfulCreate or FailedCreate); one of that name that
    this CronJob already owns and that still runs counts as created."""
    name = job["metadata"]["name"]
    try:
        made = context.create("Job", job, MANAGER)
    except AlreadyExists:
        existing = context.get("Job", cronjob["metadata"].get("namespace") or "", name)
        if existing is None or not is_controlled_by(existing, cronjob):
            return None
        return None if _finished_condition(existing) else existing
    except (RequestError, InvalidObjectError, StoreError) as err:
        if isinstance(err, Conflict):
            raise
        context.event(cronjob, "Warning", "FailedCreate", f"Error creating job: {err}", MANAGER)
        return None
    context.event(cronjob, "Normal", "SuccessfulCreate", f"Created job {name}", MANAGER)
    return made


def job_name(cronjob: str, scheduled: dt.datetime) -> str:
    """``<cronjob>-<scheduled time in minutes since the epoch>``."""
    return f"{cronjob}-{int(scheduled.timestamp()) // 60}"


def _job_from_template(cronjob: Obj, name: str, scheduled: dt.datetime, zone: dt.tzinfo) -> Obj:
    template = clone_document((cronjob.get("spec") or {}).get("jobTemplate") or {})
    template_metadata = template.get("metadata") or {}
    annotations = dict(template_metadata.get("annotations") or {})
    local = scheduled.astimezone(zone)
    stamp = local.isoformat().replace("+00:00", "Z") if local.utcoffset() else rfc3339(local)
    annotations[SCHEDULED_ANNOTATION] = stamp
    metadata: Obj = {
        "name": name,
        "namespace": cronjob["metadata"].get("namespace"),
        "annotations": annotations,
        "ownerReferences": [controller_ref(cronjob)],
    }
    if template_metadata.get("labels"):
        metadata["labels"] = dict(template_metadata["labels"])
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": template.get("spec") or {},
    }


def _until_next(
    cronjob: Obj, status: Obj, schedule: cron.Schedule, zone: dt.tzinfo, now: dt.datetime
) -> float | None:
    """Seconds until just after the next schedule time (upstream's
    ``nextScheduleTimeDuration``), counted from the status as it is now."""
    current = {**cronjob, "status": status}
    earliest, recent, missed = most_recent(current, schedule, zone, now, deadline=False)
    base = recent if recent is not None else earliest if missed == 0 else now
    following = cron.next_after(schedule, base, zone)
    if following is None:
        return None
    return max(0.0, (following - now).total_seconds()) + NEXT_SCHEDULE_DELTA


def _clean_history(context: ControllerContext, cronjob: Obj, jobs: list[Obj]) -> None:
    """Delete the oldest finished Jobs past the history limits (by start time, then name)."""
    spec = cronjob.get("spec") or {}
    for condition, field in (
        ("Complete", "successfulJobsHistoryLimit"),
        ("Failed", "failedJobsHistoryLimit"),
    ):
        limit = spec.get(field)
        if limit is None:
            continue
        finished = [j for j in jobs if _finished_condition(j) == condition]
        finished.sort(
            key=lambda j: (
                (j.get("status") or {}).get("startTime") is None,
                (j.get("status") or {}).get("startTime") or "",
                j["metadata"]["name"],
            )
        )
        for job in finished[: max(0, len(finished) - int(limit))]:
            name = job["metadata"]["name"]
            context.delete("Job", job["metadata"].get("namespace") or "", name, BACKGROUND)
            context.event(cronjob, "Normal", "SuccessfulDelete", f"Deleted job {name}", MANAGER)
