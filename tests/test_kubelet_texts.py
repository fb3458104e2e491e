"""The kubelet's ways of writing durations and pods in its messages (the node agent's
``CrashLoopBackOff`` message: ``back-off 8s restarting failed container=c pod=p_ns(uid)``),
how it works out a pod's readiness conditions from its containers, and the grace period
it gives a deleted pod."""

from __future__ import annotations

import pytest

from allot.controllers import lifecycle, nodeagent, runtimes
from allot.tenancy import translate


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (1, "1s"),
        (30, "30s"),
        (1.5, "1.5s"),
        (0.25, "0.25s"),
        (60, "1m0s"),
        (300, "5m0s"),
        (90.5, "1m30.5s"),
        (3723, "1h2m3s"),
        (7200, "2h0m0s"),
    ],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert nodeagent.go_duration(seconds) == text


def test_kubelet_pod_name() -> None:
    pod = {"metadata": {"name": "web-1", "namespace": "prod", "uid": "u-1"}}
    assert lifecycle.kubelet_pod_name(pod) == "web-1_prod(u-1)"


def test_a_tenant_reads_the_kubelet_messages_about_its_own_pod() -> None:
    """The host twin's name, namespace and uid in a CrashLoopBackOff message or a BackOff
    event become the tenant pod's (vCluster copies the host's text)."""
    twin = {"metadata": {"name": "web-x-default", "namespace": "tenant-a", "uid": "host-1"}}
    pod = {"metadata": {"name": "web", "namespace": "default", "uid": "tenant-1"}}
    message = "back-off 2s restarting failed container=c pod=web-x-default_tenant-a(host-1)"
    assert translate.kubelet_pod_to_tenant(message, twin, pod) == (
        "back-off 2s restarting failed container=c pod=web_default(tenant-1)"
    )
    assert translate.kubelet_pod_to_tenant("unrelated", twin, pod) == "unrelated"


def _pod(ready: dict[str, bool], conditions: list[dict[str, str]]) -> dict[str, object]:
    return {
        "spec": {"containers": [{"name": name} for name in ready]},
        "status": {
            "containerStatuses": [{"name": n, "ready": r} for n, r in ready.items()],
            "conditions": conditions,
        },
    }


def test_readiness_names_the_unready_containers_in_spec_order() -> None:
    ready_since = {"type": "Ready", "status": "True", "lastTransitionTime": "t0"}
    pod = _pod({"b": False, "a": True, "c": False}, [{"type": "PodScheduled"}, ready_since])
    nodeagent._set_readiness(pod, "t1")
    conditions = pod["status"]["conditions"]  # type: ignore[index]
    assert [c["type"] for c in conditions] == ["PodScheduled", "Ready", "ContainersReady"]
    for condition in conditions[1:]:
        assert condition["status"] == "False"
        assert condition["lastTransitionTime"] == "t1"
        assert condition["reason"] == "ContainersNotReady"
        assert condition["message"] == "containers with unready status: [b c]"


def test_readiness_keeps_the_transition_time_while_unchanged() -> None:
    pod = _pod({"a": True}, [{"type": "Ready", "status": "True", "lastTransitionTime": "t0"}])
    nodeagent._set_readiness(pod, "t1")
    conditions = {c["type"]: c for c in pod["status"]["conditions"]}  # type: ignore[index]
    assert conditions["Ready"] == {"type": "Ready", "status": "True", "lastTransitionTime": "t0"}
    assert conditions["ContainersReady"]["lastTransitionTime"] == "t1"


@pytest.mark.parametrize(
    ("metadata", "spec", "seconds"),
    [
        ({"deletionGracePeriodSeconds": 2}, {"terminationGracePeriodSeconds": 20}, 2),
        ({}, {"terminationGracePeriodSeconds": 20}, 20),
        ({"deletionGracePeriodSeconds": 0}, {"terminationGracePeriodSeconds": 20}, 1),
        ({}, {"terminationGracePeriodSeconds": 0}, 1),
        ({}, {}, 30),
    ],
)
def test_the_grace_period_a_deleted_pods_processes_get(
    metadata: dict[str, int], spec: dict[str, int], seconds: int
) -> None:
    """The kubelet's ``calculateEffectiveGracePeriod``: the deletion's, else the spec's,
    at least 1 s."""
    pod = {"metadata": {"name": "p", **metadata}, "spec": spec}
    assert runtimes.grace_seconds(pod) == seconds
