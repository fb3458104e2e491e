"""The resourceclaim controller when a pod's claim cannot be created from its template
(tests/scenarios/claim-creation.yaml): upstream's ``FailedResourceClaimCreation`` Event on
the pod, counted on one Event however often it is retried, a one-line log without a
traceback, the retry with back-off that succeeds once the quota frees up; and how
``allot explain`` and the tenant sync word that Event for a tenant."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import pytest

from allot.controllers.claims import FAILED_CREATION, ClaimController
from allot.controllers.context import ControllerContext
from allot.controllers.runtime import ControllerManager, ReconcileError
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.store import WatchEvent
from allot.tenancy import names
from allot.tenancy.explain import CAPACITY, CLAIMS, Explanation, explain_twin
from allot.tenancy.translate import message_to_tenant
from allot.types import Obj
from tests.conftest import load_scenarios

CASES = load_scenarios("claim-creation.yaml")
NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)
POD_KEY = ("pod", "team", "trainer")


def _claim_spec(count: int) -> Obj:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu-whole", "count": count}}
    return {"devices": {"requests": [request]}}


def _namespace(tmp_path: Path, quota: int | None, held: int) -> tuple[Registry, ControllerContext]:
    """A host with quota admission, namespace ``team``, its quota and the held claims."""
    registry = Registry(tmp_path, clock=lambda: NOW)
    registry.assemble(registry.standard_plugins())
    context = ControllerContext(HOST_CLUSTER, registry.store, registry.handlers, lambda: NOW)
    context.create("Namespace", {"metadata": {"name": "team"}}, "test")
    if quota is not None:
        hard = {"gpu-whole.deviceclass.resource.k8s.io/devices": str(quota)}
        quota_obj = {
            "metadata": {"name": "team-quota", "namespace": "team"},
            "spec": {"hard": hard},
        }
        context.create("ResourceQuota", quota_obj, "test")
    for index in range(held):
        claim = {"metadata": {"name": f"held-{index}", "namespace": "team"}, "spec": _claim_spec(1)}
        context.create("ResourceClaim", claim, "test")
    return registry, context


def _pod(context: ControllerContext, case: dict[str, Any]) -> None:
    for name, count in (case.get("templates") or {}).items():
        template = {
            "metadata": {"name": name, "namespace": "team"},
            "spec": {"spec": _claim_spec(count)},
        }
        context.create("ResourceClaimTemplate", template, "test")
    entries = [{"name": e, "resourceClaimTemplateName": t} for e, t in case["entries"].items()]
    container = {"name": "c", "image": "busybox", "resources": {"claims": [
        {"name": e["name"]} for e in entries]}}  # fmt: skip
    pod = {"metadata": {"name": "trainer", "namespace": "team"},
           "spec": {"resourceClaims": entries, "containers": [container]}}  # fmt: skip
    context.create("Pod", pod, "test")


def _failures(context: ControllerContext) -> list[Obj]:
    return [e for e in context.list("Event", "team") if e["reason"] == FAILED_CREATION]


def _generated(context: ControllerContext) -> tuple[dict[str, str], list[str]]:
    """Entry -> claim, from the pod's status, and the claims the pod owns."""
    pod = context.get("Pod", "team", "trainer")
    assert pod is not None
    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
    owned = [
        c["metadata"]["name"]
        for c in context.list("ResourceClaim", "team")
        if any(o["uid"] == pod["metadata"]["uid"] for o in c["metadata"].get("ownerReferences", []))
    ]
    return {s["name"]: s["resourceClaimName"] for s in statuses}, sorted(owned)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_claim_creation(tmp_path: Path, case: dict[str, Any]) -> None:
    registry, context = _namespace(tmp_path, case.get("quota"), case.get("held", 0))
    try:
        _pod(context, case)
        controller = ClaimController(context)
        controller.initial_keys()
        if "created" in case:
            controller.reconcile(POD_KEY)
            generated, owned = _generated(context)
            assert sorted(generated) == sorted(case["created"])
            assert owned == sorted(generated.values())
            assert _failures(context) == []
            return
        for attempt in (1, 2, 3):  # retried: one Event, counted
            with pytest.raises(ReconcileError) as raised:
                controller.reconcile(POD_KEY)
            assert str(raised.value) == f"pod team/trainer, {case['event']}"
            [event] = _failures(context)
            assert (event["type"], event["message"], event["count"]) == (
                "Warning", case["event"], attempt)  # fmt: skip
            assert event["involvedObject"]["name"] == "trainer"
            assert event["source"] == {"component": "resource_claim"}  # upstream's recorder
        generated, owned = _generated(context)
        assert generated == {}  # claims made before the refusal are found again, not listed
        assert len(owned) < len(case["entries"])
        if "afterFreeing" not in case:
            return
        for index in range(case.get("held", 0)):
            context.delete("ResourceClaim", "team", f"held-{index}")
        controller.reconcile(POD_KEY)
        generated, owned = _generated(context)
        assert sorted(generated) == sorted(case["afterFreeing"])
        assert owned == sorted(generated.values())  # one claim per entry, no duplicate
        assert all(claim.startswith(f"trainer-{e}-") for e, claim in generated.items())
    finally:
        registry.close()


def test_the_runtime_retries_a_refusal_with_back_off_and_logs_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Driven by the controller manager as on the platform: the refused create is logged
    without a traceback, and the back-off's retry (no store event names the pod) creates
    the claim once the held one is deleted."""
    case = next(c for c in CASES if c["name"] == "the quota refuses the claim")
    registry, context = _namespace(tmp_path, 1, 1)

    async def run() -> dict[str, str]:
        manager = ControllerManager([ClaimController(context)])
        manager.subscribe(context.client.dispatcher)
        _pod(context, case)
        manager.start()
        try:
            while not _failures(context):
                await asyncio.sleep(0.01)
            context.delete("ResourceClaim", "team", "held-0")
            for _ in range(500):
                generated, _owned = _generated(context)
                if generated:
                    return generated
                await asyncio.sleep(0.01)
            return {}
        finally:
            await manager.stop()

    try:
        with caplog.at_level(logging.ERROR, logger="allot.controllers"):
            generated = asyncio.run(run())
        assert list(generated) == ["gpu"]
        failures = [r for r in caplog.records if "reconciling" in r.getMessage()]
        assert failures, "the refusal was not logged"
        assert all(r.exc_info is None for r in failures)  # one line each, no traceback
        assert (
            failures[0]
            .getMessage()
            .startswith(
                "resourceclaim: reconciling ('pod', 'team', 'trainer') failed (attempt 1, "
                "retry in 0.10s): pod team/trainer, PodResourceClaim gpu: create ResourceClaim : "
            )
        )
        assert all("exceeded quota: team-quota" in r.getMessage() for r in failures)
    finally:
        registry.close()


def test_an_unexpected_failure_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        name = "broken"

        def keys_for(self, event: WatchEvent) -> list[Hashable]:
            return []

        def initial_keys(self) -> list[Hashable]:
            return ["k"]

        def reconcile(self, key: Hashable) -> None:
            raise KeyError("a bug")

    async def run() -> None:
        manager = ControllerManager([Broken()])
        manager.start()
        await asyncio.sleep(0.05)
        await manager.stop()

    with caplog.at_level(logging.ERROR, logger="allot.controllers"):
        asyncio.run(run())
    [record] = [r for r in caplog.records if "reconciling" in r.getMessage()]
    assert record.exc_info is not None


REFUSED = (
    "PodResourceClaim gpu: create ResourceClaim : resourceclaims.resource.k8s.io "
    '"wide-5d-x7.default-gpu-" is forbidden: exceeded quota: tenant-quota, requested: '
    "gpu-whole.deviceclass.resource.k8s.io/devices=1, used: "
    "gpu-whole.deviceclass.resource.k8s.io/devices=1, limited: "
    "gpu-whole.deviceclass.resource.k8s.io/devices=1"
)


def _twin(statuses: list[Obj] | None = None) -> Obj:
    return {
        "metadata": {
            "name": "wide-5d-x7.default",
            "namespace": "tenant-legal-ai",
            "uid": "twin-uid",
            "labels": {names.TENANT_LABEL: "legal-ai", names.TENANT_NAMESPACE_LABEL: "default"},
            "annotations": {names.NAME_ANNOTATION: "wide-5d-x7"},
        },
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "whole-t"}]},
        "status": {"resourceClaimStatuses": statuses} if statuses else {},
    }


def _event(name: str, message: str, last: str, uid: str = "twin-uid") -> Obj:
    return {
        "metadata": {"name": name, "namespace": "tenant-legal-ai"},
        "involvedObject": {"kind": "Pod", "name": "wide-5d-x7.default", "uid": uid},
        "reason": FAILED_CREATION,
        "type": "Warning",
        "message": message,
        "lastTimestamp": last,
    }


def test_explain_reads_the_newest_failed_creation_in_the_tenants_names() -> None:
    older = _event("a", "PodResourceClaim gpu: resource claim template ...", "2026-01-01T00:00:00Z")
    newest = _event("b", REFUSED, "2026-01-01T00:05:00Z")
    other_pod = _event("c", REFUSED.replace("gpu-whole", "x"), "2026-01-02T00:00:00Z", uid="o")
    explained = explain_twin(_twin(), [], [older, newest, other_pod])
    tenant_text = REFUSED.replace("wide-5d-x7.default-gpu-", "wide-5d-x7-gpu-")
    assert explained == Explanation(CLAIMS, f"{FAILED_CREATION}: {tenant_text}")
    assert explained.text("pod default/wide-5d-x7 of tenant legal-ai").splitlines() == [
        "pod default/wide-5d-x7 of tenant legal-ai waits for its ResourceClaims to be created:",
        f"  {FAILED_CREATION}: {tenant_text}",
    ]
    # once the claim exists, the old Event no longer explains anything
    created = _twin([{"name": "gpu", "resourceClaimName": "wide-5d-x7.default-gpu-abcde"}])
    assert explain_twin(created, [], [newest]) == Explanation(
        CAPACITY, "not scheduled yet: the scheduler has not judged it yet"
    )


def test_host_messages_name_the_tenants_objects() -> None:
    origin = ("default", "wide-5d-x7")
    assert (
        message_to_tenant(
            "pod tenant-legal-ai/wide-5d-x7.default: no",
            "tenant-legal-ai",
            "wide-5d-x7.default",
            origin,
        )
        == "pod default/wide-5d-x7: no"
    )
    assert message_to_tenant(REFUSED, "tenant-legal-ai", "wide-5d-x7.default", origin) == (
        REFUSED.replace("wide-5d-x7.default-gpu-", "wide-5d-x7-gpu-")
    )
    assert message_to_tenant("text", "ns", "", origin) == "text"
