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
from allot.validation import cron, indexes, names
from allot.validation import meta as metavalidation
from allot.validation.field import (
    ErrorList,
    ErrorType,
    FieldError,
    Path,
    duplicate,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from allot.validation.workloads import (
    default_pod_template,
    immutable,
    nonnegative,
    selector_mismatch,
    validate_label_selector,
    validate_template_spec,
)

SPEC = Path("spec")
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
MAX_INT32 = 2**31 - 1
COMPLETION_MODES = ["NonIndexed", "Indexed"]
JOB_RESTART_POLICIES = ["OnFailure", "Never"]
POD_REPLACEMENT_POLICIES = ["Failed", "TerminatingOrFailed"]
FAILURE_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]
EXIT_CODE_OPERATORS = ["In", "NotIn"]
CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"]
MAX_INDEXED_COMPLETIONS = 100_000
MAX_FAILURE_RULES = 20
MAX_CONDITION_PATTERNS = 20
MAX_EXIT_CODES = 255
MAX_MANAGED_BY = 63
MAX_CRON_JOB_NAME = 52
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
    """``ValidateJob``: the spec with its selector, and an Indexed Job's longest pod
    hostname."""
    errors = validate_job_spec(obj.spec, SPEC)
    completions = obj.spec.completions
    if obj.spec.completion_mode == "Indexed" and completions:
        hostname = f"{obj.metadata.name or ''}-{completions - 1}"
        if names.is_dns1123_label(hostname):
            errors.append(
                invalid(
                    Path("metadata").child("name"),
                    obj.metadata.name or "",
                    f"will not able to create pod with invalid DNS label: {hostname}",
                )
            )
    return errors


def validate_job_spec(spec: batch.JobSpec, path: Path) -> ErrorList:
    """``ValidateJobSpec``: what any Job spec needs, a selector, and template labels the
    selector selects."""
    errors = _validate_job_spec(spec, path)
    if spec.selector is None:
        errors.append(required(path.child("selector")))
    else:
        errors += validate_label_selector(spec.selector, path.child("selector"))
    return errors + selector_mismatch(spec.template, spec.selector, path.child("template"))


def _validate_job_spec(spec: batch.JobSpec, path: Path) -> ErrorList:
    """``validateJobSpec``: counts, per-index limits, completion mode, policies, the pod
    template and its restart policy (a CronJob's job template included)."""
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
    if spec.max_failed_indexes is not None and spec.backoff_limit_per_index is None:
        errors.append(
            required(path.child("backoffLimitPerIndex"), "when maxFailedIndexes is specified")
        )
    if spec.managed_by is not None:
        errors += _validate_managed_by(spec.managed_by, path.child("managedBy"))
    errors += _validate_completion_mode(spec, path)
    if spec.pod_failure_policy is not None:
        errors += _validate_failure_policy(spec, path.child("podFailurePolicy"))
    if spec.success_policy is not None:
        errors += _validate_success_policy(spec, path.child("successPolicy"))
    errors += _validate_replacement_policy(spec, path.child("podReplacementPolicy"))
    template = spec.template or corev1.PodTemplateSpec()
    errors += validate_template_spec(template, path.child("template"))
    return errors + _validate_restart_policy(spec, path)


def _validate_completion_mode(spec: batch.JobSpec, path: Path) -> ErrorList:
    mode = spec.completion_mode
    errors: ErrorList = []
    if mode is not None and mode not in COMPLETION_MODES:
        errors.append(not_supported(path.child("completionMode"), mode, COMPLETION_MODES))
    if mode == "Indexed":
        errors += _validate_indexed(spec, path)
    if mode in (None, "NonIndexed"):
        for name, value in (
            ("backoffLimitPerIndex", spec.backoff_limit_per_index),
            ("maxFailedIndexes", spec.max_failed_indexes),
        ):
            if value is not None:
                errors.append(invalid(path.child(name), value, "requires indexed completion mode"))
    return errors


def _validate_indexed(spec: batch.JobSpec, path: Path) -> ErrorList:
    errors: ErrorList = []
    limit = MAX_INDEXED_COMPLETIONS
    if spec.completions is None:
        errors.append(required(path.child("completions"), "when completion mode is Indexed"))
    if spec.parallelism is not None and spec.parallelism > limit:
        errors.append(
            invalid(
                path.child("parallelism"),
                spec.parallelism,
                f"must be less than or equal to {limit} when completion mode is Indexed",
            )
        )
    failed = spec.max_failed_indexes
    if spec.completions is not None and failed is not None and failed > spec.completions:
        errors.append(
            invalid(
                path.child("maxFailedIndexes"), failed, "must be less than or equal to completions"
            )
        )
    if failed is not None and failed > limit:
        errors.append(
            invalid(
                path.child("maxFailedIndexes"), failed, f"must be less than or equal to {limit}"
            )
        )
    return errors


def _validate_restart_policy(spec: batch.JobSpec, path: Path) -> ErrorList:
    pod = spec.template.spec if spec.template and spec.template.spec else corev1.PodSpec()
    at = path.child("template", "spec", "restartPolicy")
    policy = pod.restart_policy or ""
    if policy in ("Always", ""):
        return [required(at, 'valid values: "OnFailure", "Never"')]
    if policy not in JOB_RESTART_POLICIES:
        return [not_supported(at, policy, JOB_RESTART_POLICIES)]
    if spec.pod_failure_policy is not None and policy != "Never":
        return [invalid(at, policy, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def _validate_replacement_policy(spec: batch.JobSpec, path: Path) -> ErrorList:
    policy = spec.pod_replacement_policy
    if policy is None:
        return []
    if spec.pod_failure_policy is not None:
        return [] if policy == "Failed" else [not_supported(path, policy, ["Failed"])]
    if policy not in POD_REPLACEMENT_POLICIES:
        return [not_supported(path, policy, POD_REPLACEMENT_POLICIES)]
    return []


def _valid_values(values: list[str]) -> str:
    """Go's ``%q`` of a string slice: ``["Count" "FailIndex"]``."""
    return "valid values: [" + " ".join(f'"{v}"' for v in values) + "]"


def _validate_failure_policy(spec: batch.JobSpec, path: Path) -> ErrorList:
    rules = spec.pod_failure_policy.rules or [] if spec.pod_failure_policy else []
    errors: ErrorList = []
    if len(rules) > MAX_FAILURE_RULES:
        errors.append(too_many(path.child("rules"), len(rules), MAX_FAILURE_RULES))
    pod = spec.template.spec if spec.template and spec.template.spec else corev1.PodSpec()
    containers = {c.name or "" for c in (pod.containers or []) + (pod.init_containers or [])}
    for index, rule in enumerate(rules):
        errors += _validate_failure_rule(rule, path.child("rules").index(index), containers, spec)
    return errors


def _validate_failure_rule(
    rule: batch.PodFailurePolicyRule, path: Path, containers: set[str], spec: batch.JobSpec
) -> ErrorList:
    errors: ErrorList = []
    action = path.child("action")
    if not rule.action:
        errors.append(required(action, _valid_values(FAILURE_ACTIONS)))
    elif rule.action == "FailIndex":
        if spec.backoff_limit_per_index is None:
            errors.append(
                invalid(action, rule.action, "requires the backoffLimitPerIndex to be set")
            )
    elif rule.action not in FAILURE_ACTIONS:
        errors.append(not_supported(action, rule.action, FAILURE_ACTIONS))
    exit_codes, conditions = rule.on_exit_codes, rule.on_pod_conditions or []
    if exit_codes is not None:
        errors += _validate_exit_codes(exit_codes, path.child("onExitCodes"), containers)
    errors += _validate_pod_conditions(conditions, path.child("onPodConditions"))
    if exit_codes is not None and conditions:
        detail = "specifying both OnExitCodes and OnPodConditions is not supported"
        errors.append(FieldError(path, ErrorType.INVALID, detail))
    if exit_codes is None and not conditions:
        detail = "specifying one of OnExitCodes and OnPodConditions is required"
        errors.append(FieldError(path, ErrorType.INVALID, detail))
    return errors


def _validate_pod_conditions(
    patterns: list[batch.PodFailurePolicyOnPodConditionsPattern], path: Path
) -> ErrorList:
    errors: ErrorList = []
    if len(patterns) > MAX_CONDITION_PATTERNS:
        errors.append(too_many(path, len(patterns), MAX_CONDITION_PATTERNS))
    statuses = ["False", "True", "Unknown"]
    for index, pattern in enumerate(patterns):
        item = path.index(index)
        errors += metavalidation.validate_qualified_name(pattern.type or "", item.child("type"))
        if not pattern.status:
            errors.append(required(item.child("status"), _valid_values(statuses)))
        elif pattern.status not in statuses:
            errors.append(not_supported(item.child("status"), pattern.status, statuses))
    return errors


def _validate_exit_codes(
    requirement: batch.PodFailurePolicyOnExitCodesRequirement, path: Path, containers: set[str]
) -> ErrorList:
    errors: ErrorList = []
    operator = requirement.operator
    if not operator:
        errors.append(required(path.child("operator"), _valid_values(EXIT_CODE_OPERATORS)))
    elif operator not in EXIT_CODE_OPERATORS:
        errors.append(not_supported(path.child("operator"), operator, EXIT_CODE_OPERATORS))
    name = requirement.container_name
    if name is not None and name not in containers:
        errors.append(
            invalid(
                path.child("containerName"),
                name,
                "must be one of the container or initContainer names in the pod template",
            )
        )
    values = requirement.values or []
    if not values:
        errors.append(invalid(path.child("values"), values, "at least one value is required"))
    elif len(values) > MAX_EXIT_CODES:
        errors.append(too_many(path.child("values"), len(values), MAX_EXIT_CODES))
    for index, value in enumerate(values):
        item = path.child("values").index(index)
        if operator == "In" and value == 0:
            errors.append(invalid(item, value, "must not be 0 for the In operator"))
        if value in values[:index]:
            errors.append(duplicate(item, value))
    if values != sorted(values):
        errors.append(invalid(path.child("values"), values, "must be ordered"))
    return errors


def _validate_success_policy(spec: batch.JobSpec, path: Path) -> ErrorList:
    policy = spec.success_policy
    assert policy is not None
    if spec.completion_mode != "Indexed":
        return [invalid(path, policy.to_wire(), "requires indexed completion mode")]
    rules = policy.rules or []
    errors: ErrorList = []
    if not rules:
        errors.append(
            required(
                path.child("rules"),
                "at least one rules must be specified when the successPolicy is specified",
            )
        )
    if len(rules) > MAX_SUCCESS_RULES:
        errors.append(too_many(path.child("rules"), len(rules), MAX_SUCCESS_RULES))
    completions = spec.completions or 0
    for index, rule in enumerate(rules):
        errors += _validate_success_rule(rule, path.child("rules").index(index), completions)
    return errors


def _validate_success_rule(
    rule: batch.SuccessPolicyRule, path: Path, completions: int
) -> ErrorList:
    errors: ErrorList = []
    if rule.succeeded_count is None and rule.succeeded_indexes is None:
        errors.append(
            required(path, "at least one of succeededCount or succeededIndexes must be specified")
        )
    total: int | None = None
    if rule.succeeded_indexes is not None:
        try:
            total = len(indexes.parse(rule.succeeded_indexes, completions))
        except indexes.IndexesError as err:
            errors.append(
                invalid(
                    path.child("succeededIndexes"),
                    rule.succeeded_indexes,
                    f"error parsing succeededIndexes: {err}",
                )
            )
    count = rule.succeeded_count
    if count is not None:
        at = path.child("succeededCount")
        errors += nonnegative(count, at)
        if count > completions:
            errors.append(
                invalid(
                    at,
                    count,
                    f"must be less than or equal to {completions} (the number of specified "
                    "completions)",
                )
            )
        if total is not None and count > total:
            errors.append(
                invalid(
                    at,
                    count,
                    f"must be less than or equal to {total} (the number of indexes in the "
                    "specified succeededIndexes field)",
                )
            )
    return errors


def _validate_managed_by(value: str, path: Path) -> ErrorList:
    errors = [invalid(path, value, message) for message in names.is_domain_prefixed_path(value)]
    if len(value) > MAX_MANAGED_BY:
        errors.append(too_long(path, MAX_MANAGED_BY))
    return errors


def validate_job_update(new: batch.Job, old: batch.Job) -> ErrorList:
    """``ValidateJobSpecUpdate`` (the spec itself is validated by ``validate_job``)."""
    spec, before = new.spec, old.spec
    errors = _validate_completions_update(spec, before)
    errors += immutable(spec.selector, before.selector, SPEC.child("selector"))
    errors += _validate_template_update(new, old)
    for name, now, then in (
        ("completionMode", spec.completion_mode, before.completion_mode),
        ("podFailurePolicy", spec.pod_failure_policy, before.pod_failure_policy),
        ("backoffLimitPerIndex", spec.backoff_limit_per_index, before.backoff_limit_per_index),
        ("managedBy", spec.managed_by, before.managed_by),
        ("successPolicy", spec.success_policy, before.success_policy),
    ):
        errors += immutable(now, then, SPEC.child(name))
    return errors


def _validate_completions_update(spec: batch.JobSpec, before: batch.JobSpec) -> ErrorList:
    """Completions are immutable, except an Indexed Job's, changed with parallelism
    (elastic Indexed Jobs)."""
    path = SPEC.child("completions")
    if spec.completion_mode != "Indexed":
        return immutable(spec.completions, before.completions, path)
    if spec.completions in (before.completions, None) or spec.completions == spec.parallelism:
        return []
    return [invalid(path, spec.completions, "can only be modified in tandem with spec.parallelism")]


_SCHEDULING_DIRECTIVES = ("nodeSelector", "tolerations", "schedulingGates")


def _validate_template_update(new: batch.Job, old: batch.Job) -> ErrorList:
    """The pod template is immutable, except its scheduling directives (node affinity,
    node selector, tolerations, scheduling gates, labels and annotations) while the Job
    is suspended and has never started."""
    new_template = new.spec.template.to_wire() if new.spec.template else {}
    old_template = old.spec.template.to_wire() if old.spec.template else {}
    started = old.status is not None and old.status.start_time is not None
    if bool(old.spec.suspend) and not started:
        for template in (new_template, old_template):
            _drop_scheduling_directives(template)
    if new_template == old_template:
        return []
    shown = new.spec.template.to_wire() if new.spec.template else {}
    return [invalid(SPEC.child("template"), shown, "field is immutable")]


def _drop_scheduling_directives(template: dict[str, Any]) -> None:
    metadata = template.get("metadata") or {}
    for key in ("labels", "annotations"):
        metadata.pop(key, None)
    if not metadata:
        template.pop("metadata", None)
    pod = template.get("spec") or {}
    for key in _SCHEDULING_DIRECTIVES:
        pod.pop(key, None)
    affinity = pod.get("affinity") or {}
    affinity.pop("nodeAffinity", None)
    if not affinity:
        pod.pop("affinity", None)


# --------------------------------------------------------------------------- CronJob
def validate_cron_job(obj: batch.CronJob) -> ErrorList:
    """``ValidateCronJobCreate``: the spec, and a name short enough for its Jobs' names
    (the controller appends an 11-character suffix)."""
    errors = _validate_cron_job_spec(obj.spec, None)
    name = obj.metadata.name or ""
    if len(name) > MAX_CRON_JOB_NAME:
        errors.append(
            invalid(
                Path("metadata").child("name"),
                name,
                f"must be no more than {MAX_CRON_JOB_NAME} characters",
            )
        )
    return errors


def validate_cron_job_update(new: batch.CronJob, old: batch.CronJob) -> ErrorList:
    return _validate_cron_job_spec(new.spec, old.spec)


def _validate_cron_job_spec(spec: batch.CronJobSpec, old: batch.CronJobSpec | None) -> ErrorList:
    """``validateCronJobSpec``: on update a ``TZ=`` already in the schedule may stay and an
    unchanged time zone is not checked again."""
    errors: ErrorList = []
    if not spec.schedule:
        errors.append(required(SPEC.child("schedule")))
    else:
        allow_tz = old is not None and "TZ" in (old.schedule or "")
        errors += _validate_schedule(spec.schedule, allow_tz, spec.time_zone)
    errors += nonnegative(spec.starting_deadline_seconds, SPEC.child("startingDeadlineSeconds"))
    if old is None or old.time_zone != spec.time_zone:
        errors += _validate_time_zone(spec.time_zone, SPEC.child("timeZone"))
    policy = spec.concurrency_policy
    if not policy:
        errors.append(required(SPEC.child("concurrencyPolicy")))
    elif policy not in CONCURRENCY_POLICIES:
        errors.append(not_supported(SPEC.child("concurrencyPolicy"), policy, CONCURRENCY_POLICIES))
    errors += _validate_job_template(spec.job_template, SPEC.child("jobTemplate"))
    for name, limit in (
        ("successfulJobsHistoryLimit", spec.successful_jobs_history_limit),
        ("failedJobsHistoryLimit", spec.failed_jobs_history_limit),
    ):
        errors += nonnegative(limit, SPEC.child(name))
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
    if spec.selector is not None:
        errors.append(
            invalid(
                at.child("selector"), spec.selector.to_wire(), "`selector` will be auto-generated"
            )
        )
    if spec.manual_selector:
        errors.append(not_supported(at.child("manualSelector"), True, ["nil", "false"]))
    return errors
