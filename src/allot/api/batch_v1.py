"""``batch/v1`` kinds: Job and CronJob, with every field Kubernetes 1.36 defines.

A Job's pod template is core/v1's :class:`~allot.api.core_v1.PodTemplateSpec`; a CronJob
carries a whole Job spec under ``spec.jobTemplate``. The pod failure policy, success
policy, per-index backoff, ``podReplacementPolicy`` and ``managedBy`` are typed so their
validation can name their fields. Served by :mod:`allot.registry.kinds.jobs`; the Job and
CronJob controllers read and write them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel, Time
from allot.api.core_v1 import ObjectReference, PodTemplateSpec
from allot.api.meta import LabelSelector, ObjectMeta

API_VERSION = "batch/v1"


class PodFailurePolicyOnExitCodesRequirement(ApiModel):
    container_name: str | None = None
    operator: str | None = None
    values: list[int] | None = None


class PodFailurePolicyOnPodConditionsPattern(ApiModel):
    type: str | None = None
    status: str | None = None


class PodFailurePolicyRule(ApiModel):
    action: str | None = None
    on_exit_codes: PodFailurePolicyOnExitCodesRequirement | None = None
    on_pod_conditions: list[PodFailurePolicyOnPodConditionsPattern] | None = None


class PodFailurePolicy(ApiModel):
    rules: list[PodFailurePolicyRule] | None = None


class SuccessPolicyRule(ApiModel):
    succeeded_indexes: str | None = None
    succeeded_count: int | None = None


class SuccessPolicy(ApiModel):
    rules: list[SuccessPolicyRule] | None = None


class JobSpec(ApiModel):
    parallelism: int | None = None
    completions: int | None = None
    active_deadline_seconds: int | None = None
    pod_failure_policy: PodFailurePolicy | None = None
    success_policy: SuccessPolicy | None = None
    backoff_limit: int | None = None
    backoff_limit_per_index: int | None = None
    max_failed_indexes: int | None = None
    selector: LabelSelector | None = None
    manual_selector: bool | None = None
    template: PodTemplateSpec | None = None
    ttl_seconds_after_finished: int | None = None
    completion_mode: str | None = None
    suspend: bool | None = None
    pod_replacement_policy: str | None = None
    managed_by: str | None = None


class JobCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class UncountedTerminatedPods(ApiModel):
    succeeded: list[str] | None = None
    failed: list[str] | None = None


class JobStatus(ApiModel):
    conditions: list[JobCondition] | None = None
    start_time: Time | None = None
    completion_time: Time | None = None
    active: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    terminating: int | None = None
    completed_indexes: str | None = None
    failed_indexes: str | None = None
    uncounted_terminated_pods: UncountedTerminatedPods | None = None
    ready: int | None = None


class Job(ApiModel):
    api_version: Literal["batch/v1"] = "batch/v1"
    kind: Literal["Job"] = "Job"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobStatus | None = None


class JobTemplateSpec(ApiModel):
    metadata: ObjectMeta | None = None
    spec: JobSpec | None = None


class CronJobSpec(ApiModel):
    schedule: str | None = None
    time_zone: str | None = None
    starting_deadline_seconds: int | None = None
    concurrency_policy: str | None = None
    suspend: bool | None = None
    job_template: JobTemplateSpec | None = None
    successful_jobs_history_limit: int | None = None
    failed_jobs_history_limit: int | None = None


class CronJobStatus(ApiModel):
    active: list[ObjectReference] | None = None
    last_schedule_time: Time | None = None
    last_successful_time: Time | None = None


class CronJob(ApiModel):
    api_version: Literal["batch/v1"] = "batch/v1"
    kind: Literal["CronJob"] = "CronJob"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CronJobSpec = Field(default_factory=CronJobSpec)
    status: CronJobStatus | None = None
