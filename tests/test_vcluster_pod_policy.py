"""vCluster runs in a tenant's namespace under the rendered pod policy, and no tenant
passes for it.

The chart's control plane (tests/data/vcluster-v0.36.1/control-plane-statefulset.yaml,
its syncer running as root) is created on allot's embedded API server and its pod made
by allot's StatefulSet controller, through admission as kube-controller-manager's would
be: the policy lets it in. The workloads vCluster syncs, CoreDNS among them, and pods
that copy vCluster's marks are judged (tests/scenarios/vcluster-host-pods.yaml). Each of
the marks that tell the control plane apart is needed: without any one of them, the
chart's own pod is refused.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.controllers.workloads import pod_from_template
from allot.registry.admission import AdmissionDenied
from allot.registry.clusters import Registry
from allot.statuses import to_status
from allot.tenancy import entitlement, translate
from tests.apps_driver import AppsDriver
from tests.tenant_host import bind_to_legal_ai, create, host_with_policy

TESTS = Path(__file__).parent
STATEFULSET = yaml.safe_load(
    (TESTS / "data" / "vcluster-v0.36.1" / "control-plane-statefulset.yaml").read_text()
)
SCENARIOS = yaml.safe_load((TESTS / "scenarios" / "vcluster-host-pods.yaml").read_text())
NAMESPACE = "tenant-legal-ai"
ROOT_REFUSED = r"tenant pods cannot run as root \(runAsUser: 0\); .* \(tenant legal-ai\)"


@pytest.fixture
def api(tmp_path: Path) -> Registry:
    return host_with_policy(tmp_path, [], entitlement.pods_policy(), entitlement.PODS_POLICY)


def _refusal(api: Registry, pod: dict[str, Any]) -> str:
    with pytest.raises(AdmissionDenied) as denied:
        create(api, pod)
    status = to_status(denied.value)
    assert (status.code, status.reason) == (403, "Forbidden")
    prefix = (
        f'pods "{pod["metadata"]["name"]}" is forbidden: ValidatingAdmissionPolicy '
        "'allot-tenant-pods' with binding 'allot-tenant-pods.legal-ai' denied request: "
    )
    message = status.message or ""
    assert message.startswith(prefix), message
    return message[len(prefix) :]


def test_the_charts_control_plane_gets_its_pod(tmp_path: Path) -> None:
    driver = AppsDriver(tmp_path)
    try:
        policy = entitlement.pods_policy()
        bind_to_legal_ai(driver.registry, [], policy, entitlement.PODS_POLICY)
        driver.context.create("StatefulSet", STATEFULSET, "helm")
        driver.settle()
        events = [e["message"] for e in driver.context.list("Event", NAMESPACE)]
        pods = driver.context.list("Pod", NAMESPACE)
        assert [p["metadata"]["name"] for p in pods] == ["legal-ai-0"], events
        syncer = pods[0]["spec"]["containers"][0]
        assert syncer["securityContext"]["runAsUser"] == 0  # as the chart runs it
    finally:
        driver.close()


def _control_plane_pod() -> dict[str, Any]:
    """The StatefulSet's pod as its controller makes it from the template."""
    owner = {**STATEFULSET, "metadata": {**STATEFULSET["metadata"], "uid": "uid-legal-ai"}}
    return pod_from_template(owner, STATEFULSET["spec"]["template"], name="legal-ai-0")


def test_the_control_plane_pod_is_admitted(api: Registry) -> None:
    create(api, _control_plane_pod())


def _without_service_account(pod: dict[str, Any]) -> None:
    del pod["spec"]["serviceAccountName"]


def _workload_service_account(pod: dict[str, Any]) -> None:
    pod["spec"]["serviceAccountName"] = "vc-workload-legal-ai"


def _other_release(pod: dict[str, Any]) -> None:
    pod["metadata"]["labels"]["release"] = "research-ai"


def _other_app(pod: dict[str, Any]) -> None:
    pod["metadata"]["labels"]["app"] = "vcluster-etcd"


def _synced_by_vcluster(pod: dict[str, Any]) -> None:
    pod["metadata"]["labels"][entitlement.VCLUSTER_SYNCED_LABEL] = "legal-ai"


def _synced_by_allot(pod: dict[str, Any]) -> None:
    pod["metadata"]["labels"]["allot.dev/tenant"] = "legal-ai"


@pytest.mark.parametrize(
    "change",
    [
        _without_service_account,
        _workload_service_account,
        _other_release,
        _other_app,
        _synced_by_vcluster,
        _synced_by_allot,
    ],
)
def test_each_mark_of_the_control_plane_is_needed(api: Registry, change: Any) -> None:
    pod = _control_plane_pod()
    change(pod)
    assert re.fullmatch(ROOT_REFUSED, _refusal(api, pod))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_pods_in_the_tenant_namespace(api: Registry, scenario: dict[str, Any]) -> None:
    pod = scenario["pod"]
    if scenario.get("synced_by") == "allot":
        pod = translate.to_host("Pod", pod, "legal-ai")
    assert pod["metadata"]["namespace"] == NAMESPACE
    if scenario.get("admitted"):
        create(api, pod)
        return
    refused = _refusal(api, pod)
    assert re.fullmatch(scenario["refused"], refused), refused
