"""What a pod requests, computed as Kubernetes' ``resourcehelper.PodRequests`` does.

A container's requests are its ``requests`` with its ``limits`` filling the missing keys
(the API server's defaulting copies a limit into a missing request). The pod's requests
are the sum over its regular containers and its sidecars (init containers with
``restartPolicy: Always``), or, where larger, what the init containers need one at a time
(each plus the sidecars started before it): init containers run before the others and
their resources are reused. ResourceQuota's pod evaluator (``allot.registry.quota``)
charges these; the scheduler's extended-resource claim asks for each container's own
requests, as kube-scheduler does.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    total: Amounts = {}
    for container in spec.get("containers") or []:
        _add(total, container_requests(container))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.get("initContainers") or []:
        needed = container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, needed)
            _add(sidecars, needed)
            needed = dict(sidecars)
        else:
            _add(needed, sidecars)
        _raise_to(init_peak, needed)
    _raise_to(total, init_peak)
    return total


def _add(into: Amounts, amounts: Amounts) -> None:
    for name, value in amounts.items():
        into[name] = into[name].add(value) if name in into else value


def _raise_to(into: Amounts, amounts: Amounts) -> None:
    for name, value in amounts.items():
        if name not in into or value.compare(into[name]) > 0:
            into[name] = value
