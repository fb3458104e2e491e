"""The official ``kubernetes`` Python client against the embedded API server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from tests.e2e.conftest import Cluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(str(cluster.kubeconfig))
    yield api_client
    api_client.close()


CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "py-claim", "labels": {"app": "py"}},
    "spec": {
        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}
    },
}
SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "py-slice"},
    "spec": {
        "driver": "gpu.nvidia.com",
        "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0", "capacity": {"memory": {"value": "40Gi"}}}],
    },
}


def test_version_and_discovery_calls(api: client.ApiClient) -> None:
    """The client asks for ``/version/``, ``/api/`` and ``/apis/`` (a trailing slash)."""
    assert client.VersionApi(api).get_code().git_version.startswith("v1.")
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {"apps", "batch", "resource.k8s.io"} <= groups
    for path in ("/healthz", "/readyz", "/livez"):
        response = api.call_api("GET", api.configuration.host + path)
        body: object = response.read()
        assert (response.status, body) == (200, b"ok")


def test_resource_kinds_crud_and_list(api: client.ApiClient) -> None:
    resource = client.ResourceV1Api(api)
    resource.create_device_class(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "py-class"},
            "spec": {},
        }
    )
    resource.create_resource_slice(SLICE)
    resource.create_namespaced_resource_claim("default", CLAIM)
    resource.create_namespaced_resource_claim_template(
        "default",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "py-template"},
            "spec": {"spec": CLAIM["spec"]},
        },
    )
    claim = resource.read_namespaced_resource_claim("py-claim", "default")
    assert claim.spec.devices.requests[0].exactly.allocation_mode == "ExactCount"
    slices = resource.list_resource_slice(field_selector="spec.nodeName=node-1")
    assert [s.metadata.name for s in slices.items] == ["py-slice"]
    assert slices.items[0].spec.devices[0].capacity["memory"].value == "40Gi"
    claims = resource.list_namespaced_resource_claim("default", label_selector="app=py")
    assert [c.metadata.name for c in claims.items] == ["py-claim"]
    claim.metadata.labels["app"] = "changed"
    replaced = resource.replace_namespaced_resource_claim("py-claim", "default", claim)
    assert replaced.metadata.labels["app"] == "changed"
    resource.delete_namespaced_resource_claim_template("py-template", "default")
    assert resource.list_namespaced_resource_claim_template("default").items == []


def test_status_subresource_and_conflicts(api: client.ApiClient) -> None:
    resource = client.ResourceV1Api(api)
    claim = resource.read_namespaced_resource_claim("py-claim", "default")
    allocation = {
        "devices": {
            "results": [
                {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-0"}
            ]
        }
    }
    patched = resource.patch_namespaced_resource_claim_status(
        "py-claim", "default", {"status": {"allocation": allocation}}
    )
    assert patched.status.allocation.devices.results[0].device == "gpu-0"
    stale = claim
    stale.metadata.labels["app"] = "stale"
    with pytest.raises(ApiException) as conflict:
        resource.replace_namespaced_resource_claim("py-claim", "default", stale)
    assert conflict.value.status == 409
    with pytest.raises(ApiException) as invalid:
        resource.patch_namespaced_resource_claim_status(
            "py-claim",
            "default",
            {
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [{**allocation["devices"]["results"][0], "device": "gpu-1"}]
                        }
                    }
                }
            },
        )
    assert invalid.value.status == 422


def test_core_kinds(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "py-ns"}})
    core.create_namespaced_config_map(
        "py-ns",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}},
    )
    core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})
    core.create_namespaced_pod(
        "py-ns",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        },
    )
    assert core.read_namespaced_pod("p", "py-ns").status.phase == "Pending"
    assert core.read_namespaced_config_map("cm", "py-ns").data == {"a": "b"}
    assert [n.metadata.name for n in core.list_node().items] == ["node-1"]
    # a delete answers with a Status (upstream's finalizeDelete; the client declares
    # "object"), except for the kinds whose storage returns the deleted object (the client
    # declares their type: pods, services, quotas, DRA kinds...)
    gone_map = core.delete_namespaced_config_map("cm", "py-ns")
    assert gone_map["kind"] == "Status"
    assert (gone_map["status"], gone_map["details"]["name"], gone_map["details"]["kind"]) == (
        "Success",
        "cm",
        "configmaps",
    )
    dry = core.delete_namespaced_pod("p", "py-ns", dry_run="All")
    assert isinstance(dry, client.V1Pod)
    assert core.read_namespaced_pod("p", "py-ns").metadata.deletion_timestamp is None
    assert core.delete_namespace("py-ns")["kind"] == "Namespace"
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_pod("p", "py-ns")
    assert gone.value.status == 404


def test_watch_every_kind(api: client.ApiClient) -> None:
    resource = client.ResourceV1Api(api)
    core = client.CoreV1Api(api)
    listings: list[tuple[Any, Any, dict[str, Any]]] = [
        (resource.list_device_class, None, {}),
        (resource.list_resource_slice, None, {}),
        (
            resource.list_namespaced_resource_claim,
            client.ResourceV1ResourceClaim,
            {"namespace": "default"},
        ),
        (resource.list_namespaced_resource_claim_template, None, {"namespace": "default"}),
        (core.list_namespaced_pod, None, {"namespace": "default"}),
        (core.list_node, None, {}),
        (core.list_namespace, None, {}),
        (core.list_namespaced_config_map, None, {"namespace": "default"}),
        (core.list_namespaced_event, None, {"namespace": "default"}),
    ]
    for function, return_type, kwargs in listings:
        stream = watch.Watch(return_type=return_type) if return_type else watch.Watch()
        events = list(stream.stream(function, timeout_seconds=1, **kwargs))
        assert all(e["type"] == "ADDED" for e in events), function.__name__


def test_watchers_see_every_change_in_order(api: client.ApiClient) -> None:
    resource = client.ResourceV1Api(api)
    start = resource.list_namespaced_resource_claim("default").metadata.resource_version
    seen: list[list[str]] = [[] for _ in range(5)]

    def follow(index: int) -> None:
        stream = watch.Watch(return_type=client.ResourceV1ResourceClaim)
        for event in stream.stream(
            resource.list_namespaced_resource_claim,
            "default",
            resource_version=start,
            timeout_seconds=5,
        ):
            seen[index].append(f"{event['type']}:{event['object'].metadata.labels.get('n')}")
            if event["type"] == "DELETED":
                stream.stop()

    threads = [threading.Thread(target=follow, args=(i,)) for i in range(5)]
    for thread in threads:
        thread.start()
    resource.create_namespaced_resource_claim(
        "default", {**CLAIM, "metadata": {"name": "ordered", "labels": {"n": "0"}}}
    )
    for number in range(1, 6):
        resource.patch_namespaced_resource_claim(
            "ordered", "default", {"metadata": {"labels": {"n": str(number)}}}
        )
    resource.delete_namespaced_resource_claim("ordered", "default")
    for thread in threads:
        thread.join(timeout=20)
    expected = ["ADDED:0"] + [f"MODIFIED:{n}" for n in range(1, 6)] + ["DELETED:5"]
    assert seen == [expected] * 5


def test_concurrent_writers_get_clean_conflicts(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(
        "default",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "counter"},
            "data": {"n": "0"},
        },
    )
    conflicts = 0
    lock = threading.Lock()

    def increment(times: int) -> None:
        nonlocal conflicts
        done = 0
        while done < times:
            current = core.read_namespaced_config_map("counter", "default")
            current.data["n"] = str(int(current.data["n"]) + 1)
            try:
                core.replace_namespaced_config_map("counter", "default", current)
                done += 1
            except ApiException as err:
                if err.status != 409:
                    raise
                with lock:
                    conflicts += 1

    threads = [threading.Thread(target=increment, args=(10,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    final = core.read_namespaced_config_map("counter", "default")
    assert final.data["n"] == "80"  # no lost update
    assert conflicts > 0  # the writers really raced


def _owned_pair(core: client.CoreV1Api, owner: str) -> None:
    """A ConfigMap and a dependent ConfigMap whose owner reference names it."""
    made = core.create_namespaced_config_map(
        "default", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": owner}}
    )
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": made.metadata.uid}
    dependent = {"name": f"{owner}-dep", "ownerReferences": [reference]}
    core.create_namespaced_config_map(
        "default", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dependent}
    )


@pytest.mark.parametrize("options", [{"propagation_policy": "Orphan"}, {"orphan_dependents": True}])
def test_delete_options_given_as_query_parameters(
    api: client.ApiClient, options: dict[str, Any]
) -> None:
    """The client sends ``propagation_policy=`` and ``orphan_dependents=`` (without a
    ``body``) as query parameters, which upstream decodes as the DeleteOptions: the
    dependent is orphaned, not deleted."""
    core = client.CoreV1Api(api)
    owner = f"owner-{sorted(options)[0].split('_')[0]}"
    _owned_pair(core, owner)
    core.delete_namespaced_config_map(owner, "default", **options)
    kept = core.read_namespaced_config_map(f"{owner}-dep", "default")
    assert kept.metadata.owner_references is None
    core.delete_namespaced_config_map(f"{owner}-dep", "default")
