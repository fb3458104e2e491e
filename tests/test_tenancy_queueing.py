"""The fair-sharing admission controller (allot.tenancy.queueing) and the demand it charges.

The demand table (`tests/scenarios/fair-sharing-demand.yaml`) runs on a DRA index of seed
000's fleet. The controller tests run a whole platform in-process (store, handlers,
admission, the sync, the scheduler and node agent on the test's loop; see
`tests/queueing_platform.py`): tenants in one cohort borrow, wait with the engine's
message, reclaim by preemption, and gangs are admitted all together.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.api.quantity import NANO, Quantity
from allot.dra import DraIndex
from allot.driver.fleet import SEED_000_FLEET, expand, parse_fleet
from allot.driver.publisher import device_classes
from allot.driver.slices import node_slices
from allot.fairshare.books import Standing
from allot.platform import Platform
from allot.tenancy import names
from allot.tenancy.demand import ClassMemory, workload_demand
from allot.tenancy.explain import ADMISSION, CAPACITY, PREEMPTION, QUOTA, Explanation, explain_twin
from allot.tenancy.queueing import ADMITTED_AT
from tests.queueing_platform import (
    CLASSES,
    condition,
    events,
    host,
    job,
    pod,
    prepare,
    settle,
    start,
    stop,
    template,
    tenant,
    tenant_object,
    twin,
    write,
)

Obj = dict[str, Any]
DEMAND = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "fair-sharing-demand.yaml").read_text()
)
EXTENDED_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu-ext"},
    "spec": {
        "extendedResourceName": "example.com/gpu",
        "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}],
    },
}


# ------------------------------------------------------------------------ demand
def _seed_index() -> DraIndex:
    index = DraIndex()
    slices = []
    for spec in expand(parse_fleet(SEED_000_FLEET)):
        for number, document in enumerate(
            node_slices(spec.name, "uid", spec.gpus, dynamic_mig=spec.dynamic_mig)
        ):
            document["metadata"].setdefault("name", f"{spec.name}-{number}")
            slices.append(document)
    classes = [*device_classes(), *yaml.safe_load_all(CLASSES.read_text()), EXTENDED_CLASS]
    index.refresh(slices, classes, [])
    return index


def _case_pod(number: int, item: Obj) -> Obj:
    claims = [
        {
            "name": entry,
            (
                "resourceClaimName" if ref.startswith("claim:") else "resourceClaimTemplateName"
            ): ref.split(":", 1)[1],
        }
        for entry, ref in item.get("claims") or []
    ]
    container = {"name": "c", "image": "x", "resources": {"requests": item.get("requests") or {}}}
    return {
        "metadata": {"name": f"p{number}"},
        "spec": {"resourceClaims": claims, "containers": [container]},
    }


@pytest.mark.parametrize("case", DEMAND["cases"], ids=lambda c: c["name"])
def test_demand(case: Obj) -> None:
    objects = {
        ("ResourceClaim", name): {"spec": {"devices": {"requests": requests}}}
        for name, requests in (case.get("claims") or {}).items()
    }
    objects.update(
        {
            ("ResourceClaimTemplate", name): {"spec": {"spec": {"devices": {"requests": requests}}}}
            for name, requests in (case.get("templates") or {}).items()
        }
    )
    pods = [_case_pod(n, item) for n, item in enumerate(case["pods"])]
    demand, missing = workload_demand(
        pods,
        lambda kind, name: objects.get((kind, name)),
        ClassMemory(_seed_index()),
        case.get("heldElsewhere") or [],
    )
    expected = {
        r: Quantity.parse(str(v)).nanos // NANO for r, v in (case.get("demand") or {}).items()
    }
    assert dict(demand) == expected
    assert missing == case.get("missing", [])


def test_class_memory_follows_the_catalogue() -> None:
    """A class changed to select other devices is charged their memory from then on."""
    index = _seed_index()
    memory = ClassMemory(index)
    assert memory.largest("gpu-ext") == 40 * 2**30
    narrowed = {**EXTENDED_CLASS, "metadata": {"name": "gpu-ext", "resourceVersion": "2"}}
    narrowed["spec"] = {
        "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].type == 'mig'"}}]
    }
    index.put_class(narrowed)
    assert memory.largest("gpu-ext") == 4864 * 2**20
    assert "example.com/gpu" not in memory.extended_names()


# --------------------------------------------------------------------- controller
LEGAL = tenant_object(
    "legal-ai", {"cohort": "pool", "deviceClasses": [{"name": "gpu-whole", "guaranteed": "1"}]}
)
RESEARCH = tenant_object(
    "research-ai", {"cohort": "pool", "deviceClasses": [{"name": "gpu-slice", "guaranteed": "2"}]}
)


def _run(
    scenario: Callable[[Platform], Awaitable[None]], tmp_path: Path, tenants: list[Obj]
) -> None:
    async def main() -> None:
        api = await start(tmp_path / "data")
        try:
            await prepare(api, tenants)
            await scenario(api)
        finally:
            await stop(api)

    asyncio.run(main())


def test_a_borrower_is_preempted_when_the_lender_reclaims(tmp_path: Path) -> None:
    async def scenario(api: Platform) -> None:
        write(api, "research-ai", template("t", "gpu-whole"))
        write(api, "research-ai", pod("train", "t", {names.PRIORITY_KEY: "5"}))
        await settle(api)
        borrowed = twin(api, "research-ai", "train")
        assert borrowed is not None
        assert borrowed["spec"].get("nodeName") == "a100-whole-pool-0"
        assert "schedulingGates" not in borrowed["spec"]
        assert ADMITTED_AT in borrowed["metadata"]["annotations"]
        reserved = condition(
            tenant(api, "research-ai").get("Pod", "default", "train"), "QuotaReserved"
        )
        assert reserved is not None
        assert reserved["status"] == "True"
        books = api.queueing.state.books
        assert books is not None
        assert books.standing("research-ai", "gpu-whole") == Standing(0, 1, 1, 0)
        assert books.standing("legal-ai", "gpu-whole") == Standing(1, 0, 0, 1)
        shown = api.queueing.state.summary()
        assert shown.cohorts == {"pool": {"gpu-slice": 2, "gpu-whole": 0}}
        assert shown.tenants["research-ai"].resources["gpu-whole"] == Standing(0, 1, 1, 0)
        assert (shown.tenants["research-ai"].admitted, shown.tenants["research-ai"].waiting) == (
            1,
            0,
        )

        write(api, "legal-ai", template("t", "gpu-whole"))
        write(api, "legal-ai", pod("infer", "t"))
        await settle(api, 6)
        assert twin(api, "research-ai", "train") is None
        reason = (
            "Preempted by allot: tenant legal-ai reclaims its guaranteed share borrowed by "
            "research-ai, for legal-ai/default/pod/infer"
        )
        assert f"Preempted: {reason}" in events(api, "research-ai", "default", "train")
        reclaimed = twin(api, "legal-ai", "infer")
        assert reclaimed is not None
        assert reclaimed["spec"].get("nodeName") == "a100-whole-pool-0"
        told = events(api, "legal-ai", "default", "infer")
        assert (
            "Pending: waiting for preemption: evicting research-ai/default/pod/train "
            "(research-ai) to admit legal-ai/default/pod/infer"
        ) in told
        assert any(
            e.startswith("Preempting: Preempting pod train of tenant research-ai") for e in told
        )
        assert (
            "QuotaReserved: Quota reserved for pod infer in legal-ai: 1 gpu-whole, 40Gi gpuMemory"
            in told
        )
        counts = api.queueing.state.tenants
        assert (counts["research-ai"].preempted, counts["legal-ai"].admitted) == (1, 1)
        assert api.queueing.state.summary().preempted == {"legal-ai": 0, "research-ai": 1}
        capacity = api.operations.capacity_document()["sharing"]
        rows = {(r["tenant"], r["resource"]): r for r in capacity["tenants"]}
        assert rows[("research-ai", "gpu-whole")]["preempted"] == 1
        assert rows[("legal-ai", "gpu-whole")]["used"] == "1"

    _run(scenario, tmp_path, [LEGAL, RESEARCH])


def test_a_tenant_is_shown_only_the_classes_it_may_claim_or_holds_a_share_of(
    tmp_path: Path,
) -> None:
    """Issue 28: ``allot top`` showed legal-ai a ``gpu-slice`` row of zeros: its cohort
    governs the class, but legal-ai may not claim it. A class a tenant is guaranteed stays
    shown even unentitled (it lends it); one it may claim stays with zeros."""
    whole = {"matchLabels": {"gpu.platform/tenant": "legal-ai"}}
    legal = {**LEGAL, "spec": {**LEGAL["spec"], "deviceClassSelector": whole}}
    sharing = {"cohort": "pool", "deviceClasses": [{"name": "gpu-whole", "guaranteed": "0"}]}
    lender = tenant_object("lender", {**sharing, "deviceClasses": [
        {"name": "gpu-slice", "guaranteed": "1"}]})  # fmt: skip
    lender["spec"]["deviceClassSelector"] = whole

    async def scenario(api: Platform) -> None:
        write(api, "research-ai", template("t", "gpu-slice"))
        write(api, "research-ai", pod("sweep", "t"))
        await settle(api)
        shown = api.queueing.state.summary().tenants
        assert sorted(shown["legal-ai"].resources) == ["gpu-whole"]
        assert sorted(shown["research-ai"].resources) == ["gpu-slice", "gpu-whole"]
        assert sorted(shown["lender"].resources) == ["gpu-slice", "gpu-whole"]
        rows = api.operations.capacity_document()["sharing"]["tenants"]
        assert ("legal-ai", "gpu-slice") not in {(r["tenant"], r["resource"]) for r in rows}

    _run(scenario, tmp_path, [legal, RESEARCH, lender])


def test_the_preempted_pod_carries_disruption_target_to_the_tenant(tmp_path: Path) -> None:
    """A finalizer keeps the tenant's pod after its twin is gone: its last status shows
    why it went."""

    async def scenario(api: Platform) -> None:
        write(api, "research-ai", template("t", "gpu-whole"))
        kept = pod("train", "t")
        kept["metadata"]["finalizers"] = ["example.com/keep"]
        write(api, "research-ai", kept)
        await settle(api)
        write(api, "legal-ai", template("t", "gpu-whole"))
        write(api, "legal-ai", pod("infer", "t"))
        await settle(api, 6)
        mine = tenant(api, "research-ai").get("Pod", "default", "train")
        assert mine is not None
        assert mine["metadata"].get("deletionTimestamp")
        target = condition(mine, "DisruptionTarget")
        assert target is not None
        assert (target["status"], target["reason"]) == ("True", "PreemptionByAllot")
        assert "tenant legal-ai reclaims its guaranteed share" in target["message"]

    _run(scenario, tmp_path, [LEGAL, RESEARCH])


def test_a_workload_waits_with_the_engines_message_and_one_event(tmp_path: Path) -> None:
    capped = tenant_object(
        "research-ai",
        {
            "cohort": "pool",
            "deviceClasses": [
                {"name": "gpu-slice", "guaranteed": "2"},
                {"name": "gpu-whole", "guaranteed": "0", "borrowingLimit": "0"},
            ],
        },
    )

    async def scenario(api: Platform) -> None:
        write(api, "research-ai", template("t", "gpu-whole"))
        write(api, "research-ai", pod("train", "t"))
        await settle(api)
        held = twin(api, "research-ai", "train")
        assert held is not None
        assert not held["spec"].get("nodeName")
        assert held["spec"]["schedulingGates"] == [{"name": "allot.dev/admission"}]
        message = (
            "waiting for quota: needs 1 gpu-whole; research-ai has 0 of 0 guaranteed free, "
            "may borrow at most 0 and borrows 0; the cohort pool lends 1 (legal-ai lends at "
            "most 1)"
        )
        mine = tenant(api, "research-ai").get("Pod", "default", "train")
        assert condition(mine, "QuotaReserved") == {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": message,
            "lastTransitionTime": condition(mine, "QuotaReserved")["lastTransitionTime"],  # type: ignore[index]
        }
        write(api, "research-ai", pod("other", "t"))  # another pass, the same message
        await settle(api)
        pending = [
            e
            for e in host(api).list("Event", names.host_namespace("research-ai"))
            if e["reason"] == "Pending" and e["involvedObject"]["name"] == held["metadata"]["name"]
        ]
        assert [e.get("count") for e in pending] == [1]
        assert api.queueing.state.tenants["research-ai"].waiting == 2
        assert api.queueing.state.waiting["research-ai/default/pod/train"].message == message

    _run(scenario, tmp_path, [LEGAL, capped])


def test_a_gang_is_admitted_all_or_nothing(tmp_path: Path) -> None:
    alone = tenant_object("legal-ai", {"deviceClasses": [{"name": "gpu-slice", "guaranteed": "2"}]})

    async def scenario(api: Platform) -> None:
        write(api, "legal-ai", template("s", "gpu-slice"))
        write(api, "legal-ai", job("wide", "s", 3))
        await settle(api)
        pods = host(api).list("Pod", names.host_namespace("legal-ai"))
        assert len(pods) == 3
        assert all(p["spec"].get("schedulingGates") for p in pods)
        waiting = api.queueing.state.waiting["legal-ai/default/job/wide"]
        assert waiting.message.startswith(
            "waiting for quota: needs 3 gpu-slice; legal-ai has 2 of 2"
        )
        write(api, "legal-ai", job("pair", "s", 2))
        await settle(api)
        pair = [
            p
            for p in host(api).list("Pod", names.host_namespace("legal-ai"))
            if p["metadata"]["annotations"].get(names.OWNER_ANNOTATION) == "Job/pair"
        ]
        assert len(pair) == 2
        assert all(p["spec"].get("nodeName") for p in pair)
        stamps = {p["metadata"]["annotations"][ADMITTED_AT] for p in pair}
        assert len(stamps) == 1  # admitted together, in one pass

    _run(scenario, tmp_path, [alone])


def test_a_gang_waits_for_its_pods(tmp_path: Path) -> None:
    """Quota lets the Job create only two of its three pods: the gang is not admitted."""
    capped = tenant_object(
        "legal-ai",
        {"deviceClasses": [{"name": "gpu-slice", "guaranteed": "4"}]},
        {"hard": {"pods": "2"}},
    )

    async def scenario(api: Platform) -> None:
        write(api, "legal-ai", template("s", "gpu-slice"))
        write(api, "legal-ai", job("wide", "s", 3))
        await settle(api)
        pods = host(api).list("Pod", names.host_namespace("legal-ai"))
        assert len(pods) == 2
        assert all(p["spec"].get("schedulingGates") for p in pods)
        assert api.queueing.state.waiting["legal-ai/default/job/wide"].message == (
            "waiting for 1 more pod(s) of Job default/wide: a gang is admitted all together "
            "(2 of 3 exist)"
        )

    _run(scenario, tmp_path, [capped])


def test_higher_priority_preempts_lower_within_a_tenant(tmp_path: Path) -> None:
    async def scenario(api: Platform) -> None:
        write(api, "legal-ai", template("t", "gpu-whole"))
        write(api, "legal-ai", pod("low", "t"))
        await settle(api)
        write(api, "legal-ai", pod("high", "t", {names.PRIORITY_KEY: "10"}))
        await settle(api, 6)
        assert twin(api, "legal-ai", "low") is None
        assert (
            "Preempted: Preempted by allot to admit legal-ai/default/pod/high of tenant "
            "legal-ai (priority 10 over 0)"
        ) in events(api, "legal-ai", "default", "low")
        high = twin(api, "legal-ai", "high")
        assert high is not None
        assert high["spec"].get("nodeName")

    _run(scenario, tmp_path, [LEGAL, RESEARCH])


def test_admission_survives_a_restart(tmp_path: Path) -> None:
    """The admitted-at annotation keeps the admitted workload admitted, and nothing is
    evicted or admitted twice when the platform comes back."""

    async def main() -> None:
        api = await start(tmp_path / "data")
        await prepare(api, [LEGAL, RESEARCH])
        write(api, "research-ai", template("t", "gpu-whole"))
        write(api, "research-ai", pod("first", "t"))
        write(api, "research-ai", pod("second", "t"))
        await settle(api)
        before = twin(api, "research-ai", "first")
        await stop(api)
        again = await start(tmp_path / "data")
        await settle(again)
        after = twin(again, "research-ai", "first")
        assert before is not None
        assert after is not None
        assert (
            after["metadata"]["annotations"][ADMITTED_AT]
            == before["metadata"]["annotations"][ADMITTED_AT]
        )
        second = twin(again, "research-ai", "second")
        assert second is not None
        assert second["spec"].get("schedulingGates")
        assert again.queueing.state.tenants["research-ai"].admitted == 1
        await stop(again)

    asyncio.run(main())


# ------------------------------------------------------------------------ explain
def _host_pod(name: str, conditions: list[Obj], **spec: Any) -> Obj:
    return {
        "metadata": {
            "name": f"{name}.default",
            "namespace": "tenant-research-ai",
            "labels": {names.TENANT_LABEL: "research-ai", names.TENANT_NAMESPACE_LABEL: "default"},
            "annotations": {names.NAME_ANNOTATION: name},
        },
        "spec": spec,
        "status": {"conditions": conditions},
    }


GATED = {"schedulingGates": [{"name": "allot.dev/admission"}]}


def test_explain_names_quota_preemption_and_capacity() -> None:
    quota = "waiting for quota: needs 1 gpu-whole; research-ai has 0 of 0 guaranteed free"
    waiting = _host_pod(
        "w", [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": quota}],
        **GATED,
    )  # fmt: skip
    assert explain_twin(waiting, []) == Explanation(QUOTA, quota)

    preempting = (
        "waiting for preemption: evicting research-ai/default/pod/v (research-ai) to admit "
        "legal-ai/default/pod/infer"
    )
    reclaimer = _host_pod(
        "infer", [{"type": "QuotaReserved", "status": "False", "message": preempting}], **GATED
    )
    victim = _host_pod("v", [{
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByAllot",
        "message": "Preempted by allot: ... for legal-ai/default/pod/infer",
    }])  # fmt: skip
    victim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    bystander = _host_pod("b", [])
    explained = explain_twin(reclaimer, [victim, bystander])
    assert explained == Explanation(PREEMPTION, preempting, ["research-ai default/v (terminating)"])
    assert "research-ai default/v (terminating)" in explained.text("pod default/infer")

    unschedulable = _host_pod("u", [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 cannot allocate all claims.",
    }])  # fmt: skip
    assert explain_twin(unschedulable, []) == Explanation(
        CAPACITY, "Unschedulable: 0/3 nodes are available: 3 cannot allocate all claims."
    )
    admitted = _host_pod("a", [
        {"type": "QuotaReserved", "status": "True"},
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"},
    ])  # fmt: skip
    assert explain_twin(admitted, []) == Explanation(CAPACITY, "Unschedulable: m", admitted=True)
    assert explain_twin(admitted, []).text("pod p").startswith("pod p is admitted and waits")
    assert explain_twin(unschedulable, []).text("pod p").startswith("pod p waits for capacity:")
    assert explain_twin(_host_pod("n", [], **GATED), []).waits_for == ADMISSION
    running = explain_twin(_host_pod("r", [], nodeName="a100-whole-pool-0"), [])
    assert not running.pending
