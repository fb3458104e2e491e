"""What a pod requests, computed as Kubernetes' ``resourcehelper.PodRequests`` does.

A container's requests are its ``requests`` with its ``limits`` filling the missing keys
(the API server's defaulting copies a limit into a missing request). The pod's requests
are the sum over its regular containers and its sidecars (init containers with
``restartPolicy: Always``), or, where larger, what the init containers need one at a time
(each plus the sidecars started before it): init containers run before the others and
their resources are reused. ResourceQuota's pod evaluator (``allot.registry.quota``)
charges these; the scheduler's extended-resource claim asks for each container's own
requests, as kube-scheduler does. :func:`pod_quota_requests` and :func:`pod_quota_limits`
are the whole pod's ``PodRequests`` and ``PodLimits`` as the quota evaluator asks for them:
pod-level ``resources`` (cpu, memory, hugepages) override the containers' sum and the pod's
``overhead`` is added (to limits only where the pod has a non-zero limit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from allot.api.quantity import Quantity

Amounts = dict[str, Quantity]


def container_requests(container: Mapping[str, Any]) -> Amounts:
    """The container's requests after defaulting: a limit stands in for a missing request."""
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: Quantity.parse(str(value)) for name, value in merged.items()}


def pod_requests(spec: Mapping[str, Any]) -> Amounts:
    """The pod's requests: max(sum of regular containers and sidecars, each init container
    with the sidecars before it). Port of ``PodRequests`` (component-helpers
    ``resource/helpers.go``), without pod overhead or pod-level resources."""
    return _aggregate(spec, container_requests)


def _aggregate(spec: Mapping[str, Any], amounts: Callable[[Mapping[str, Any]], Amounts]) -> Amounts:
    total: Amounts = {}
    for container in spec.get("containers") or []:
        _add(total, amounts(container))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.get("initContainers") or []:
        needed = amounts(container)
        if container.get("restartPolicy") == "Always":
            _add(total, needed)
            _add(sidecars, needed)
            needed = dict(sidecars)
        else:
            _add(needed, sidecars)
        _raise_to(init_peak, needed)
    _raise_to(total, init_peak)
    return total


def container_limits(container: Mapping[str, Any]) -> Amounts:
    limits = (container.get("resources") or {}).get("limits") or {}
    return {name: Quantity.parse(str(value)) for name, value in limits.items()}


def pod_limits(spec: Mapping[str, Any]) -> Amounts:
    """The containers' limits aggregated as :func:`pod_requests` aggregates requests (a
    container without a limit of a resource adds nothing to it)."""
    return _aggregate(spec, container_limits)


def is_pod_level_resource(name: str) -> bool:
    """``IsSupportedPodLevelResource``: cpu, memory and hugepages."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def pod_quota_requests(spec: Mapping[str, Any]) -> Amounts:
    """``PodRequests`` with pod-level resources and overhead."""
    total = pod_requests(spec)
    _apply_pod_level(total, ((spec.get("resources") or {}).get("requests")) or {})
    _add(total, _parsed(spec.get("overhead") or {}))
    return total


def pod_quota_limits(spec: Mapping[str, Any]) -> Amounts:
    """``PodLimits`` with pod-level resources and the overhead on non-zero limits."""
    total = pod_limits(spec)
    _apply_pod_level(total, ((spec.get("resources") or {}).get("limits")) or {})
    for name, value in _parsed(spec.get("overhead") or {}).items():
        if name in total and total[name].sign() != 0:
            total[name] = total[name].add(value)
    return total


def _apply_pod_level(into: Amounts, pod_level: Mapping[str, Any]) -> None:
    for name, value in _parsed(pod_level).items():
        if is_pod_level_resource(name):
            into[name] = value


def _parsed(amounts: Mapping[str, Any]) -> Amounts:
    return {name: Quantity.parse(str(value)) for name, value in amounts.items()}


def _add(into: Amounts, amounts: Amounts) -> None:
    for name, value in amounts.items():
        into[name] = into[name].add(value) if name in into else value


def _raise_to(into: Amounts, amounts: Amounts) -> None:
    for name, value in amounts.items():
        if name not in into or value.compare(into[name]) > 0:
            into[name] = value


QOS_RESOURCES = ("cpu", "memory")


def qos_class(spec: Mapping[str, Any]) -> str:
    """``ComputePodQOS``: ``BestEffort`` when no container (init containers included) or
    pod-level ``resources`` asks a non-zero cpu or memory; ``Guaranteed`` when every one
    limits both and each total request equals its limit; else ``Burstable``. A limit
    stands in for a missing request, as defaulting makes it."""
    pod_level = spec.get("resources") or {}
    if pod_level.get("requests") or pod_level.get("limits"):
        sources: list[Mapping[str, Any]] = [{"resources": pod_level}]
    else:
        sources = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    requests: Amounts = {}
    limits: Amounts = {}
    guaranteed = True
    for source in sources:
        asked = {n: q for n, q in container_requests(source).items() if n in QOS_RESOURCES}
        limited = {n: q for n, q in container_limits(source).items() if n in QOS_RESOURCES}
        _add(requests, {n: q for n, q in asked.items() if q.sign() > 0})
        positive = {n: q for n, q in limited.items() if q.sign() > 0}
        _add(limits, positive)
        guaranteed = guaranteed and set(QOS_RESOURCES) <= set(positive)
    if not requests and not limits:
        return "BestEffort"
    equal = requests.keys() == limits.keys()
    if guaranteed and equal and all(requests[n].compare(limits[n]) == 0 for n in requests):
        return "Guaranteed"
    return "Burstable"
