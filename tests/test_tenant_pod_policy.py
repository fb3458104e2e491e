"""The entitlement policy's pod rules, evaluated without HTTP (the refused entries of
tests/scenarios/sandbox.yaml, which the end-to-end suite sends through kubectl): each pod
that would open its sandbox is denied with exactly the policy's text, a plain pod and a
non-root ``runAsUser`` pass, and pods outside tenant namespaces are not matched."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.api.kinds import decode
from allot.registry.admission import AdmissionDenied, AdmissionRequest, Operation
from allot.registry.clusters import Registry
from allot.registry.resources import by_kind
from allot.statuses import to_status
from allot.tenancy import entitlement
from tests.tenant_host import create, host_with_policy

SCENARIOS = yaml.safe_load((Path(__file__).parent / "scenarios" / "sandbox.yaml").read_text())
REFUSED = [s for s in SCENARIOS if "refused" in s]
PREFIX = (
    "pods \"p\" is forbidden: ValidatingAdmissionPolicy 'allot-tenant-pods' with binding "
    "'allot-tenant-pods.legal-ai' denied request: "
)


@pytest.fixture
def api(tmp_path: Path) -> Registry:
    return host_with_policy(
        tmp_path, ["gpu-whole"], entitlement.pods_policy(), entitlement.PODS_POLICY
    )


def _pod(namespace: str, spec: Any = None, container: Any = None) -> dict[str, Any]:
    main = {"name": "main", "image": "busybox", "command": ["true"], **(container or {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace},
        "spec": {"containers": [main], **(spec or {})},
    }


@pytest.mark.parametrize("scenario", REFUSED, ids=[s["name"] for s in REFUSED])
def test_a_pod_that_opens_the_sandbox_is_denied(api: Registry, scenario: dict[str, Any]) -> None:
    fields = scenario["refused"]
    pod = _pod("tenant-legal-ai", fields.get("spec"), fields.get("container"))
    with pytest.raises(AdmissionDenied) as denied:
        create(api, pod)
    status = to_status(denied.value)
    assert status.code == 403
    assert status.reason == "Forbidden"
    pattern = re.escape(PREFIX) + scenario["error"] + r".* \(tenant legal-ai\)"
    assert re.fullmatch(pattern, status.message or ""), status.message


def test_plain_and_non_root_pods_pass(api: Registry) -> None:
    create(api, _pod("tenant-legal-ai"))
    non_root = _pod("tenant-legal-ai", container={"securityContext": {"runAsUser": 1000}})
    non_root["metadata"]["name"] = "q"
    create(api, non_root)


def test_the_platform_namespaces_are_not_matched(api: Registry) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops"}}
    create(api, ns)
    create(api, _pod("ops", {"hostNetwork": True, "securityContext": {"runAsUser": 0}}))


def _debug_request(api: Registry, pod: dict[str, Any]) -> AdmissionRequest:
    """The UPDATE of ``pods/ephemeralcontainers`` that ``kubectl debug`` sends (and
    vCluster's pod sync sends on the host for a tenant's ``kubectl debug``)."""
    stored = create(api, pod).object
    debugger = {"name": "debugger", "image": "busybox", "securityContext": {"privileged": True}}
    spec = {**stored["spec"], "ephemeralContainers": [debugger]}
    created, debugged = decode(stored), decode({**stored, "spec": spec})
    return AdmissionRequest(
        cluster="host",
        operation=Operation.UPDATE,
        resource=by_kind("Pod"),
        subresource="ephemeralcontainers",
        namespace=pod["metadata"]["namespace"],
        name="p",
        object=debugged,
        old_object=created,
        user="system:allot:host",
    )


def test_a_privileged_debug_container_is_denied(api: Registry) -> None:
    request = _debug_request(api, _pod("tenant-legal-ai"))
    with pytest.raises(AdmissionDenied) as denied:
        api.policies.admit(request)
    assert to_status(denied.value).message == (
        "pods \"p\" is forbidden: ValidatingAdmissionPolicy 'allot-tenant-pods' with binding "
        "'allot-tenant-pods.legal-ai' denied request: privileged containers and added "
        "capabilities other than NET_BIND_SERVICE are not allowed in tenant pods (container "
        "debugger) (tenant legal-ai)"
    )


def test_a_debug_container_outside_tenant_namespaces_is_not_matched(api: Registry) -> None:
    create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops"}})
    assert api.policies.admit(_debug_request(api, _pod("ops"))) == []
