"""The Job controller: pods from a Job's template until enough succeed, or the Job fails.

kube-controller-manager 1.36's ``job-controller`` (``pkg/controller/job``), run once for
the host and every tenant cluster (:mod:`allot.controllers.workloads`). Per Job:

- pods from ``spec.template`` with the ``batch.kubernetes.io/job-tracking`` finalizer, at
  most ``parallelism`` active and never more than the completions still missing;
  ``completionMode: Indexed`` pods carry their index (annotation, label, hostname
  ``<job>-<index>``, ``JOB_COMPLETION_INDEX`` in every container) and
  ``status.completedIndexes`` lists the succeeded indexes as intervals;
- a finished pod is counted and loses its finalizer in the same store transaction (the
  controller runs in the server's loop, whose writes of one turn commit together), so
  ``status.uncountedTerminatedPods`` is always written empty; failed pods are kept;
- failures (``podFailurePolicy`` rules on exit codes and pod conditions first, then
  ``backoffLimit``, the ``OnFailure`` restart count, ``activeDeadlineSeconds``) write the
  interim ``FailureTarget`` condition and delete the active pods; ``Failed`` follows once
  none is terminating. Success writes ``SuccessCriteriaMet`` then ``Complete``;
- a new pod after failures waits 10 s, doubling per failure since the last success up to
  10 minutes (upstream's pod-failure back-off), worked out from the pods' finish times;
- ``suspend`` deletes the active pods and writes the ``Suspended`` condition; resuming
  resets ``startTime``.

Time is the context's clock; the controller asks to be called again (``RetryLater``) for
back-off and deadlines. Built by :mod:`allot.platform`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable
from dataclasses import dataclass, field

from allot.api.documents import clone_document
from allot.api.pods import is_pod_active, is_pod_ready
from allot.controllers import jobrules
from allot.controllers.context import ControllerContext
from allot.controllers.runtime import RetryLater
from allot.controllers.workloads import (
    ClusterContexts,
    WorkloadKey,
    controller_of,
    event_key,
    is_controlled_by,
    owner_key,
    pod_from_template,
)
from allot.statuses import InvalidObjectError, RequestError
from allot.store import WatchEvent
from allot.store.errors import Conflict, NotFound, StoreError
from allot.types import Obj, rfc3339
from allot.validation.indexes import render as render_indexes

MANAGER = "job-controller"
JOBS = "jobs.batch"
FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
INDEX_LABEL = jobrules.INDEX_ANNOTATION
INDEX_ENV = "JOB_COMPLETION_INDEX"
FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-failure-count"
DEFAULT_BACKOFF_LIMIT = 6
MAX_INT32 = 2**31 - 1  # the backoffLimit default with backoffLimitPerIndex
MAX_CREATE_PER_SYNC = 500
FINISHED = ("Complete", "Failed")
MANAGED_BY_DEFAULT = "kubernetes.io/job-controller"


@dataclass(frozen=True)
class Finish:
    """How the Job ends: ``success`` (SuccessCriteriaMet, then Complete) or failure
    (FailureTarget, then Failed), with the conditions' reason and message."""

    success: bool
    reason: str
    message: str


@dataclass
class _Sync:
    """One reconcile of one Job: what was read and what it decided."""

    context: ControllerContext
    job: Obj
    pods: list[Obj]
    now: dt.datetime
    status: Obj = field(default_factory=dict)
    retry: list[float] = field(default_factory=list)

    @property
    def spec(self) -> Obj:
        return self.job.get("spec") or {}

    @property
    def indexed(self) -> bool:
        return self.spec.get("completionMode") == "Indexed"

    @property
    def per_index(self) -> bool:
        return self.indexed and self.spec.get("backoffLimitPerIndex") is not None

    @property
    def completions(self) -> int | None:
        value = self.spec.get("completions")
        return None if value is None else int(value)

    @property
    def suspended(self) -> bool:
        return bool(self.spec.get("suspend"))

    def valid(self, pod: Obj) -> bool:
        """Whether a pod counts for this Job (an Indexed Job's pod needs a valid index)."""
        if not self.indexed:
            return True
        index = jobrules.completion_index(pod)
        return index is not None and index < (self.completions or 0)

    def failed(self, pod: Obj) -> bool:
        """Upstream's ``isPodFailed``: Failed, or deleted before it succeeded (unless only
        failed pods are replaced)."""
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Failed":
            return True
        if _only_replace_failed(self.job):
            return False
        return bool(pod["metadata"].get("deletionTimestamp")) and phase != "Succeeded"


class JobController:
    name = "job"
    watches = frozenset({JOBS, "pods"})  # the resources keys_for answers for

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts
        self.pods = _JobPods(contexts)

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if not self.contexts.serves(event.cluster):
            return []
        if event.resource == JOBS:
            return [event_key(event)]
        if event.resource == "pods":
            key = owner_key(event, "Job")
            return [key] if key is not None else []
        return []

    def observe(self, event: WatchEvent) -> None:
        """Which pods each Job controls (kept from pod events, so a reconcile reads only
        its own pods)."""
        if event.resource == "pods" and self.contexts.serves(event.cluster):
            self.pods.observe(event)

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys("Job")

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        context = self.contexts(key.cluster)
        job = context.get("Job", key.namespace, key.name)
        owned = self.pods.of(key)
        if job is None:
            _release_all(context, owned)
            return
        stale = [p for p in owned if not is_controlled_by(p, job)]
        _release_all(context, stale)
        pods = [p for p in owned if is_controlled_by(p, job)]
        managed_by = (job.get("spec") or {}).get("managedBy")
        if managed_by not in (None, MANAGED_BY_DEFAULT):
            return  # another controller's Job (spec.managedBy)
        if _finished(job) or job["metadata"].get("deletionTimestamp"):
            _release_all(context, pods)
            return
        sync = _Sync(context, job, pods, context.clock())
        _sync_job(sync)
        if sync.retry:
            raise RetryLater(max(0.01, min(sync.retry)))


class _JobPods:
    """The names of the pods whose controller is a Job of a given name (any uid), per
    cluster: filled from the store the first time a cluster is asked about, then kept
    current from pod events."""

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts
        self._names: dict[WorkloadKey, set[str]] = {}
        self._owner: dict[tuple[str, str, str], WorkloadKey] = {}
        self._filled: set[str] = set()

    def observe(self, event: WatchEvent) -> None:
        if event.cluster in self._filled:
            self._note(event.cluster, event.object, gone=event.type == "DELETED")

    def _note(self, cluster: str, pod: Obj, gone: bool = False) -> None:
        metadata = pod["metadata"]
        where = (cluster, metadata.get("namespace") or "", metadata["name"])
        previous = self._owner.pop(where, None)
        if previous is not None:
            self._names.get(previous, set()).discard(where[2])
        ref = controller_of(pod)
        if gone or ref is None or ref.get("kind") != "Job":
            return
        key = WorkloadKey(cluster, where[1], ref["name"])
        self._owner[where] = key
        self._names.setdefault(key, set()).add(where[2])

    def of(self, key: WorkloadKey) -> list[Obj]:
        """The Job's pods as stored, uncopied (read them, never modify)."""
        context = self.contexts(key.cluster)
        if key.cluster not in self._filled:
            self._filled.add(key.cluster)
            for pod in context.scan("Pod"):
                self._note(key.cluster, pod)
        pods = []
        for name in sorted(self._names.get(key, ())):
            stored = context.peek("Pod", key.namespace, name)
            if stored is not None:
                pods.append(stored)
        return pods


def _finished(job: Obj) -> bool:
    return any(
        c.get("type") in FINISHED and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def _condition(job_or_status: Obj, kind: str) -> Obj | None:
    conditions = job_or_status.get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def _only_replace_failed(job: Obj) -> bool:
    spec = job.get("spec") or {}
    return spec.get("podReplacementPolicy") == "Failed" or bool(spec.get("podFailurePolicy"))


def _has_finalizer(pod: Obj) -> bool:
    return FINALIZER in (pod["metadata"].get("finalizers") or [])


def _release_all(context: ControllerContext, pods: list[Obj]) -> None:
    for pod in pods:
        if _has_finalizer(pod):
            _remove_finalizer(context, pod)


def _remove_finalizer(context: ControllerContext, pod: Obj) -> None:
    metadata = pod["metadata"]
    latest = context.get("Pod", metadata.get("namespace") or "", metadata["name"])
    if latest is None or latest["metadata"].get("uid") != metadata.get("uid"):
        return
    finalizers = [f for f in latest["metadata"].get("finalizers") or [] if f != FINALIZER]
    latest["metadata"]["finalizers"] = finalizers
    try:
        context.update("Pod", latest, MANAGER)
    except NotFound:
        return


# ---- one sync ----


def _sync_job(sync: _Sync) -> None:
    job = sync.job
    original = clone_document(job.get("status") or {})
    sync.status = clone_document(original)
    status = sync.status
    if status.get("startTime") is None and not sync.suspended:
        status["startTime"] = rfc3339(sync.now)
    active = [p for p in sync.pods if is_pod_active(p)]
    terminating = sum(
        1
        for p in sync.pods
        if p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    )
    ready = sum(1 for p in active if is_pod_ready(p))
    finish = _failure(sync)
    if finish is None and sync.indexed:
        finish = _success_policy(sync)
    if finish is not None:
        deleted, deleted_ready = _delete_pods(sync, active, release=False)
        terminating += deleted
        ready -= deleted_ready
        active_count = len(active) - deleted
    else:
        active_count, ready, terminating = _manage(sync, active, ready, terminating)
        if finish is None and _complete(sync, active_count):
            finish = Finish(True, "CompletionsReached", "Reached expected number of succeeded pods")
        elif finish is None:
            _suspend_condition(sync)
    status["active"] = active_count
    status["ready"] = ready
    status["terminating"] = terminating
    _track(sync, finish)
    finished_now = _finish_conditions(sync, finish, terminating)
    status.setdefault("uncountedTerminatedPods", {})
    if status != original:
        job["status"] = status
        try:
            sync.job = sync.context.update_status("Job", job, MANAGER)
        except NotFound:
            return
    if finished_now and finish is not None:
        _record_finished(sync, finish)


def _counted_failed(sync: _Sync) -> int:
    """Failures so far: the status' count plus failed pods not counted yet (those an
    ``Ignore`` rule matches left out)."""
    policy = sync.spec.get("podFailurePolicy")
    new = sum(
        1
        for p in sync.pods
        if _has_finalizer(p)
        and sync.valid(p)
        and sync.failed(p)
        and jobrules.match_failure_policy(policy, p).counts
    )
    return int(sync.status.get("failed") or 0) + new


def _succeeded_indexes(sync: _Sync) -> set[int]:
    completions = sync.completions or 0
    indexes = jobrules.parse_indexes(sync.status.get("completedIndexes"), completions)
    for pod in sync.pods:
        index = jobrules.completion_index(pod)
        if (
            index is not None
            and index < completions
            and (pod.get("status") or {}).get("phase") == "Succeeded"
            and _has_finalizer(pod)
        ):
            indexes.add(index)
    return indexes


def _succeeded(sync: _Sync) -> int:
    if sync.indexed:
        return len(_succeeded_indexes(sync))
    new = sum(
        1
        for p in sync.pods
        if _has_finalizer(p) and (p.get("status") or {}).get("phase") == "Succeeded"
    )
    return int(sync.status.get("succeeded") or 0) + new


def _failure(sync: _Sync) -> Finish | None:
    """Why the Job fails now (or already did: an interim condition is kept), if it does."""
    status = sync.status
    met = _condition(status, "SuccessCriteriaMet")
    if met is not None and met.get("status") == "True":
        return Finish(True, met.get("reason") or "", met.get("message") or "")
    target = _condition(status, "FailureTarget")
    if target is not None and target.get("status") == "True":
        return Finish(False, target.get("reason") or "", target.get("message") or "")
    policy = sync.spec.get("podFailurePolicy")
    for pod in sync.pods:
        if sync.failed(pod):
            message = jobrules.match_failure_policy(policy, pod).message
            if message is not None:
                return Finish(False, "PodFailurePolicy", message)
    limit = sync.spec.get("backoffLimit")
    unset = MAX_INT32 if sync.per_index else DEFAULT_BACKOFF_LIMIT
    limit = unset if limit is None else int(limit)
    if _counted_failed(sync) > limit or _past_restart_limit(sync, limit):
        return Finish(False, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    if sync.per_index:
        finish = _failed_indexes_finish(sync)
        if finish is not None:
            return finish
    remaining = _deadline_remaining(sync)
    if remaining is not None and remaining <= 0:
        return Finish(False, "DeadlineExceeded", "Job was active longer than specified deadline")
    if remaining is not None:
        sync.retry.append(remaining)
    return None


def _failed_indexes_finish(sync: _Sync) -> Finish | None:
    """``backoffLimitPerIndex``: too many failed indexes, or every index finished with
    some failed."""
    failed = _failed_indexes(sync)
    most = sync.spec.get("maxFailedIndexes")
    if most is not None and len(failed) > int(most):
        message = "Job has exceeded the specified maximal number of failed indexes"
        return Finish(False, "MaxFailedIndexesExceeded", message)
    if failed and len(failed | _succeeded_indexes(sync)) >= (sync.completions or 0):
        return Finish(False, "FailedIndexes", "Job has failed indexes")
    return None


def _index_failures(sync: _Sync) -> dict[int, list[Obj]]:
    """An Indexed Job's failed pods per index (those an ``Ignore`` rule matches left out),
    from the kept failed pods."""
    policy = sync.spec.get("podFailurePolicy")
    found: dict[int, list[Obj]] = {}
    for pod in sync.pods:
        index = jobrules.completion_index(pod)
        if index is None or not sync.valid(pod) or not sync.failed(pod):
            continue
        if jobrules.match_failure_policy(policy, pod).counts:
            found.setdefault(index, []).append(pod)
    return found


def _failed_indexes(sync: _Sync) -> set[int]:
    """Indexes past ``backoffLimitPerIndex`` or failed by a ``FailIndex`` rule, and those
    the status already lists; never a succeeded one."""
    completions = sync.completions or 0
    limit = int(sync.spec.get("backoffLimitPerIndex") or 0)
    policy = sync.spec.get("podFailurePolicy")
    failed = jobrules.parse_indexes(sync.status.get("failedIndexes"), completions)
    for index, pods in _index_failures(sync).items():
        fail_index = any(
            jobrules.match_failure_policy(policy, p).action == "FailIndex" for p in pods
        )
        if len(pods) > limit or fail_index:
            failed.add(index)
    return failed - _succeeded_indexes(sync)


def _past_restart_limit(sync: _Sync, limit: int) -> bool:
    """``restartPolicy: OnFailure``: the restarts of running and pending pods reach the
    limit (upstream's ``pastBackoffLimitOnFailure``)."""
    template_spec = (sync.spec.get("template") or {}).get("spec") or {}
    if template_spec.get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in sync.pods:
        status = pod.get("status") or {}
        if status.get("phase") not in ("Running", "Pending"):
            continue
        for kind in ("initContainerStatuses", "containerStatuses"):
            restarts += sum(int(c.get("restartCount") or 0) for c in status.get(kind) or [])
    return restarts > 0 if limit == 0 else restarts >= limit


def _deadline_remaining(sync: _Sync) -> float | None:
    deadline = sync.spec.get("activeDeadlineSeconds")
    started = jobrules.parse_time(sync.status.get("startTime"))
    if deadline is None or started is None or sync.suspended:
        return None
    return float(deadline) - (sync.now - started).total_seconds()


def _success_policy(sync: _Sync) -> Finish | None:
    """An Indexed Job's ``successPolicy``: the first rule whose indexes all succeeded
    and whose count is reached."""
    rules = (sync.spec.get("successPolicy") or {}).get("rules") or []
    completions = sync.completions or 0
    succeeded = _succeeded_indexes(sync)
    for position, rule in enumerate(rules):
        wanted = (
            jobrules.parse_indexes(rule["succeededIndexes"], completions)
            if rule.get("succeededIndexes") is not None
            else set(range(completions))
        )
        done = wanted & succeeded
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None and count is None and done != wanted:
            continue
        if count is not None and len(done) < int(count):
            continue
        return Finish(True, "SuccessPolicy", f"Matched rules at index {position}")
    return None


def _complete(sync: _Sync, active: int) -> bool:
    succeeded = _succeeded(sync)
    if sync.completions is None:
        return succeeded > 0 and active == 0
    return succeeded >= sync.completions and active == 0


# ---- pods ----


def _manage(sync: _Sync, active: list[Obj], ready: int, terminating: int) -> tuple[int, int, int]:
    """Create or delete pods toward the wanted number; (active, ready, terminating)."""
    if sync.suspended:
        deleted, deleted_ready = _delete_pods(sync, active, release=True)
        return len(active) - deleted, ready - deleted_ready, terminating + deleted
    parallelism = sync.spec.get("parallelism")
    parallelism = 1 if parallelism is None else int(parallelism)
    succeeded = _succeeded(sync)
    if sync.completions is None:
        want = len(active) if succeeded > 0 else parallelism
    else:
        want = max(0, min(parallelism, sync.completions - succeeded))
    extra = _pods_to_remove(sync, active, len(active) - want)
    if extra:
        deleted, deleted_ready = _delete_pods(sync, extra, release=True)
        return len(active) - deleted, ready - deleted_ready, terminating + deleted
    waiting = terminating if _only_replace_failed(sync.job) else 0
    missing = min(want - waiting - len(active), MAX_CREATE_PER_SYNC)
    if missing <= 0:
        return len(active), ready, terminating
    remaining = 0.0 if sync.per_index else _backoff_remaining(sync)
    if remaining > 0:
        sync.retry.append(remaining)
        return len(active), ready, terminating
    indexes: list[int | None] = list(_pending_indexes(sync, active, missing))
    if not sync.indexed:
        indexes = [None] * missing
    elif sync.per_index:
        indexes = list(_indexes_past_backoff(sync, [i for i in indexes if i is not None]))
    created = _create_pods(sync, indexes)
    return len(active) + created, ready, terminating


def _indexes_past_backoff(sync: _Sync, indexes: list[int]) -> list[int]:
    """``backoffLimitPerIndex``: the indexes whose own back-off (from their failed pods)
    has passed; the shortest wait of the others is asked for when none has."""
    failures = _index_failures(sync)
    ready: list[int] = []
    waits: list[float] = []
    for index in indexes:
        failed = [jobrules.finished_at(p) for p in failures.get(index, [])]
        wait = jobrules.backoff_remaining(failed, [], sync.now).total_seconds()
        if wait > 0:
            waits.append(wait)
        else:
            ready.append(index)
    if not ready and waits:
        sync.retry.append(min(waits))
    return ready


def _backoff_remaining(sync: _Sync) -> float:
    failed = [jobrules.finished_at(p) for p in sync.pods if sync.failed(p)]
    succeeded = [
        jobrules.finished_at(p)
        for p in sync.pods
        if (p.get("status") or {}).get("phase") == "Succeeded"
    ]
    return jobrules.backoff_remaining(failed, succeeded, sync.now).total_seconds()


def _pending_indexes(sync: _Sync, active: list[Obj], count: int) -> list[int]:
    """The lowest indexes neither succeeded, failed nor held by an active pod."""
    failed = _failed_indexes(sync) if sync.per_index else set()
    taken = (
        failed
        | _succeeded_indexes(sync)
        | {i for i in (jobrules.completion_index(p) for p in active) if i is not None}
    )
    free = (i for i in range(sync.completions or 0) if i not in taken)
    return [i for _, i in zip(range(count), free, strict=False)]


def _pods_to_remove(sync: _Sync, active: list[Obj], at_least: int) -> list[Obj]:
    """Pods to delete: an Indexed Job's pods with a repeated or invalid index first, then
    the least advanced (unscheduled, pending, not ready, newest) up to ``at_least``."""
    ordered = _least_advanced_first(active)
    remove: list[Obj] = []
    left = ordered
    if sync.indexed:
        seen: set[int] = set()
        keep: list[Obj] = []
        for pod in reversed(ordered):
            index = jobrules.completion_index(pod)
            if index is None or index >= (sync.completions or 0) or index in seen:
                remove.append(pod)
            else:
                seen.add(index)
                keep.append(pod)
        left = list(reversed(keep))
    if len(remove) < at_least:
        remove.extend(left[: at_least - len(remove)])
    return remove


def _least_advanced_first(pods: list[Obj]) -> list[Obj]:
    """Unscheduled before scheduled, pending before running, not ready before ready, and
    among equals the newest first (upstream's ``ActivePods`` order, simplified)."""
    ordered = sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "", reverse=True)
    ordered.sort(key=_stage)
    return ordered


def _stage(pod: Obj) -> tuple[bool, int, bool]:
    status = pod.get("status") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(status.get("phase") or "", 0)
    return bool(pod["spec"].get("nodeName")), phase_rank, is_pod_ready(pod)


def _delete_pods(sync: _Sync, pods: list[Obj], release: bool) -> tuple[int, int]:
    """Delete pods (dropping the tracking finalizer first when ``release``: a pod removed
    by scaling down or suspending is not a failure); (deleted, of which ready)."""
    deleted = deleted_ready = 0
    for pod in pods:
        metadata = pod["metadata"]
        if release and _has_finalizer(pod):
            _remove_finalizer(sync.context, pod)
        options = {"preconditions": {"uid": metadata.get("uid")}}
        try:
            sync.context.delete("Pod", metadata.get("namespace") or "", metadata["name"], options)
        except Conflict:
            continue
        deleted += 1
        deleted_ready += int(is_pod_ready(pod))
        sync.context.event(
            sync.job, "Normal", "SuccessfulDelete", f"Deleted pod: {metadata['name']}", MANAGER
        )
    return deleted, deleted_ready


def _create_pods(sync: _Sync, indexes: list[int | None]) -> int:
    """Create a pod per entry (an index, or None for a NonIndexed Job); stop at the first
    refusal, recorded as a FailedCreate event, and look again later."""
    created = 0
    failures = _index_failures(sync) if sync.per_index else {}
    for index in indexes:
        pod = _new_pod(sync.job, index)
        if sync.per_index and index is not None:
            count = str(len(failures.get(index, [])))
            pod["metadata"]["annotations"][FAILURE_COUNT_ANNOTATION] = count
        try:
            made = sync.context.create("Pod", pod, MANAGER)
        except (RequestError, InvalidObjectError, StoreError) as err:
            if isinstance(err, Conflict):
                raise
            sync.context.event(
                sync.job, "Warning", "FailedCreate", f"Error creating: {err}", MANAGER
            )
            sync.retry.append(jobrules.BACKOFF_START.total_seconds())
            break
        created += 1
        name = made["metadata"]["name"]
        sync.context.event(sync.job, "Normal", "SuccessfulCreate", f"Created pod: {name}", MANAGER)
    return created


def _new_pod(job: Obj, index: int | None) -> Obj:
    """A pod of the Job from its template: its labels, the tracking finalizer, and for
    an Indexed Job its index (annotation, label, hostname, environment)."""
    metadata = job["metadata"]
    template = clone_document((job.get("spec") or {}).get("template") or {})
    template_metadata = template.setdefault("metadata", {})
    finalizers = list(template_metadata.get("finalizers") or [])
    if FINALIZER not in finalizers:
        finalizers.append(FINALIZER)
    template_metadata["finalizers"] = finalizers
    labels = {JOB_NAME_LABEL: metadata["name"], CONTROLLER_UID_LABEL: metadata["uid"]}
    annotations: dict[str, str] = {}
    if index is not None:
        labels[INDEX_LABEL] = str(index)
        annotations[jobrules.INDEX_ANNOTATION] = str(index)
        spec = template.setdefault("spec", {})
        spec["hostname"] = f"{metadata['name']}-{index}"
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            _add_index_env(container)
    existing = template_metadata.get("labels") or {}
    pod = pod_from_template(
        job,
        template,
        labels={k: v for k, v in labels.items() if k not in existing},
        annotations=annotations,
    )
    if index is not None:
        pod["metadata"]["generateName"] = jobrules.indexed_generate_name(metadata["name"], index)
    return pod


def _add_index_env(container: Obj) -> None:
    env = container.setdefault("env", [])
    if any(e.get("name") == INDEX_ENV for e in env):
        return
    path = f"metadata.annotations['{jobrules.INDEX_ANNOTATION}']"
    env.append({"name": INDEX_ENV, "valueFrom": {"fieldRef": {"fieldPath": path}}})


# ---- status ----


def _track(sync: _Sync, finish: Finish | None) -> None:
    """Count finished pods and drop their finalizers: succeeded and failed pods always,
    every pod once the Job has finished (a failed Job's unfinished pods count as failed)."""
    status = sync.status
    policy = sync.spec.get("podFailurePolicy")
    indexes = _succeeded_indexes(sync) if sync.indexed else set()
    for pod in sync.pods:
        if not _has_finalizer(pod):
            continue
        phase = (pod.get("status") or {}).get("phase")
        failed = sync.failed(pod)
        if finish is None and phase != "Succeeded" and not failed:
            continue
        if phase == "Succeeded":
            if not sync.indexed:
                status["succeeded"] = int(status.get("succeeded") or 0) + 1
        elif (
            (failed or (finish is not None and not finish.success))
            and sync.valid(pod)
            and jobrules.match_failure_policy(policy, pod).counts
        ):
            status["failed"] = int(status.get("failed") or 0) + 1
        _remove_finalizer(sync.context, pod)
    if sync.per_index:
        status["failedIndexes"] = render_indexes(_failed_indexes(sync))
    if sync.indexed:
        status["completedIndexes"] = render_indexes(indexes)
        status["succeeded"] = len(indexes)
        if not status["completedIndexes"]:
            del status["completedIndexes"]
    for counter in ("succeeded", "failed"):
        if not status.get(counter):
            status.pop(counter, None)


def _new_condition(kind: str, finish_reason: str, message: str, now: dt.datetime) -> Obj:
    moment = rfc3339(now)
    condition: Obj = {
        "type": kind,
        "status": "True",
        "lastProbeTime": moment,
        "lastTransitionTime": moment,
    }
    if finish_reason:
        condition["reason"] = finish_reason
    if message:
        condition["message"] = message
    return condition


def _finish_conditions(sync: _Sync, finish: Finish | None, terminating: int) -> bool:
    """The interim condition at once, the terminal one when no pod is terminating;
    whether the terminal condition was written now."""
    if finish is None:
        return False
    status = sync.status
    conditions = status.setdefault("conditions", [])
    interim = "SuccessCriteriaMet" if finish.success else "FailureTarget"
    if _condition(status, interim) is None:
        conditions.append(_new_condition(interim, finish.reason, finish.message, sync.now))
    if terminating > 0:
        return False
    final = "Complete" if finish.success else "Failed"
    existing = _condition(status, final)
    if existing is not None and existing.get("status") == "True":
        return False
    if existing is not None:
        conditions.remove(existing)
    conditions.append(_new_condition(final, finish.reason, finish.message, sync.now))
    if finish.success:
        status["completionTime"] = rfc3339(sync.now)
    return True


def _suspend_condition(sync: _Sync) -> None:
    """``Suspended`` True while suspended (event Suspended), False once resumed (event
    Resumed, ``startTime`` reset: the deadline counts continuous activity)."""
    status = sync.status
    existing = _condition(status, "Suspended")
    if sync.suspended:
        if existing is not None and existing.get("status") == "True":
            return
        wanted = {**_new_condition("Suspended", "JobSuspended", "Job suspended", sync.now)}
        reason, message = "Suspended", "Job suspended"
    else:
        if existing is None or existing.get("status") == "False":
            return
        wanted = _new_condition("Suspended", "JobResumed", "Job resumed", sync.now)
        wanted["status"] = "False"
        reason, message = "Resumed", "Job resumed"
        status["startTime"] = rfc3339(sync.now)
    conditions = status.setdefault("conditions", [])
    if existing is not None:
        conditions[conditions.index(existing)] = wanted
    else:
        conditions.append(wanted)
    sync.context.event(sync.job, "Normal", reason, message, MANAGER)


def _record_finished(sync: _Sync, finish: Finish) -> None:
    if finish.success:
        completions = sync.completions
        succeeded = int(sync.status.get("succeeded") or 0)
        if completions is not None and succeeded > completions:
            sync.context.event(
                sync.job,
                "Warning",
                "TooManySucceededPods",
                "Too many succeeded pods running after completion count reached",
                MANAGER,
            )
        sync.context.event(sync.job, "Normal", "Completed", "Job completed", MANAGER)
    else:
        sync.context.event(sync.job, "Warning", finish.reason, finish.message, MANAGER)
