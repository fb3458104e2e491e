"""ResourceQuota on pods' compute resources (tests/scenarios/compute-quota.yaml): what
admission refuses, with upstream's texts, and what the status controller reports as
``status.used`` (what ``kubectl describe quota`` prints) after each step; plus the pod
evaluator's usage (``PodRequests``/``PodLimits``) against a sum-and-max oracle."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.api.quantity import Quantity
from allot.controllers.context import ControllerContext
from allot.controllers.quota import QuotaStatus
from allot.registry import HOST_CLUSTER
from allot.registry.admission import AdmissionDenied
from allot.registry.clusters import Registry
from allot.registry.quota import pod_usage
from allot.statuses import to_status
from allot.types import Obj
from tests.conftest import load_scenarios

CASES = load_scenarios("compute-quota.yaml")
START = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


class World:
    """Namespace ``team`` with quota ``compute`` on a host whose clock the steps move."""

    def __init__(self, tmp_path: Path, case: dict[str, Any]) -> None:
        self.now = START
        self.registry = Registry(tmp_path, clock=lambda: self.now)
        self.registry.assemble(self.registry.standard_plugins())
        self.registry.handlers.graceful_pods_in = lambda cluster: True  # as with a node agent
        self.context = ControllerContext(
            HOST_CLUSTER, self.registry.store, self.registry.handlers, lambda: self.now
        )
        self.context.create("Namespace", {"metadata": {"name": "team"}}, "test")
        spec = {k: case[k] for k in ("hard", "scopes", "scopeSelector") if k in case}
        quota = {"metadata": {"name": "compute", "namespace": "team"}, "spec": spec}
        self.context.create("ResourceQuota", quota, "test")

    def used(self) -> dict[str, str]:
        QuotaStatus(self.context).reconcile((HOST_CLUSTER, "team"))
        quota = self.context.get("ResourceQuota", "team", "compute")
        assert quota is not None
        used: dict[str, str] = quota["status"]["used"]
        return used

    def run(self, step: dict[str, Any]) -> None:
        if "create" in step:
            self._create(step["create"], step.get("refused"))
        for name, phase in (step.get("phase") or {}).items():
            pod = self.context.get("Pod", "team", name)
            assert pod is not None
            pod["status"]["phase"] = phase
            self.context.update_status("Pod", pod, "test")
        if "bind" in step:
            self.context.bind("team", step["bind"], "node-a")
        if "delete" in step:
            options = {"gracePeriodSeconds": step["grace"]} if "grace" in step else None
            self.context.delete("Pod", "team", step["delete"], options)
        self.now += dt.timedelta(seconds=step.get("advance", 0))

    def _create(self, shorthand: dict[str, Any], refused: str | None) -> None:
        pod = _pod(shorthand)
        if refused is None:
            self.context.create("Pod", pod, "test")
            return
        with pytest.raises(AdmissionDenied) as caught:
            self.context.create("Pod", pod, "test")
        status = to_status(caught.value)
        assert (status.code, status.reason) == (403, "Forbidden")
        assert status.message == refused


def _container(shorthand: dict[str, Any]) -> Obj:
    container: Obj = {"name": shorthand["name"], "image": "busybox"}
    resources = {k: shorthand[k] for k in ("requests", "limits") if k in shorthand}
    if resources:
        container["resources"] = resources
    if "restartPolicy" in shorthand:
        container["restartPolicy"] = shorthand["restartPolicy"]
    return container


def _pod(shorthand: dict[str, Any]) -> Obj:
    spec: Obj = {"containers": [_container(c) for c in shorthand["containers"]]}
    if "initContainers" in shorthand:
        spec["initContainers"] = [_container(c) for c in shorthand["initContainers"]]
    for key in ("resources", "activeDeadlineSeconds", "priorityClassName"):
        if key in shorthand:
            spec[key] = shorthand[key]
    return {"metadata": {"name": shorthand["name"], "namespace": "team"}, "spec": spec}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_compute_quota(tmp_path: Path, case: dict[str, Any]) -> None:
    world = World(tmp_path, case)
    try:
        for step in case["steps"]:
            world.run(step)
            if "used" in step:
                assert world.used() == step["used"]
    finally:
        world.registry.store.close()


_MILLIS = st.integers(min_value=0, max_value=4000)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    regular=st.lists(_MILLIS, min_size=1, max_size=4),
    init=st.lists(_MILLIS, max_size=3),
)
def test_requests_are_the_larger_of_the_sum_and_each_init_container(
    regular: list[int], init: list[int]
) -> None:
    """Without sidecars a pod is charged max(sum of containers, largest init container),
    for requests and limits alike, and the bare key equals ``requests.``."""

    def containers(millis: list[int], prefix: str) -> list[Obj]:
        amounts = [{"cpu": f"{m}m"} for m in millis]
        return [
            {"name": f"{prefix}{i}", "resources": {"requests": a, "limits": a}}
            for i, a in enumerate(amounts)
        ]

    spec = {"containers": containers(regular, "c"), "initContainers": containers(init, "i")}
    charged = pod_usage({"metadata": {}, "spec": spec, "status": {"phase": "Running"}})
    expected = Quantity(max([sum(regular), *init]) * 10**6)
    assert charged["requests.cpu"] == expected
    assert charged["limits.cpu"] == expected
    assert charged["cpu"] == expected
