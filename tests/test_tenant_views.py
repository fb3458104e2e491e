"""What a tenant sees of the host: the nodes its pods run on, the claims generated for its
pods from templates, the kubelet's lifecycle events and container ids, the Terminating
state of a pod deleted gracefully; and what its twins keep of tenant-side owners.

The platform runs in-process (as in ``test_tenancy_convergence``); tenants write as their
own users, so the tenant guard judges them."""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from allot.api.tenancy import TenantSpec
from allot.controllers.context import ControllerContext
from allot.controllers.lifecycle import container_id, image_id
from allot.controllers.workloads import service_account
from allot.platform import Platform
from allot.registry.admission import AdmissionDenied
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.tenancy import names, nodes
from allot.tenancy.guard import pod_of_template, workload_template
from tests.queueing_platform import settle as _settle
from tests.queueing_platform import start as _start
from tests.queueing_platform import stop as _stop
from tests.test_tenancy_convergence import _claim, _pod, _prepare

Obj = dict[str, Any]
TENANT = "legal-ai"
HOST_NS = names.host_namespace(TENANT)


def _contexts(api: Platform) -> tuple[ControllerContext, ControllerContext]:
    registry = api.registry
    host = ControllerContext("host", registry.store, registry.handlers, registry.clock)
    tenant = ControllerContext(TENANT, registry.store, registry.handlers, registry.clock)
    return host, tenant


def _as_tenant(api: Platform, verb: str, obj: Obj, options: Obj | None = None) -> None:
    """Write ``obj`` in the tenant cluster as the tenant's user (raises refusals)."""
    resource = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    user = f"system:allot:{TENANT}"
    handlers = api.registry.handlers
    if verb == "create":
        target = Target(resource, namespace, None, "")
        handlers.create(TENANT, target, obj, WriteOptions("test", "Strict", False, user=user))
    elif verb == "update":
        target = Target(resource, namespace, obj["metadata"]["name"], "")
        handlers.update(TENANT, target, obj, WriteOptions("test", "Strict", False, user=user))
    else:
        target = Target(resource, namespace, obj["metadata"]["name"], "")
        handlers.delete(TENANT, target, options or {}, False, user=user)


def _run(scenario: Callable[[Platform], Awaitable[None]]) -> None:
    async def main() -> None:
        with tempfile.TemporaryDirectory() as directory:
            api = await _start(Path(directory))
            await _prepare(api)
            try:
                await scenario(api)
            finally:
                await _stop(api)

    asyncio.run(main())


def _template(name: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu-whole"}}]
                }
            }
        },
    }


def _pod_from_template(name: str, template: str) -> Obj:
    pod = _pod("x")
    pod["metadata"]["name"] = name
    pod["spec"]["resourceClaims"] = [{"name": "g", "resourceClaimTemplateName": template}]
    return pod


async def _running_pod(api: Platform) -> tuple[Obj, Obj]:
    """legal-ai's pod-a (claim a), settled: (tenant pod, host twin)."""
    _as_tenant(api, "create", _claim(TENANT, "a"))
    _as_tenant(api, "create", _pod("a"))
    await _settle(api)
    host, tenant = _contexts(api)
    pod = tenant.get("Pod", "default", "pod-a")
    twin = host.get("Pod", HOST_NS, names.host_name("pod-a", "default"))
    assert pod is not None
    assert twin is not None
    return pod, twin


def _events(ctx: ControllerContext, namespace: str, name: str) -> dict[str, Obj]:
    return {
        e["reason"]: e
        for e in ctx.list("Event", namespace)
        if e["involvedObject"]["name"] == name and e["involvedObject"]["kind"] == "Pod"
    }


# --------------------------------------------------------------- lifecycle
def test_the_kubelets_events_and_container_ids_on_host_and_tenant_pods() -> None:
    async def scenario(api: Platform) -> None:
        pod, twin = await _running_pod(api)
        host, tenant = _contexts(api)
        node = twin["spec"]["nodeName"]
        on_host = _events(host, HOST_NS, twin["metadata"]["name"])
        assert on_host["Scheduled"]["message"] == (
            f"Successfully assigned {HOST_NS}/{twin['metadata']['name']} to {node}"
        )
        assert on_host["Scheduled"]["source"]["component"] == "default-scheduler"
        assert on_host["Pulling"]["message"] == 'Pulling image "x"'
        assert on_host["Pulled"]["message"].startswith('Successfully pulled image "x" in 0s')
        assert "simulated" in on_host["Pulled"]["message"]
        assert on_host["Created"]["message"] == "Container created"
        assert on_host["Started"]["message"] == "Container started"
        assert {e["source"]["component"] for r, e in on_host.items() if r != "Scheduled"} == {
            "kubelet"
        }
        for reason in ("Pulling", "Pulled", "Created", "Started"):  # the kubelet's container ref
            assert on_host[reason]["involvedObject"]["fieldPath"] == "spec.containers{c}"
            assert on_host[reason]["source"] == {"component": "kubelet", "host": node}
            assert on_host[reason]["reportingInstance"] == node
        assert "fieldPath" not in on_host["Scheduled"]["involvedObject"]
        in_tenant = _events(tenant, "default", "pod-a")
        assert set(on_host) <= set(in_tenant)
        assert in_tenant["Started"]["involvedObject"]["fieldPath"] == "spec.containers{c}"
        assert in_tenant["Started"]["source"] == {"component": "kubelet", "host": node}
        assert in_tenant["Scheduled"]["message"] == f"Successfully assigned default/pod-a to {node}"
        status = pod["status"]["containerStatuses"][0]
        assert re.fullmatch(r"containerd://[0-9a-f]{64}", status["containerID"])
        assert status["containerID"] == container_id(twin, "c")
        assert status["imageID"] == image_id("x")
        assert re.fullmatch(r"docker\.io/library/x@sha256:[0-9a-f]{64}", status["imageID"])

    _run(scenario)


@pytest.mark.parametrize(
    ("image", "repository"),
    [
        ("nginx", "docker.io/library/nginx"),
        ("nginx:1.27", "docker.io/library/nginx"),
        ("team/app:v1", "docker.io/team/app"),
        ("nvcr.io/nvidia/cuda:12.4.1-base", "nvcr.io/nvidia/cuda"),
        ("localhost:5000/app", "localhost:5000/app"),
        ("registry.example/app@sha256:" + "a" * 64, "registry.example/app"),
    ],
)
def test_image_ids_name_the_repository(image: str, repository: str) -> None:
    assert image_id(image).rpartition("@sha256:")[0] == repository


def test_a_tenant_pod_deleted_gracefully_is_terminating_until_its_twin_is_gone() -> None:
    async def scenario(api: Platform) -> None:
        await _running_pod(api)
        host, tenant = _contexts(api)
        twin_name = names.host_name("pod-a", "default")
        _as_tenant(api, "delete", _pod("a"), {"gracePeriodSeconds": 20})
        terminating = tenant.get("Pod", "default", "pod-a")
        assert terminating is not None, "removed at once: no Terminating state"
        assert terminating["metadata"]["deletionTimestamp"]
        assert terminating["metadata"]["deletionGracePeriodSeconds"] == 20
        assert host.get("Pod", HOST_NS, twin_name) is not None
        await _settle(api)
        assert tenant.get("Pod", "default", "pod-a") is None
        assert host.get("Pod", HOST_NS, twin_name) is None
        killing = _events(host, HOST_NS, twin_name)["Killing"]
        assert killing["message"] == "Stopping container c"
        assert killing["source"]["component"] == "kubelet"
        relayed = _events(tenant, "default", "pod-a")["Killing"]
        assert relayed["message"] == "Stopping container c"

    _run(scenario)


def test_a_tenant_pods_new_image_and_deadline_reach_its_twin() -> None:
    """``kubectl set image pod/x`` in a tenant: vCluster's pod syncer carries images and
    ``activeDeadlineSeconds`` to the host pod; other spec fields stay the host's."""

    async def scenario(api: Platform) -> None:
        pod, _ = await _running_pod(api)
        pod["spec"]["containers"][0]["image"] = "x:2"
        pod["spec"]["activeDeadlineSeconds"] = 600
        _as_tenant(api, "update", pod)
        await _settle(api)
        host, _ = _contexts(api)
        twin = host.get("Pod", HOST_NS, names.host_name("pod-a", "default"))
        assert twin is not None
        assert twin["spec"]["containers"][0]["image"] == "x:2"
        assert twin["spec"]["activeDeadlineSeconds"] == 600
        assert twin["spec"]["nodeName"]  # the host's binding is kept

    _run(scenario)


def test_a_pod_that_never_ran_is_removed_at_once() -> None:
    async def scenario(api: Platform) -> None:
        _as_tenant(api, "create", _pod("missing"))  # waits for its claim: never bound
        await _settle(api)
        _as_tenant(api, "delete", _pod("missing"))
        _, tenant = _contexts(api)
        assert tenant.get("Pod", "default", "pod-missing") is None

    _run(scenario)


# ------------------------------------------------------------------- owners
def test_twins_keep_no_tenant_owner_references() -> None:
    async def scenario(api: Platform) -> None:
        _as_tenant(api, "create", _claim(TENANT, "a"))
        pod = _pod("a")
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-6d4cf56db6",
                "uid": "2f1c0a35-0000-4000-8000-000000000001",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        _as_tenant(api, "create", pod)
        await _settle(api)
        host, tenant = _contexts(api)
        twin = host.get("Pod", HOST_NS, names.host_name("pod-a", "default"))
        assert twin is not None
        assert "ownerReferences" not in twin["metadata"]
        owner = twin["metadata"]["annotations"][names.OWNER_ANNOTATION]
        assert owner == "ReplicaSet/web-6d4cf56db6"
        mine = tenant.get("Pod", "default", "pod-a")
        assert mine is not None
        assert mine["metadata"]["ownerReferences"][0]["name"] == "web-6d4cf56db6"
        assert twin["spec"].get("nodeName"), "the twin runs"

    _run(scenario)


# -------------------------------------------------------------------- nodes
def test_a_tenant_sees_the_nodes_its_pods_run_on_while_they_do() -> None:
    async def scenario(api: Platform) -> None:
        host, tenant = _contexts(api)
        assert tenant.list("Node") == []
        _, twin = await _running_pod(api)
        node = host.get("Node", "", twin["spec"]["nodeName"])
        assert node is not None
        shown = tenant.list("Node")
        assert [n["metadata"]["name"] for n in shown] == [node["metadata"]["name"]]
        assert shown[0]["metadata"]["labels"] == node["metadata"]["labels"]
        for field in ("capacity", "allocatable", "conditions", "addresses"):
            assert shown[0]["status"].get(field) == node["status"].get(field), field
        node["metadata"]["labels"]["example.com/rack"] = "r7"
        host.update("Node", node, "test")
        await _settle(api)
        relabelled = tenant.get("Node", "", node["metadata"]["name"])
        assert relabelled is not None
        assert relabelled["metadata"]["labels"]["example.com/rack"] == "r7"
        _as_tenant(api, "delete", _pod("a"))
        await _settle(api)
        assert tenant.list("Node") == []

    _run(scenario)


def test_tenants_may_not_write_nodes() -> None:
    async def scenario(api: Platform) -> None:
        await _running_pod(api)
        _, tenant = _contexts(api)
        node = tenant.list("Node")[0]
        node["metadata"]["labels"]["mine"] = "yes"
        for verb in ("update", "delete"):
            with pytest.raises(AdmissionDenied, match="nodes are the host's and read-only"):
                _as_tenant(api, verb, node)
        fresh = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "fake-node"}}
        with pytest.raises(AdmissionDenied, match="read-only in a tenant cluster"):
            _as_tenant(api, "create", fresh)

    _run(scenario)


def _node(name: str, labels: dict[str, str]) -> Obj:
    return {"metadata": {"name": name, "labels": labels}, "status": {"capacity": {"cpu": "8"}}}


def _twin_on(node: str) -> Obj:
    return {"metadata": {"name": "p.default"}, "spec": {"nodeName": node}}


@pytest.mark.parametrize(
    ("settings", "shown"),
    [
        (None, ["n1"]),
        ({"enabled": True}, ["n1"]),
        ({"enabled": False}, []),
        ({"enabled": True, "selector": {"all": True}}, ["n1", "n2", "n3"]),
        ({"selector": {"labels": {"pool": "b"}}}, ["n1", "n3"]),
    ],
)
def test_which_nodes_a_tenant_sees(settings: Obj | None, shown: list[str]) -> None:
    spec = TenantSpec.model_validate(
        {"sync": {"fromHost": {"nodes": settings}}} if settings is not None else {}
    )
    host_nodes = [
        _node("n1", {"pool": "a"}),
        _node("n2", {"pool": "a"}),
        _node("n3", {"pool": "b"}),
    ]
    assert sorted(nodes.shown_nodes(spec, [_twin_on("n1")], host_nodes)) == shown


# ---------------------------------------------------------- generated claims
def test_claims_generated_from_templates_appear_read_only_and_go_with_their_pod() -> None:
    async def scenario(api: Platform) -> None:
        host, tenant = _contexts(api)
        _as_tenant(api, "create", _template("gpu"))
        _as_tenant(api, "create", _pod_from_template("trainer", "gpu"))
        await _settle(api)
        pod = tenant.get("Pod", "default", "trainer")
        twin = host.get("Pod", HOST_NS, names.host_name("trainer", "default"))
        assert pod is not None
        assert twin is not None
        [entry] = pod["status"]["resourceClaimStatuses"]
        [host_entry] = twin["status"]["resourceClaimStatuses"]
        assert entry["name"] == "g"
        assert re.fullmatch(r"trainer-g-[a-z0-9]{5}", entry["resourceClaimName"])
        assert entry["resourceClaimName"][-5:] == host_entry["resourceClaimName"][-5:]
        claim = tenant.get("ResourceClaim", "default", entry["resourceClaimName"])
        host_claim = host.get("ResourceClaim", HOST_NS, host_entry["resourceClaimName"])
        assert claim is not None
        assert host_claim is not None
        [owner] = claim["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "Pod",
            "trainer",
            pod["metadata"]["uid"],
        )
        assert owner["controller"] is True
        assert claim["status"]["allocation"] == host_claim["status"]["allocation"]
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]}
        ]
        twins = [
            c
            for c in host.list("ResourceClaim", HOST_NS)
            if c["metadata"]["name"].endswith(".default")
        ]
        assert twins == [], "the mirror has no twin of its own"
        claim["metadata"]["labels"] = {"mine": "yes"}
        with pytest.raises(AdmissionDenied, match="generated from a ResourceClaimTemplate"):
            _as_tenant(api, "update", claim)
        with pytest.raises(AdmissionDenied, match="goes when its pod is deleted"):
            _as_tenant(api, "delete", claim)
        _as_tenant(api, "delete", _pod_from_template("trainer", "gpu"))
        await _settle(api)
        assert tenant.get("ResourceClaim", "default", entry["resourceClaimName"]) is None
        assert tenant.list("ResourceClaim") == []

    _run(scenario)


def test_generated_claims_are_restored_after_a_restart_without_duplicates() -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory() as directory:
            api = await _start(Path(directory))
            await _prepare(api)
            _as_tenant(api, "create", _template("gpu"))
            _as_tenant(api, "create", _pod_from_template("trainer", "gpu"))
            await _settle(api)
            _, tenant = _contexts(api)
            before = sorted(c["metadata"]["name"] for c in tenant.list("ResourceClaim"))
            await _stop(api)
            again = await _start(Path(directory))
            await _settle(again)
            _, tenant = _contexts(again)
            after = sorted(c["metadata"]["name"] for c in tenant.list("ResourceClaim"))
            assert after == before
            assert len(after) == 1
            await _stop(again)

    asyncio.run(scenario())


# ------------------------------------------------- workload controllers' writes
def test_a_workload_controllers_pods_meet_the_tenants_quota() -> None:
    """A ReplicaSet controller's pod in a tenant is judged like the tenant's own: the host
    dry run refuses the pod past the quota with the quota's message."""

    async def scenario(api: Platform) -> None:
        host, _ = _contexts(api)
        tenant_obj = host.get("Tenant", "", TENANT)
        assert tenant_obj is not None
        tenant_obj["spec"]["quota"] = {"hard": {"pods": "1"}}
        host.update("Tenant", tenant_obj, "test")
        await _settle(api)
        registry = api.registry
        controller = ControllerContext(
            TENANT,
            registry.store,
            registry.handlers,
            registry.clock,
            service_account("replicaset-controller"),
        )
        _as_tenant(api, "create", _claim(TENANT, "a"))
        controller.create("Pod", _pod("a"), "replicaset-controller")
        await _settle(api)
        with pytest.raises(
            AdmissionDenied, match=r"exceeded quota: tenant-quota, requested: pods=1"
        ):
            controller.create("Pod", _pod("b"), "replicaset-controller")
        labelled = _pod("c")
        labelled["metadata"]["labels"] = {names.TENANT_LABEL: "other"}
        with pytest.raises(AdmissionDenied, match="prefix is reserved for the platform"):
            controller.create("Pod", labelled, "replicaset-controller")

    _run(scenario)


@pytest.mark.parametrize(
    ("kind", "spec", "path"),
    [
        ("Deployment", {"template": {"spec": {"containers": []}}}, "spec.template"),
        ("ReplicaSet", {"template": {"spec": {"containers": []}}}, "spec.template"),
        ("StatefulSet", {"template": {"spec": {"containers": []}}}, "spec.template"),
        ("Job", {"template": {"spec": {"containers": []}}}, "spec.template"),
        (
            "CronJob",
            {"jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}},
            "spec.jobTemplate.spec.template",
        ),
    ],
)
def test_the_pod_template_of_each_workload_kind(kind: str, spec: Obj, path: str) -> None:
    found_path, template = workload_template(kind, {"spec": spec})
    assert found_path == path
    assert template == {"spec": {"containers": []}}


def test_a_pod_from_a_template_carries_its_metadata_and_spec() -> None:
    template = {
        "metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    pod = pod_of_template(template, "web", "team")
    assert pod == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "team",
            "labels": {"app": "web"},
            "annotations": {"a": "b"},
        },
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }


# ------------------------------------------------------ workload pod templates
def _pod_spec(limits: dict[str, str] | None = None, **fields: Any) -> Obj:
    container: Obj = {"name": "c", "image": "busybox"}
    if limits:
        container["resources"] = {"limits": limits}
    return {"restartPolicy": "Never", "containers": [container], **fields}


def _workload(kind: str, spec: Obj, name: str = "w") -> Obj:
    template = {"metadata": {"labels": {"app": name}}, "spec": spec}
    selector = {"matchLabels": {"app": name}}
    group = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    body: Obj
    if kind == "CronJob":
        body = {"schedule": "@daily", "jobTemplate": {"spec": {"template": template}}}
    elif kind == "Job":
        body = {"template": template}
    else:
        template["spec"] = {**spec, "restartPolicy": "Always"}
        body = {"selector": selector, "template": template}
    return {
        "apiVersion": group,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "CronJob")
FORBIDDEN_CLASS = {"deviceclass.resource.kubernetes.io/gpu-slice": "1"}
OUTSIDE = "a DRA extended resource outside the entitlement of tenant legal-ai"


@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
def test_a_workload_whose_pods_the_host_refuses_is_refused_at_creation(kind: str) -> None:
    path = "spec.jobTemplate.spec.template" if kind == "CronJob" else "spec.template"

    async def scenario(api: Platform) -> None:
        forbidden = _workload(kind, _pod_spec(FORBIDDEN_CLASS))
        with pytest.raises(AdmissionDenied) as denied:
            _as_tenant(api, "create", forbidden)
        message = str(denied.value)
        assert message.startswith(
            f'{by_kind(kind).info.qualified_resource} "w" is forbidden: {path}: a pod from '
            "this template is refused: ValidatingAdmissionPolicy 'allot-tenant-pods'"
        ), message
        assert OUTSIDE in message
        escape = _workload(kind, _pod_spec(hostNetwork=True))
        with pytest.raises(AdmissionDenied, match="host network"):
            _as_tenant(api, "create", escape)
        _as_tenant(api, "create", _workload(kind, _pod_spec()))
        _, tenant = _contexts(api)
        assert tenant.get(kind, "default", "w") is not None

    _run(scenario)


def test_a_template_changed_to_what_the_host_refuses_is_refused() -> None:
    async def scenario(api: Platform) -> None:
        _as_tenant(api, "create", _workload("Deployment", _pod_spec()))
        _, tenant = _contexts(api)
        stored = tenant.get("Deployment", "default", "w")
        assert stored is not None
        stored["spec"]["replicas"] = 3
        _as_tenant(api, "update", stored)
        stored = tenant.get("Deployment", "default", "w")
        assert stored is not None
        stored["spec"]["template"]["spec"]["containers"][0]["resources"] = {
            "limits": FORBIDDEN_CLASS
        }
        with pytest.raises(AdmissionDenied, match=OUTSIDE):
            _as_tenant(api, "update", stored)

    _run(scenario)


def test_a_template_naming_a_revoked_class_is_refused_with_the_workload() -> None:
    async def scenario(api: Platform) -> None:
        _as_tenant(api, "create", _template("gpu"))
        await _settle(api)
        host, _ = _contexts(api)
        device_class = host.get("DeviceClass", "", "gpu-whole")
        assert device_class is not None
        device_class["metadata"]["labels"]["gpu.platform/tenant"] = "research-ai"
        host.update("DeviceClass", device_class, "test")
        await _settle(api)
        spec = _pod_spec()
        spec["resourceClaims"] = [{"name": "g", "resourceClaimTemplateName": "gpu"}]
        with pytest.raises(AdmissionDenied) as denied:
            _as_tenant(api, "create", _workload("Job", spec))
        assert str(denied.value) == (
            'jobs.batch "w" is forbidden: spec.template: a pod from this template is refused: '
            'resourceclaimtemplate "gpu": device class gpu-whole is not in the entitlement of '
            "tenant legal-ai (entitled: <none>)"
        )

    _run(scenario)


def test_quota_is_left_to_each_pod() -> None:
    """A workload is not refused for quota (its pods are, one by one, as upstream)."""

    async def scenario(api: Platform) -> None:
        host, _ = _contexts(api)
        tenant_obj = host.get("Tenant", "", TENANT)
        assert tenant_obj is not None
        tenant_obj["spec"]["quota"] = {"hard": {"pods": "0"}}
        host.update("Tenant", tenant_obj, "test")
        await _settle(api)
        _as_tenant(api, "create", _workload("Deployment", _pod_spec()))
        with pytest.raises(AdmissionDenied, match="exceeded quota: tenant-quota"):
            _as_tenant(api, "create", _pod("a"))

    _run(scenario)


def test_a_statefulset_mounting_its_claim_templates_is_accepted() -> None:
    """Its pods get a volume per volumeClaimTemplate from the controller, so the dry run's
    pod has them too."""

    async def scenario(api: Platform) -> None:
        spec = _pod_spec()
        spec["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
        workload = _workload("StatefulSet", spec)
        workload["spec"]["volumeClaimTemplates"] = [
            {
                "metadata": {"name": "scratch"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ]
        _as_tenant(api, "create", workload)
        _, tenant = _contexts(api)
        assert tenant.get("StatefulSet", "default", "w") is not None

    _run(scenario)
