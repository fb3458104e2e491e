"""Revocation: a class that leaves a tenant's entitlement is never allocated through a claim
the tenant created before (issue 14, item 1).

legal-ai creates a claim and a template of gpu-whole while it is entitled, and a pod using
the claim while every node is cordoned (so it waits for the scheduler). The platform owner
then takes gpu-whole out of its entitlement by relabelling the class. Attacked with the
tenant's own kubectl: the waiting pod is not scheduled once the nodes are back (the
scheduler names the class and the tenant, and the tenant sees it relayed); new pods using
the old claim or template are refused in the tenant's own request, and on the host. With
the entitlement back the pod runs; revoked again while allocated, ``allot doctor`` reports
the claim and a ``RevokedClassAllocated`` alert fires until the entitlement returns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from allot.cli.main import main as allot
from tests.e2e.tenancy import Tenancy, seed_platform

pytestmark = pytest.mark.slow
TENANT_LABEL = "gpu.platform/tenant"
REVOKED = "device class gpu-whole is not in the entitlement of tenant legal-ai (entitled: <none>)"
NAMESPACE = "tenant-legal-ai"
WHOLE = "gpu-whole"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "kept"},
    "spec": {
        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu-whole"}}]}
    },
}
TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "kept-template"},
    "spec": {"spec": CLAIM["spec"]},
}


def _pod(name: str, reference: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
            "resourceClaims": [{"name": "gpu", **reference}],
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "command": ["sleep", "3600"],
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    with seed_platform(tmp_path_factory.mktemp("revocation")) as running:
        yield running


def _entitled(tenancy: Tenancy) -> str:
    params = tenancy.host_json("configmap", "entitlement-legal-ai", "-n", "allot-system")
    return str(params["data"].get("deviceClasses", ""))


def _revoke(tenancy: Tenancy) -> None:
    tenancy.cluster.kubectl("label", "deviceclass", "gpu-whole", f"{TENANT_LABEL}-")
    tenancy.wait(lambda: _entitled(tenancy) == "", "gpu-whole out of legal-ai's params")


def _restore(tenancy: Tenancy) -> None:
    tenancy.cluster.kubectl("label", "deviceclass", "gpu-whole", f"{TENANT_LABEL}=legal-ai")
    tenancy.wait(lambda: _entitled(tenancy) == "gpu-whole", "gpu-whole back in legal-ai's params")


def _host_pod(tenancy: Tenancy, name: str) -> Any:
    return tenancy.host_json("pod", f"{name}.default", "-n", NAMESPACE)


def _scheduled_condition(pod: Any) -> dict[str, Any]:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "PodScheduled"), {})


def _revoked_alerts(tenancy: Tenancy) -> list[Any]:
    alerts = tenancy.host_json("alerts")["items"]
    return [a for a in alerts if a["spec"]["rule"] == "RevokedClassAllocated"]


def _allocation(tenancy: Tenancy) -> Any:
    claim = tenancy.host_json("resourceclaim", "kept.default", "-n", NAMESPACE)
    return (claim.get("status") or {}).get("allocation")


def test_a_waiting_pod_is_not_scheduled_through_a_revoked_class(tenancy: Tenancy) -> None:
    nodes = [n["metadata"]["name"] for n in tenancy.host_json("nodes")["items"]]
    for node in nodes:
        tenancy.cluster.kubectl("cordon", node)
    for obj in (CLAIM, TEMPLATE, _pod("first", {"resourceClaimName": "kept"})):
        tenancy.as_tenant("legal-ai", "create", "-f", "-", stdin=json.dumps(obj))
    tenancy.wait(
        lambda: (
            "unschedulable" in _scheduled_condition(_host_pod(tenancy, "first")).get("message", "")
        ),
        "the pod waiting for a schedulable node",
    )
    _revoke(tenancy)
    for node in nodes:
        tenancy.cluster.kubectl("uncordon", node)
    tenancy.wait(
        lambda: REVOKED in _scheduled_condition(_host_pod(tenancy, "first")).get("message", ""),
        "the scheduler refusing the revoked class",
    )
    assert not _host_pod(tenancy, "first")["spec"].get("nodeName")
    assert _allocation(tenancy) is None
    relayed = tenancy.wait(
        lambda: [
            e
            for e in tenancy.tenant_events("legal-ai", "first")
            if e.startswith("FailedScheduling") and REVOKED in e
        ],
        "the refusal relayed to the tenant's pod",
    )
    assert relayed[0].startswith('FailedScheduling: resourceclaim "kept": device class'), relayed


@pytest.mark.parametrize(
    "reference",
    [{"resourceClaimName": "kept"}, {"resourceClaimTemplateName": "kept-template"}],
    ids=["claim", "template"],
)
def test_a_new_pod_using_an_old_claim_is_refused(
    tenancy: Tenancy, reference: dict[str, str]
) -> None:
    before = tenancy.host_objects(NAMESPACE)
    pod = _pod("second", reference)
    result = tenancy.as_tenant("legal-ai", "create", "-f", "-", stdin=json.dumps(pod), check=False)
    assert result.returncode != 0, result.stdout
    assert REVOKED in result.stderr
    assert tenancy.host_objects(NAMESPACE) == before
    host_reference = {k: f"{v}.default" for k, v in reference.items()}
    twin = _pod("second.default", host_reference)
    twin["metadata"]["namespace"] = NAMESPACE
    on_host = tenancy.cluster.kubectl("create", "-f", "-", stdin=json.dumps(twin), check=False)
    assert on_host.returncode != 0, on_host.stdout
    assert REVOKED in on_host.stderr
    assert tenancy.host_objects(NAMESPACE) == before


def test_an_allocation_of_a_revoked_class_is_reported_and_alerted(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    _restore(tenancy)
    tenancy.wait(lambda: _host_pod(tenancy, "first")["spec"].get("nodeName"), "the pod scheduled")
    assert _allocation(tenancy) is not None
    _revoke(tenancy)
    kubeconfig = str(tenancy.cluster.kubeconfig)
    assert allot(["doctor", "--kubeconfig", kubeconfig, "-o", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {
        "tenant": "legal-ai",
        "kind": "ResourceClaim",
        "object": f"{NAMESPACE}/kept.default",
        "deviceClass": "gpu-whole",
        "entitled": [],
        "allocated": True,
    } in report["entitlementViolations"]
    alerts = tenancy.wait(
        lambda: [
            a
            for a in tenancy.host_json("alerts")["items"]
            if a["spec"]["rule"] == "RevokedClassAllocated"
        ],
        "a RevokedClassAllocated alert",
    )
    assert alerts[0]["spec"]["message"].startswith(
        "claim kept of tenant legal-ai holds devices of class gpu-whole,"
    ), alerts[0]["spec"]["message"]
    _restore(tenancy)
    tenancy.wait(
        lambda: (
            not [
                a
                for a in tenancy.host_json("alerts")["items"]
                if a["spec"]["rule"] == "RevokedClassAllocated"
            ]
        ),
        "the alert cleared",
    )
