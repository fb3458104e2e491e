"""Scheduling gates and the plumbing of fair sharing, in-process (no HTTP).

The host scheduler leaves a gated pod alone (``PodScheduled=False``/``SchedulingGated``
from its creation, no ``FailedScheduling``) and places it once its last gate is removed; a
fair-sharing tenant's pod twins carry the ``allot.dev/admission`` gate, the sync neither
puts a removed gate back nor drops what the host wrote on the twin; ``evict_pod`` marks a
twin ``DisruptionTarget``, deletes it gracefully, and the tenant sees the condition and
the Event, and its Job makes a new pod whose twin waits again. The tenant controller gives
a fair-sharing tenant no device quota.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from allot.api.tenancy import Tenant
from allot.controllers.context import ControllerContext
from allot.controllers.eviction import evict_pod
from allot.platform import Platform, tenant_memory_limit
from allot.registry.kinds import strategy
from allot.store.errors import Conflict
from allot.tenancy import entitlement, names
from allot.tenancy.directory import TenantDirectory, TenantEntry
from allot.tenancy.translate import ADMISSION_GATE
from tests.queueing_platform import settle as _settle
from tests.test_tenancy_convergence import _claim, _pod
from tests.test_tenant_views import HOST_NS, TENANT, _as_tenant, _contexts, _events, _run

Obj = dict[str, Any]
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
SHARING = {
    "cohort": "gpu-pool",
    "deviceClasses": [{"name": "gpu-whole", "guaranteed": "1"}],
}
TWIN = names.host_name("pod-a", "default")
HELD = {"deviceClasses": [{"name": c, "guaranteed": "0"} for c in ("gpu-whole", "gpu-slice")]}
"""Sharing whose queue admits nothing (no guarantee, no cohort to borrow from): the tests
below play the admission controller's part by hand."""


def _condition(pod: Obj, kind: str) -> Obj:
    found: list[Obj] = [c for c in pod["status"].get("conditions") or [] if c["type"] == kind]
    assert len(found) == 1, pod["status"]
    return found[0]


def _status_cell(pod: Obj) -> str:
    table = strategy("Pod").table
    assert table is not None
    return str(table.cells(pod, dt.datetime.now(dt.UTC))[2])


def _host_pod(name: str, gates: list[str]) -> Obj:
    pod = _pod("a")
    pod["metadata"]["name"] = name
    pod["spec"]["schedulingGates"] = [{"name": gate} for gate in gates]
    return pod


def _ungate(host: ControllerContext, namespace: str, name: str, gate: str) -> None:
    pod = host.get("Pod", namespace, name)
    assert pod is not None
    pod["spec"]["schedulingGates"] = [
        g for g in pod["spec"]["schedulingGates"] if g["name"] != gate
    ]
    if not pod["spec"]["schedulingGates"]:
        del pod["spec"]["schedulingGates"]
    host.update("Pod", pod, "test")


def _share(api: Platform, tenant: str = TENANT, hard: dict[str, str] | None = None) -> None:
    host, _ = _contexts(api)
    obj = host.get("Tenant", "", tenant)
    assert obj is not None
    obj["spec"]["sharing"] = HELD
    if hard is not None:
        obj["spec"]["quota"] = {"hard": hard}
    host.update("Tenant", obj, "test")


# ------------------------------------------------------------------- scheduler
def test_a_gated_pod_is_scheduled_once_its_last_gate_is_removed() -> None:
    async def scenario(api: Platform) -> None:
        host, _ = _contexts(api)
        host.create("ResourceClaim", _claim(TENANT, "a"), "test")
        host.create("Pod", _host_pod("p", ["example.com/a", "example.com/b"]), "test")
        await _settle(api)
        pod = host.get("Pod", "default", "p")
        assert pod is not None
        assert not pod["spec"].get("nodeName")
        scheduled = _condition(pod, "PodScheduled")
        assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
            "False",
            "SchedulingGated",
            GATED_MESSAGE,
        )
        assert scheduled["lastTransitionTime"]
        assert _status_cell(pod) == "SchedulingGated"
        assert "FailedScheduling" not in _events(host, "default", "p")
        with pytest.raises(Conflict, match=r"pod p has non-empty \.spec\.schedulingGates"):
            host.bind("default", "p", "any-node")

        _ungate(host, "default", "p", "example.com/a")
        await _settle(api)
        pod = host.get("Pod", "default", "p")
        assert pod is not None
        assert not pod["spec"].get("nodeName"), "scheduled with a gate left"

        _ungate(host, "default", "p", "example.com/b")
        await _settle(api)
        pod = host.get("Pod", "default", "p")
        assert pod is not None
        assert pod["spec"].get("nodeName")
        assert _condition(pod, "PodScheduled")["status"] == "True"
        assert _status_cell(pod) == "Running"
        assert "Scheduled" in _events(host, "default", "p")

    _run(scenario)


# ---------------------------------------------------------------- the sync
def test_a_sharing_tenants_twin_waits_and_the_sync_keeps_the_hosts_admission() -> None:
    async def scenario(api: Platform) -> None:
        _share(api)
        await _settle(api)
        host, tenant = _contexts(api)
        own_gate = {"name": "example.com/mine"}
        pod = _pod("a")
        pod["spec"]["schedulingGates"] = [own_gate]
        _as_tenant(api, "create", _claim(TENANT, "a"))
        _as_tenant(api, "create", pod)
        await _settle(api)
        twin = host.get("Pod", HOST_NS, TWIN)
        assert twin is not None
        assert twin["spec"]["schedulingGates"] == [own_gate, {"name": ADMISSION_GATE}]
        mine = tenant.get("Pod", "default", "pod-a")
        assert mine is not None
        assert mine["spec"]["schedulingGates"] == [own_gate]  # not gated by the platform
        assert _status_cell(mine) == "SchedulingGated"  # the twin's status, copied back

        # the tenant lifts its own gate: the twin loses it, keeps the admission gate
        del mine["spec"]["schedulingGates"]
        _as_tenant(api, "update", mine)
        await _settle(api)
        twin = host.get("Pod", HOST_NS, TWIN)
        assert twin is not None
        assert twin["spec"]["schedulingGates"] == [{"name": ADMISSION_GATE}]
        assert not twin["spec"].get("nodeName")

        # the admission controller's part: annotate, reserve, ungate
        twin["metadata"]["annotations"]["allot.dev/admitted-at"] = "2026-01-01T00:00:00Z"
        del twin["spec"]["schedulingGates"]
        twin = host.update("Pod", twin, "test")
        twin["status"]["conditions"].append(
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}
        )
        host.update_status("Pod", twin, "test")
        host.event(twin, "Normal", "QuotaReserved", f"admitted {TWIN}", "allot-admission")
        await _settle(api)
        twin = host.get("Pod", HOST_NS, TWIN)
        assert twin is not None
        assert twin["spec"].get("nodeName"), "not scheduled once admitted"
        assert "schedulingGates" not in twin["spec"], "the sync put the gate back"
        assert twin["metadata"]["annotations"]["allot.dev/admitted-at"] == "2026-01-01T00:00:00Z"
        mine = tenant.get("Pod", "default", "pod-a")
        assert mine is not None
        assert (
            mine["metadata"]["annotations"][names.HOST_UID_ANNOTATION] == (twin["metadata"]["uid"])
        ), "the twin was recreated"
        assert _condition(mine, "QuotaReserved")["status"] == "True"
        assert _events(tenant, "default", "pod-a")["QuotaReserved"]["message"] == ("admitted pod-a")

    _run(scenario)


def test_an_evicted_twin_shows_disruption_target_on_the_tenants_pod() -> None:
    async def scenario(api: Platform) -> None:
        host, tenant = _contexts(api)
        _as_tenant(api, "create", _claim(TENANT, "a"))
        pod = _pod("a")
        pod["metadata"]["finalizers"] = ["example.com/keep"]  # the tenant keeps it to look
        _as_tenant(api, "create", pod)
        await _settle(api)
        twin = host.get("Pod", HOST_NS, TWIN)
        assert twin is not None
        assert twin["spec"].get("nodeName")
        evicted = evict_pod(
            host.client,
            HOST_NS,
            TWIN,
            reason="PreemptionByAllot",
            message="preempted to reclaim quota for research-ai",
            event_reason="Preempted",
            event_message="Preempted by research-ai/train",
            component="allot-admission",
        )
        assert evicted
        twin = host.get("Pod", HOST_NS, TWIN)
        assert twin is None or twin["metadata"].get("deletionTimestamp")
        assert not evict_pod(
            host.client,
            HOST_NS,
            TWIN,
            reason="x",
            message="x",
            event_reason="x",
            event_message="x",
            component="x",
        ), "a terminating pod is evicted twice"
        await _settle(api)
        assert host.get("Pod", HOST_NS, TWIN) is None
        mine = tenant.get("Pod", "default", "pod-a")
        assert mine is not None
        assert mine["metadata"].get("deletionTimestamp")
        target = _condition(mine, "DisruptionTarget")
        assert (target["status"], target["reason"], target["message"]) == (
            "True",
            "PreemptionByAllot",
            "preempted to reclaim quota for research-ai",
        )
        preempted = _events(tenant, "default", "pod-a")["Preempted"]
        assert preempted["message"] == "Preempted by research-ai/train"
        assert preempted["type"] == "Normal"

    _run(scenario)


def _job(name: str, spec: Obj) -> Obj:
    pod = _pod("a")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {**spec, "template": {"spec": {**pod["spec"], "restartPolicy": "Never"}}},
    }


IGNORE_DISRUPTIONS = {
    "backoffLimit": 0,
    "podFailurePolicy": {
        "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    },
}


def _job_pods(ctx: ControllerContext, namespace: str) -> list[Obj]:
    return [
        p
        for p in ctx.list("Pod", namespace)
        if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == "train"
    ]


@pytest.mark.parametrize(
    ("spec", "failed"), [({}, 1), (IGNORE_DISRUPTIONS, 0)], ids=["backoff", "ignored"]
)
def test_a_preempted_job_pod_is_made_again_and_waits_again(spec: Obj, failed: int) -> None:
    async def scenario(api: Platform) -> None:
        _share(api)
        await _settle(api)
        host, tenant = _contexts(api)
        _as_tenant(api, "create", _claim(TENANT, "a"))
        _as_tenant(api, "create", _job("train", spec))
        await _settle(api)
        (first,) = _job_pods(tenant, "default")
        (twin,) = _job_pods(host, HOST_NS)
        assert twin["spec"]["schedulingGates"] == [{"name": ADMISSION_GATE}]
        _ungate(host, HOST_NS, twin["metadata"]["name"], ADMISSION_GATE)
        await _settle(api)
        assert evict_pod(
            host.client,
            HOST_NS,
            twin["metadata"]["name"],
            reason="PreemptionByAllot",
            message="preempted",
            event_reason="Preempted",
            event_message="preempted",
            component="allot-admission",
        )
        await _settle(api)
        (second,) = _job_pods(tenant, "default")
        assert second["metadata"]["uid"] != first["metadata"]["uid"]
        (again,) = _job_pods(host, HOST_NS)
        assert again["metadata"]["uid"] != twin["metadata"]["uid"]
        assert again["spec"]["schedulingGates"] == [{"name": ADMISSION_GATE}]
        assert not again["spec"].get("nodeName")
        job = tenant.get("Job", "default", "train")
        assert job is not None
        assert int(job["status"].get("failed") or 0) == failed

    _run(scenario)


# ------------------------------------------------------- the tenant controller
def _tenant(spec: Obj) -> Tenant:
    return Tenant.model_validate({"metadata": {"name": "t"}, "spec": spec})


HARD = {
    "pods": "10",
    "count/resourceclaims.resource.k8s.io": "4",
    "gpu-whole.deviceclass.resource.k8s.io/devices": "2",
    "requests.nvidia.com/gpu": "2",
    "requests.deviceclass.resource.kubernetes.io/gpu-whole": "2",
    "requests.cpu": "8",
}


def test_a_sharing_tenant_gets_no_device_quota() -> None:
    hard = entitlement.quota(_tenant({"quota": {"hard": HARD}}))
    assert hard is not None
    assert set(hard["spec"]["hard"]) == set(HARD)
    shared = entitlement.quota(_tenant({"quota": {"hard": HARD}, "sharing": SHARING}))
    assert shared is not None
    assert shared["spec"]["hard"] == {
        "count/resourceclaims.resource.k8s.io": "4",
        "pods": "10",
        "requests.cpu": "8",
    }
    device_only = {"quota": {"hard": {"requests.nvidia.com/gpu": "1"}}, "sharing": SHARING}
    assert entitlement.quota(_tenant(device_only)) is None


def test_the_gpu_memory_quota_does_not_apply_to_a_sharing_tenant() -> None:
    directory = TenantDirectory()
    quota = {"quota": {"gpuMemory": "40Gi"}}
    directory.put(TenantEntry(_tenant(quota)))
    limit = tenant_memory_limit(directory)
    found = limit(names.host_namespace("t"))
    assert found is not None
    assert str(found[1]) == "40Gi"
    directory.put(TenantEntry(_tenant({**quota, "sharing": SHARING})))
    assert limit(names.host_namespace("t")) is None


def test_switching_to_sharing_drops_the_device_keys_of_the_quota() -> None:
    async def scenario(api: Platform) -> None:
        host, _ = _contexts(api)
        obj = host.get("Tenant", "", TENANT)
        assert obj is not None
        obj["spec"]["quota"] = {"hard": {"pods": "5", "requests.nvidia.com/gpu": "2"}}
        host.update("Tenant", obj, "test")
        await _settle(api)
        quota = host.get("ResourceQuota", HOST_NS, entitlement.QUOTA_NAME)
        assert quota is not None
        assert quota["spec"]["hard"] == {"pods": "5", "requests.nvidia.com/gpu": "2"}
        _share(api, hard={"pods": "5"})
        await _settle(api)
        quota = host.get("ResourceQuota", HOST_NS, entitlement.QUOTA_NAME)
        assert quota is not None
        assert quota["spec"]["hard"] == {"pods": "5"}

    _run(scenario)


def test_the_guards_dry_run_of_a_sharing_tenants_pod_passes() -> None:
    async def scenario(api: Platform) -> None:
        _share(api)
        await _settle(api)
        _as_tenant(api, "create", _claim(TENANT, "a"))
        pod = _pod("a")
        pod["spec"]["schedulingGates"] = [{"name": ADMISSION_GATE}]  # twice on the twin: no
        _as_tenant(api, "create", pod)
        await _settle(api)
        host, _ = _contexts(api)
        twin = host.get("Pod", HOST_NS, TWIN)
        assert twin is not None
        assert twin["spec"]["schedulingGates"] == [{"name": ADMISSION_GATE}]

    _run(scenario)
