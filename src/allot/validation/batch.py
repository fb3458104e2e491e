"""``batch/v1`` defaulting and validation: Job and CronJob, as upstream's
``SetDefaults_Job``/``SetDefaults_CronJob`` (pkg/apis/batch/v1) and
pkg/apis/batch/validation, with their texts and field paths; and the selector and labels
a Job gets when ``manualSelector`` is not true (the Job strategy's ``generateSelector``).
Called through :mod:`allot.registry.kinds.jobs` and :mod:`allot.registry.kinds.cronjobs`."""

from __future__ import annotations

import re
import zoneinfo
from typing import Any

from allot.api import batch_v1 as batch
from allot.api import core_v1 as corev1
from allot.validation import cron, names
from allot.validation.field import (
    ErrorList,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from allot.validation.workloads import (
    default_pod_template,
    immutable,
    nonnegative,
    validate_label_selector,
    validate_template,
)

SPEC = Path("spec")
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
MAX_INT32 = 2**31 - 1
COMPLETION_MODES = ["NonIndexed", "Indexed"]
JOB_RESTART_POLICIES = ["OnFailure", "Never"]
POD_REPLACEMENT_POLICIES = ["TerminatingOrFailed", "Failed"]
FAILURE_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]
EXIT_CODE_OPERATORS = ["In", "NotIn"]
CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"]
MAX_INDEXED_COMPLETIONS = 100_000
MAX_FAILURE_RULES = 20
MAX_SUCCESS_RULES = 20
_TIME_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


# ------------------------------------------------------------------------ defaulting
def generate_selector(job: dict[str, Any], uid: str) -> None:
    """A new Job's pod labels (job name and controller uid, new and legacy keys) and its
    selector on the uid, unless ``spec.manualSelector`` is true (on the wire object)."""
    spec = job.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    template = spec.setdefault("template", {})
    if not isinstance(template, dict):
        return
    metadata = template.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        return
    labels = metadata.get("labels") or {}
    if not isinstance(labels, dict):
        return
    name = str((job.get("metadata") or {}).get("name") or "")
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, name)
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, uid)
    metadata["labels"] = labels
    selector = spec.get("selector") or {}
    if not isinstance(selector, dict):
        return
    match_labels = selector.get("matchLabels") or {}
    if isinstance(match_labels, dict):
        match_labels.setdefault(CONTROLLER_UID_LABEL, uid)
        selector["matchLabels"] = match_labels
    spec["selector"] = selector


def default_job(obj: batch.Job) -> None:
    """``SetDefaults_Job``."""
    spec = obj.spec
    if spec.completions is None and spec.parallelism is None:
        spec.completions = 1
    if spec.parallelism is None:
        spec.parallelism = 1
    if spec.backoff_limit is None:
        spec.backoff_limit = MAX_INT32 if spec.backoff_limit_per_index is not None else 6
    template_labels = (
        spec.template.metadata.labels if spec.template and spec.template.metadata else None
    )
    if template_labels is not None and not obj.metadata.labels:
        obj.metadata.labels = dict(template_labels)
    if spec.completion_mode is None:
        spec.completion_mode = "NonIndexed"
    if spec.suspend is None:
        spec.suspend = False
    if spec.pod_replacement_policy is None:
        spec.pod_replacement_policy = (
            "Failed" if spec.pod_failure_policy is not None else "TerminatingOrFailed"
        )
    if spec.manual_selector is None:
        spec.manual_selector = False
    _default_job_spec_parts(spec)


def _default_job_spec_parts(spec: batch.JobSpec) -> None:
    """What every Job spec gets, a CronJob's template included: pod defaults and
    ``status: "True"`` in pod failure policy condition patterns."""
    default_pod_template(spec.template)
    for rule in (spec.pod_failure_policy.rules or []) if spec.pod_failure_policy else []:
        for pattern in rule.on_pod_conditions or []:
            if not pattern.status:
                pattern.status = "True"


def default_cron_job(obj: batch.CronJob) -> None:
    """``SetDefaults_CronJob``."""
    spec = obj.spec
    if not spec.concurrency_policy:
        spec.concurrency_policy = "Allow"
    if spec.suspend is None:
        spec.suspend = False
    if spec.successful_jobs_history_limit is None:
        spec.successful_jobs_history_limit = 3
    if spec.failed_jobs_history_limit is None:
        spec.failed_jobs_history_limit = 1
    if spec.job_template is not None and spec.job_template.spec is not None:
        _default_job_spec_parts(spec.job_template.spec)


# ------------------------------------------------------------------------------- Job
def validate_job(obj: batch.Job) -> ErrorList:
    spec = obj.spec
    errors = _validate_job_spec(spec, SPEC)
    if spec.selector is None:
        errors.append(required(SPEC.child("selector")))
    else:
        errors += validate_label_selector(spec.selector, SPEC.child("selector"))
    errors += validate_template(spec.template, spec.selector, SPEC.child("template"))
    return errors


def _validate_job_spec(spec: batch.JobSpec, path: Path) -> ErrorList:
    errors: ErrorList = []
    for name, value in (
        ("parallelism", spec.parallelism),
        ("completions", spec.completions),
        ("activeDeadlineSeconds", spec.active_deadline_seconds),
        ("backoffLimit", spec.backoff_limit),
        ("ttlSecondsAfterFinished", spec.ttl_seconds_after_finished),
        ("backoffLimitPerIndex", spec.backoff_limit_per_index),
        ("maxFailedIndexes", spec.max_failed_indexes),
    ):
        errors += nonnegative(value, path.child(name))
    errors += _validate_completion_mode(spec, path)
    errors += _validate_per_index(spec, path)
    errors += _validate_restart_policy(spec, path)
    if spec.pod_failure_policy is not None:
        errors += _validate_failure_policy(spec, path.child("podFailurePolicy"))
    if spec.success_policy is not None:
        errors += _validate_success_policy(spec, path.child("successPolicy"))
    policy = spec.pod_replacement_policy
    if policy is not None:
        if policy not in POD_REPLACEMENT_POLICIES:
            errors.append(
                not_supported(path.child("podReplacementPolicy"), policy, POD_REPLACEMENT_POLICIES)
            )
        elif spec.pod_failure_policy is not None and policy != "Failed":
            errors.append(not_supported(path.child("podReplacementPolicy"), policy, ["Failed"]))
    if spec.managed_by is not None:
        errors += _validate_managed_by(spec.managed_by, path.child("managedBy"))
    return errors


def _validate_completion_mode(spec: batch.JobSpec, path: Path) -> ErrorList:
    mode = spec.completion_mode
    if mode is None or mode == "NonIndexed":
        return []
    if mode != "Indexed":
        return [not_supported(path.child("completionMode"), mode, COMPLETION_MODES)]
    errors: ErrorList = []
    if spec.completions is None:
        errors.append(required(path.child("completions"), "when completion mode is Indexed"))
    elif spec.completions > MAX_INDEXED_COMPLETIONS:
        errors.append(
            invalid(
                path.child("completions"),
                spec.completions,
                f"must be less than or equal to {MAX_INDEXED_COMPLETIONS} when completion mode "
                "is Indexed",
            )
        )
    if spec.parallelism is not None and spec.parallelism > MAX_INDEXED_COMPLETIONS:
        errors.append(
            invalid(
                path.child("parallelism"),
                spec.parallelism,
                f"must be less than or equal to {MAX_INDEXED_COMPLETIONS} when completion mode "
                "is Indexed",
            )
        )
    return errors


def _validate_per_index(spec: batch.JobSpec, path: Path) -> ErrorList:
    errors: ErrorList = []
    if spec.backoff_limit_per_index is not None and spec.completion_mode != "Indexed":
        errors.append(
            forbidden(path.child("backoffLimitPerIndex"), "requires indexed completion mode")
        )
    if spec.max_failed_indexes is not None:
        if spec.backoff_limit_per_index is None:
            errors.append(
                required(path.child("backoffLimitPerIndex"), "when maxFailedIndexes is specified")
            )
        if spec.completions is not None and spec.max_failed_indexes > spec.completions:
            errors.append(
                invalid(
                    path.child("maxFailedIndexes"),
                    spec.max_failed_indexes,
                    "must be less than or equal to completions",
                )
            )
    return errors


def _validate_restart_policy(spec: batch.JobSpec, path: Path) -> ErrorList:
    pod = spec.template.spec if spec.template and spec.template.spec else corev1.PodSpec()
    at = path.child("template", "spec", "restartPolicy")
    policy = pod.restart_policy or ""
    if policy not in JOB_RESTART_POLICIES:
        return [not_supported(at, policy, JOB_RESTART_POLICIES)]
    if policy == "OnFailure" and spec.backoff_limit_per_index is not None:
        return [invalid(at, policy, 'must be set to "Never" when backoffLimitPerIndex is set')]
    if policy == "OnFailure" and spec.pod_failure_policy is not None:
        return [invalid(at, policy, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def _validate_failure_policy(spec: batch.JobSpec, path: Path) -> ErrorList:
    rules = spec.pod_failure_policy.rules or [] if spec.pod_failure_policy else []
    if len(rules) > MAX_FAILURE_RULES:
        return [
            invalid(path.child("rules"), len(rules), f"must have at most {MAX_FAILURE_RULES} items")
        ]
    containers = (
        {
            c.name
            for c in (spec.template.spec.containers or [])
            + (spec.template.spec.init_containers or [])
        }
        if spec.template and spec.template.spec
        else set()
    )
    errors: ErrorList = []
    for index, rule in enumerate(rules):
        errors += _validate_failure_rule(rule, path.child("rules").index(index), containers, spec)
    return errors


def _validate_failure_rule(
    rule: batch.PodFailurePolicyRule, path: Path, containers: set[str | None], spec: batch.JobSpec
) -> ErrorList:
    errors: ErrorList = []
    if rule.action not in FAILURE_ACTIONS:
        errors.append(not_supported(path.child("action"), rule.action or "", FAILURE_ACTIONS))
    elif rule.action == "FailIndex" and spec.backoff_limit_per_index is None:
        errors.append(
            forbidden(path.child("action"), "requires the backoffLimitPerIndex to be set")
        )
    exit_codes, conditions = rule.on_exit_codes, rule.on_pod_conditions
    if exit_codes is None and conditions is None:
        errors.append(
            invalid(
                path,
                rule.to_wire(),
                "specifying one of OnExitCodes and OnPodConditions is required",
            )
        )
    elif exit_codes is not None and conditions is not None:
        errors.append(
            invalid(
                path,
                rule.to_wire(),
                "specifying both OnExitCodes and OnPodConditions is not supported",
            )
        )
    if exit_codes is not None:
        errors += _validate_exit_codes(
            exit_codes, path.child("onExitCodes"), rule.action, containers
        )
    for index, pattern in enumerate(conditions or []):
        item = path.child("onPodConditions").index(index)
        if not pattern.type:
            errors.append(required(item.child("type")))
        if pattern.status not in ("True", "False", "Unknown"):
            errors.append(
                not_supported(
                    item.child("status"), pattern.status or "", ["True", "False", "Unknown"]
                )
            )
    return errors


def _validate_exit_codes(
    requirement: batch.PodFailurePolicyOnExitCodesRequirement,
    path: Path,
    action: str | None,
    containers: set[str | None],
) -> ErrorList:
    errors: ErrorList = []
    if requirement.container_name is not None and requirement.container_name not in containers:
        errors.append(
            invalid(
                path.child("containerName"),
                requirement.container_name,
                "must be one of the container or initContainer names in the pod template",
            )
        )
    if requirement.operator not in EXIT_CODE_OPERATORS:
        errors.append(
            not_supported(path.child("operator"), requirement.operator or "", EXIT_CODE_OPERATORS)
        )
    values = requirement.values or []
    if not values:
        errors.append(invalid(path.child("values"), values, "at least one value is required"))
    for index, value in enumerate(values):
        item = path.child("values").index(index)
        if value in values[:index]:
            errors.append(duplicate(item, value))
        elif index and value < values[index - 1]:
            errors.append(invalid(item, value, "must be ordered"))
        if requirement.operator == "In" and value == 0:
            errors.append(invalid(item, value, "must not be 0 for the In operator"))
    return errors


def _validate_success_policy(spec: batch.JobSpec, path: Path) -> ErrorList:
    policy = spec.success_policy
    assert policy is not None
    if spec.completion_mode != "Indexed":
        return [invalid(path, policy.to_wire(), "requires indexed completion mode")]
    rules = policy.rules or []
    if not rules:
        return [
            required(
                path.child("rules"),
                "at least one rules must be specified when the successPolicy is specified",
            )
        ]
    if len(rules) > MAX_SUCCESS_RULES:
        return [
            invalid(path.child("rules"), len(rules), f"must have at most {MAX_SUCCESS_RULES} items")
        ]
    errors: ErrorList = []
    for index, rule in enumerate(rules):
        item = path.child("rules").index(index)
        if rule.succeeded_count is None and rule.succeeded_indexes is None:
            errors.append(
                required(
                    item, "at least one of succeededCount or succeededIndexes must be specified"
                )
            )
        if rule.succeeded_count is not None:
            errors += nonnegative(rule.succeeded_count, item.child("succeededCount"))
            if spec.completions is not None and rule.succeeded_count > spec.completions:
                errors.append(
                    invalid(
                        item.child("succeededCount"),
                        rule.succeeded_count,
                        f"must be less than or equal to {spec.completions} (the number of "
                        "specified completions)",
                    )
                )
    return errors


def _validate_managed_by(value: str, path: Path) -> ErrorList:
    errors = [invalid(path, value, message) for message in names.is_qualified_name(value)]
    if len(value) > 63:
        errors.append(invalid(path, value, "must be no more than 63 characters"))
    return errors


def validate_job_update(new: batch.Job, old: batch.Job) -> ErrorList:
    spec, before = new.spec, old.spec
    errors = immutable(spec.selector, before.selector, SPEC.child("selector"))
    errors += _validate_template_update(new, old)
    for name, now, then in (
        ("completionMode", spec.completion_mode, before.completion_mode),
        ("podFailurePolicy", spec.pod_failure_policy, before.pod_failure_policy),
        ("backoffLimitPerIndex", spec.backoff_limit_per_index, before.backoff_limit_per_index),
        ("managedBy", spec.managed_by, before.managed_by),
        ("successPolicy", spec.success_policy, before.success_policy),
        ("podReplacementPolicy", spec.pod_replacement_policy, before.pod_replacement_policy),
    ):
        errors += immutable(now, then, SPEC.child(name))
    elastic = spec.completion_mode == "Indexed" and spec.completions == spec.parallelism
    elastic = elastic and before.completions == before.parallelism
    if not elastic:
        errors += immutable(spec.completions, before.completions, SPEC.child("completions"))
    return errors


_SCHEDULING_DIRECTIVES = ("nodeSelector", "tolerations", "schedulingGates")


def _validate_template_update(new: batch.Job, old: batch.Job) -> ErrorList:
    """The pod template is immutable, except its scheduling directives (node affinity,
    node selector, tolerations, scheduling gates, labels and annotations) while the Job
    is suspended and has never started."""
    new_template = new.spec.template.to_wire() if new.spec.template else {}
    old_template = old.spec.template.to_wire() if old.spec.template else {}
    suspended = bool(old.spec.suspend) and not (old.status and old.status.start_time)
    if suspended:
        for template in (new_template, old_template):
            template.pop("metadata", None)
            pod = template.get("spec") or {}
            for key in _SCHEDULING_DIRECTIVES:
                pod.pop(key, None)
            affinity = pod.get("affinity") or {}
            affinity.pop("nodeAffinity", None)
            if not affinity:
                pod.pop("affinity", None)
    if new_template == old_template:
        return []
    shown = new.spec.template.to_wire() if new.spec.template else {}
    return [invalid(SPEC.child("template"), shown, "field is immutable")]


# --------------------------------------------------------------------------- CronJob
def validate_cron_job(obj: batch.CronJob) -> ErrorList:
    return _validate_cron_job_spec(obj.spec, allow_tz_in_schedule=False)


def validate_cron_job_update(new: batch.CronJob, old: batch.CronJob) -> ErrorList:
    """On update a ``TZ=`` already in the schedule may stay (upstream's leniency)."""
    had_tz = "TZ" in (old.spec.schedule or "")
    return _validate_cron_job_spec(new.spec, allow_tz_in_schedule=had_tz)


def _validate_cron_job_spec(spec: batch.CronJobSpec, *, allow_tz_in_schedule: bool) -> ErrorList:
    errors: ErrorList = []
    if not spec.schedule:
        errors.append(required(SPEC.child("schedule")))
    else:
        errors += _validate_schedule(spec.schedule, allow_tz_in_schedule, spec.time_zone)
    errors += nonnegative(spec.starting_deadline_seconds, SPEC.child("startingDeadlineSeconds"))
    if not spec.concurrency_policy:
        errors.append(required(SPEC.child("concurrencyPolicy")))
    elif spec.concurrency_policy not in CONCURRENCY_POLICIES:
        errors.append(
            not_supported(
                SPEC.child("concurrencyPolicy"), spec.concurrency_policy, CONCURRENCY_POLICIES
            )
        )
    errors += nonnegative(
        spec.successful_jobs_history_limit, SPEC.child("successfulJobsHistoryLimit")
    )
    errors += nonnegative(spec.failed_jobs_history_limit, SPEC.child("failedJobsHistoryLimit"))
    errors += _validate_time_zone(spec.time_zone, SPEC.child("timeZone"))
    errors += _validate_job_template(spec.job_template, SPEC.child("jobTemplate"))
    return errors


def _validate_schedule(schedule: str, allow_tz: bool, time_zone: str | None) -> ErrorList:
    path = SPEC.child("schedule")
    errors: ErrorList = []
    try:
        cron.parse(schedule)
    except cron.ScheduleError as err:
        errors.append(invalid(path, schedule, str(err)))
    if allow_tz and "TZ" in schedule and time_zone is not None:
        errors.append(
            invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule")
        )
    elif not allow_tz and "TZ" in schedule:
        errors.append(
            invalid(
                path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            )
        )
    return errors


def _validate_time_zone(zone: str | None, path: Path) -> ErrorList:
    if zone is None:
        return []
    if not zone:
        return [invalid(path, zone, "timeZone must be nil or non-empty string")]
    if zone.lower() == "local":
        return [
            invalid(
                path,
                zone,
                "timeZone must be an explicit time zone as defined in "
                "https://www.iana.org/time-zones",
            )
        ]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.match(part):
            return [invalid(path, zone, f"unknown time zone {zone}")]
    if zone != "UTC" and not _known_zone(zone):
        return [invalid(path, zone, f"unknown time zone {zone}")]
    return []


def _known_zone(zone: str) -> bool:
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


def _validate_job_template(template: batch.JobTemplateSpec | None, path: Path) -> ErrorList:
    spec = template.spec if template is not None else None
    if spec is None:
        spec = batch.JobSpec()
    at = path.child("spec")
    errors = _validate_job_spec(spec, at)
    errors += validate_template(spec.template, None, at.child("template"))
    if spec.selector is not None:
        errors.append(
            invalid(
                at.child("selector"), spec.selector.to_wire(), "`selector` will be auto-generated"
            )
        )
    if spec.manual_selector:
        errors.append(not_supported(at.child("manualSelector"), True, ["nil", "false"]))
    return errors
