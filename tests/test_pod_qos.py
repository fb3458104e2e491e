"""A pod's QoS class (``status.qosClass``), as upstream's ``ComputePodQOS`` decides it."""

from __future__ import annotations

from typing import Any

import pytest

from allot.api.podresources import qos_class
from allot.registry.kinds import strategy


def _container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Any:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "image": "x", "resources": resources}


BOTH = {"cpu": "1", "memory": "1Gi"}
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("nothing asked", {"containers": [_container()]}, "BestEffort"),
    ("only other resources", {"containers": [_container({"nvidia.com/gpu": "1"})]}, "BestEffort"),
    ("zero requests", {"containers": [_container({"cpu": "0"})]}, "BestEffort"),
    (
        "limits only (requests default to them)",
        {"containers": [_container(None, BOTH)]},
        "Guaranteed",
    ),
    ("requests equal limits", {"containers": [_container(BOTH, BOTH)]}, "Guaranteed"),
    ("a request below its limit", {"containers": [_container({"cpu": "500m"}, BOTH)]}, "Burstable"),
    ("cpu limit only", {"containers": [_container(None, {"cpu": "1"})]}, "Burstable"),
    ("requests only", {"containers": [_container(BOTH)]}, "Burstable"),
    (
        "one container without limits",
        {"containers": [_container(None, BOTH), _container()]},
        "Burstable",
    ),
    (
        "an init container counts",
        {"containers": [_container(None, BOTH)], "initContainers": [_container({"cpu": "1"})]},
        "Burstable",
    ),
    (
        "pod-level resources decide alone",
        {"resources": {"limits": BOTH}, "containers": [_container({"cpu": "100m"})]},
        "Guaranteed",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_qos_class(spec: dict[str, Any], expected: str) -> None:
    assert qos_class(spec) == expected


def test_a_new_pod_starts_with_its_qos_class() -> None:
    initial = strategy("Pod").initial_status
    assert initial is not None
    pod: dict[str, Any] = {
        "metadata": {"name": "p"},
        "spec": {"containers": [_container(None, BOTH)]},
    }
    initial(pod)
    assert pod["status"]["qosClass"] == "Guaranteed"
