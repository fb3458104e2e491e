"""The Job controller's rules that need no store: completion-index intervals, the pod
failure policy, a failed pod's finish time and the pod-failure back-off.

Kept apart from :mod:`allot.controllers.jobs` (which reads and writes the store) so each
rule can be checked on its own, with kube-controller-manager 1.36's semantics
(``pkg/controller/job``: ``indexed_job_utils.go``, ``pod_failure_policy.go``,
``backoff_utils.go``). Pure; used by the Job controller and its tests.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from allot.types import Obj

INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
BACKOFF_START = dt.timedelta(seconds=10)  # DefaultJobPodFailureBackOff
BACKOFF_MAX = dt.timedelta(minutes=10)  # MaxJobPodFailureBackOff


def parse_time(text: str | None) -> dt.datetime | None:
    """An RFC 3339 time of the wire, or None."""
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# ---- completion indexes ----


def parse_indexes(text: str | None, completions: int) -> set[int]:
    """The indexes below ``completions`` in an interval string; malformed parts are
    skipped, as upstream's ``parseIndexesFromString`` does."""
    found: set[int] = set()
    for part in (text or "").split(","):
        bounds = part.split("-")
        try:
            first, last = int(bounds[0]), int(bounds[-1])
        except ValueError:
            continue
        if len(bounds) > 2 or first < 0 or last < first:
            continue
        found.update(range(first, min(last, completions - 1) + 1))
    return found


def completion_index(pod: Obj) -> int | None:
    """The pod's completion index from its annotation (None when absent or not a number)."""
    value = (pod["metadata"].get("annotations") or {}).get(INDEX_ANNOTATION)
    if value is None or not str(value).isdigit():
        return None
    return int(value)


def indexed_generate_name(job_name: str, index: int) -> str:
    """``<job>-<index>-``, the job name cut so the prefix keeps 58 characters at most."""
    suffix = f"-{index}-"
    return f"{job_name[: max(0, 63 - 5 - len(suffix))]}{suffix}"


# ---- pod failure policy ----


@dataclass(frozen=True)
class PolicyMatch:
    """What a failed pod means under the policy: the action of the matching rule (None:
    no rule matched), whether the failure counts against ``backoffLimit``, and the
    Job's failure message for ``FailJob``."""

    action: str | None
    counts: bool = True
    message: str | None = None


def match_failure_policy(policy: Obj | None, pod: Obj) -> PolicyMatch:
    """The first rule of ``podFailurePolicy`` that matches a failed pod."""
    if not policy:
        return PolicyMatch(None)
    metadata = pod["metadata"]
    who = f"{metadata.get('namespace', '')}/{metadata['name']}"
    status = pod.get("status") or {}
    for position, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        if rule.get("onExitCodes") is not None:
            container = _matching_container(status, rule["onExitCodes"])
            if container is None:
                continue
            code = container["state"]["terminated"]["exitCode"]
            message = (
                f"Container {container['name']} for pod {who} failed with exit code {code} "
                f"matching {action} rule at index {position}"
            )
        elif rule.get("onPodConditions") is not None:
            condition = _matching_condition(status, rule["onPodConditions"])
            if condition is None:
                continue
            message = (
                f"Pod {who} has condition {condition['type']} matching {action} rule "
                f"at index {position}"
            )
        else:
            continue
        if action == "Ignore":
            return PolicyMatch(action, counts=False)
        if action == "FailJob":
            return PolicyMatch(action, message=message)
        if action in ("Count", "FailIndex"):
            return PolicyMatch(action)
    return PolicyMatch(None)


def _matching_container(status: Obj, requirement: Obj) -> Obj | None:
    wanted = requirement.get("containerName")
    for field in ("containerStatuses", "initContainerStatuses"):
        for container in status.get(field) or []:
            terminated = (container.get("state") or {}).get("terminated")
            if terminated is None or (wanted is not None and container.get("name") != wanted):
                continue
            code = int(terminated.get("exitCode") or 0)
            if code != 0 and _operator_matches(code, requirement):
                return container  # type: ignore[no-any-return]
    return None


def _operator_matches(code: int, requirement: Obj) -> bool:
    values = [int(v) for v in requirement.get("values") or []]
    operator = requirement.get("operator")
    if operator == "In":
        return code in values
    if operator == "NotIn":
        return code not in values
    return False


def _matching_condition(status: Obj, patterns: list[Obj]) -> Obj | None:
    for condition in status.get("conditions") or []:
        for pattern in patterns:
            wanted_status = pattern.get("status") or "True"
            if condition.get("type") == pattern.get("type") and (
                condition.get("status") == wanted_status
            ):
                return condition  # type: ignore[no-any-return]
    return None


# ---- finish times and back-off ----


def finished_at(pod: Obj) -> dt.datetime:
    """When a pod finished (upstream's ``getFinishedTime``): its containers' latest
    ``finishedAt`` when all terminated, else its ``Ready=False`` transition, else its
    deletion time less the grace period, else its creation."""
    status = pod.get("status") or {}
    latest: dt.datetime | None = None
    containers = status.get("containerStatuses") or []
    for container in containers:
        moment = parse_time(
            ((container.get("state") or {}).get("terminated") or {}).get("finishedAt")
        )
        if moment is None:
            latest = None
            break
        latest = moment if latest is None or moment > latest else latest
    if latest is not None:
        return latest
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "False":
            moment = parse_time(condition.get("lastTransitionTime"))
            if moment is not None:
                return moment
    metadata = pod["metadata"]
    deleted = parse_time(metadata.get("deletionTimestamp"))
    if deleted is not None:
        return deleted - dt.timedelta(seconds=int(metadata.get("deletionGracePeriodSeconds") or 0))
    return parse_time(metadata.get("creationTimestamp")) or dt.datetime.min.replace(tzinfo=dt.UTC)


def backoff_remaining(
    failed: list[dt.datetime], succeeded: list[dt.datetime], now: dt.datetime
) -> dt.timedelta:
    """How long before the Job may create pods again, from the finish times of its failed
    and succeeded pods: 10 s after the first failure since the last success, doubling per
    further failure up to 10 minutes, counted from the newest failure."""
    last_success = max(succeeded) if succeeded else None
    recent = [t for t in failed if last_success is None or t > last_success]
    if not recent:
        return dt.timedelta(0)
    delay = BACKOFF_START
    for _ in range(1, len(recent)):
        delay = min(delay * 2, BACKOFF_MAX)
        if delay == BACKOFF_MAX:
            break
    elapsed = now - max(recent)
    return max(dt.timedelta(0), delay - elapsed)
