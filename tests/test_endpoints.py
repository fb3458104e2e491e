"""Endpoints and EndpointSlices: the endpoints and endpointslice controllers write what a
Service's selector finds (ready and not-ready pods, named target ports, a pod leaving the
selector, the Service deleted), and the API server validates and prints them as upstream."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.controllers.endpoints import (
    MANAGED_BY,
    EndpointsController,
    EndpointSliceController,
    endpoint_subsets,
    slice_content,
)
from allot.controllers.workloads import WorkloadKey
from allot.registry import HOST_CLUSTER
from allot.registry.kinds import table_for
from allot.statuses import InvalidObjectError, to_status
from allot.store import WatchEvent
from allot.types import Obj
from tests.batch_harness import Bench

KEY = WorkloadKey(HOST_CLUSTER, "default", "web")


def _service(bench: Bench, ports: list[Obj], selector: bool = True) -> Obj:
    spec: Obj = {"ports": ports}
    if selector:
        spec["selector"] = {"app": "web"}
    return bench.context.create(
        "Service",
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "front"}},
         "spec": spec},
        "test",
    )  # fmt: skip


def _pod(bench: Bench, name: str, ready: bool | None, labels: Obj | None = None) -> Obj:
    """A pod with a named container port; ``ready`` None leaves it without an IP."""
    pod = bench.context.create(
        "Pod",
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": "default", "labels": labels or {"app": "web"}},
         "spec": {"nodeName": "node-a", "containers": [
             {"name": "c", "image": "nginx",
              "ports": [{"name": "http", "containerPort": 8080}]}]}},
        "test",
    )  # fmt: skip
    if ready is None:
        return pod
    pod["status"] = {
        "phase": "Running",
        "podIP": "127.0.0.1",
        "podIPs": [{"ip": "127.0.0.1"}],
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    return bench.context.update_status("Pod", pod, "test")


def _ref(pod: Obj) -> Obj:
    return {"kind": "Pod", "namespace": "default", "name": pod["metadata"]["name"],
            "uid": pod["metadata"]["uid"]}  # fmt: skip


def _sync(bench: Bench) -> tuple[Obj | None, list[Obj]]:
    EndpointsController(bench.contexts("endpoint-controller")).reconcile(KEY)
    EndpointSliceController(bench.contexts("endpointslice-controller")).reconcile(KEY)
    return bench.context.get("Endpoints", "default", "web"), bench.context.list(
        "EndpointSlice", "default"
    )


def test_ready_and_not_ready_pods_with_a_named_target_port(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    service = _service(bench, [{"name": "web", "port": 80, "targetPort": "http"},
                               {"name": "metrics", "port": 9090, "targetPort": 9100}])  # fmt: skip
    ready = _pod(bench, "web-a", True)
    unready = _pod(bench, "web-b", False)
    _pod(bench, "web-c", None)  # no IP yet: left out
    _pod(bench, "other", True, {"app": "db"})
    endpoints, slices = _sync(bench)
    assert endpoints is not None
    assert endpoints["metadata"]["labels"] == {"tier": "front"}
    ports = [{"name": "metrics", "port": 9100, "protocol": "TCP"},
             {"name": "web", "port": 8080, "protocol": "TCP"}]  # fmt: skip
    assert endpoints["subsets"] == [
        {
            "addresses": [{"ip": "127.0.0.1", "nodeName": "node-a", "targetRef": _ref(ready)}],
            "notReadyAddresses": [
                {"ip": "127.0.0.1", "nodeName": "node-a", "targetRef": _ref(unready)}
            ],
            "ports": ports,
        }
    ]
    assert len(slices) == 1
    slice_ = slices[0]
    assert slice_["metadata"]["name"].startswith("web-")
    assert slice_["metadata"]["labels"] == {
        "tier": "front",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
    }
    owner = slice_["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "Service", service["metadata"]["uid"], True
    )  # fmt: skip
    assert slice_["addressType"] == "IPv4"
    assert slice_["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"},
                               {"name": "metrics", "port": 9100, "protocol": "TCP"}]  # fmt: skip
    assert slice_["endpoints"] == [
        {"addresses": ["127.0.0.1"],
         "conditions": {"ready": True, "serving": True, "terminating": False},
         "targetRef": _ref(ready), "nodeName": "node-a"},
        {"addresses": ["127.0.0.1"],
         "conditions": {"ready": False, "serving": False, "terminating": False},
         "targetRef": _ref(unready), "nodeName": "node-a"},
    ]  # fmt: skip
    bench.close()


def test_nothing_is_written_when_nothing_changed(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    _service(bench, [{"port": 80, "targetPort": 8080}])
    _pod(bench, "web-a", True)
    first, slices = _sync(bench)
    # kubectl describe reads every slice port's name: an unnamed port's is ""
    assert slices[0]["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    again, slices_again = _sync(bench)
    assert first is not None
    assert again is not None
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert [s["metadata"]["resourceVersion"] for s in slices_again] == [
        s["metadata"]["resourceVersion"] for s in slices
    ]
    bench.close()


def test_a_pod_that_leaves_the_selector_leaves_the_endpoints(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    _service(bench, [{"port": 80, "targetPort": 8080}])
    pod = _pod(bench, "web-a", True)
    _sync(bench)
    moved = copy.deepcopy(pod)
    moved["metadata"]["labels"] = {"app": "db"}
    moved = bench.context.update("Pod", moved, "test")
    controller = EndpointsController(bench.contexts("endpoint-controller"))
    assert controller.keys_for(WatchEvent("MODIFIED", 1, HOST_CLUSTER, "pods", moved, pod)) == [KEY]
    assert controller.keys_for(WatchEvent("MODIFIED", 1, HOST_CLUSTER, "pods", moved)) == []
    endpoints, slices = _sync(bench)
    assert endpoints is not None
    assert "subsets" not in endpoints
    assert slices[0]["endpoints"] == []
    assert "ports" not in slices[0]
    bench.close()


def test_a_namespace_without_services_costs_no_key(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    pod = _pod(bench, "web-a", True)
    for controller in (
        EndpointsController(bench.contexts("endpoint-controller")),
        EndpointSliceController(bench.contexts("endpointslice-controller")),
    ):
        assert controller.keys_for(WatchEvent("MODIFIED", 1, HOST_CLUSTER, "pods", pod)) == []
    bench.close()


def test_they_go_with_their_service(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    _service(bench, [{"port": 80, "targetPort": 8080}])
    _pod(bench, "web-a", True)
    _sync(bench)
    bench.context.delete("Service", "default", "web")
    endpoints, slices = _sync(bench)
    assert endpoints is None
    assert slices == []
    bench.close()


def test_services_without_a_selector_are_left_alone(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    _service(bench, [{"port": 80, "targetPort": 8080}], selector=False)
    _pod(bench, "web-a", True)
    endpoints, slices = _sync(bench)
    assert endpoints is None
    assert slices == []
    bench.close()


# ---------------------------------------------------------------- validation, tables
def _endpoints(**subset: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "web", "namespace": "default"}, "subsets": [subset]}  # fmt: skip


def _slice(**fields: Any) -> Obj:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-x", "namespace": "default"}, **fields}  # fmt: skip


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            _endpoints(ports=[{"port": 80, "protocol": "TCP"}]),
            'Endpoints "web" is invalid: subsets[0]: Required value: must specify '
            "`addresses` or `notReadyAddresses`",
        ),
        (
            _endpoints(addresses=[{"ip": "0.0.0.0"}]),
            'Endpoints "web" is invalid: subsets[0].addresses[0].ip: Invalid value: '
            '"0.0.0.0": may not be unspecified (0.0.0.0)',
        ),
        (
            _endpoints(
                addresses=[{"ip": "10.0.0.1"}],
                ports=[{"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "UDP"}],
            ),
            'Endpoints "web" is invalid: [subsets[0].ports[0].name: Required value, '
            "subsets[0].ports[1].name: Required value]",
        ),
        (
            _endpoints(addresses=[{"ip": "10.0.0.1"}], ports=[{"port": 0, "protocol": "ICMP"}]),
            'Endpoints "web" is invalid: [subsets[0].ports[0].port: Invalid value: 0: must be '
            "between 1 and 65535, inclusive, subsets[0].ports[0].protocol: Unsupported value: "
            '"ICMP": supported values: "SCTP", "TCP", "UDP"]',
        ),
        (
            _slice(endpoints=[{"addresses": []}]),
            'EndpointSlice.discovery.k8s.io "web-x" is invalid: [addressType: Required value, '
            "endpoints[0].addresses: Required value: must contain at least 1 address]",
        ),
        (
            _slice(addressType="IPv4", endpoints=[{"addresses": ["fe80::1"]}]),
            'EndpointSlice.discovery.k8s.io "web-x" is invalid: endpoints[0].addresses[0]: '
            'Invalid value: "fe80::1": must be a valid IPv4 address',
        ),
        (
            _slice(addressType="IP"),
            'EndpointSlice.discovery.k8s.io "web-x" is invalid: addressType: Unsupported '
            'value: "IP": supported values: "FQDN", "IPv4", "IPv6"',
        ),
        (
            _slice(
                addressType="IPv4",
                ports=[
                    {"name": "a", "port": 1, "protocol": "TCP"},
                    {"name": "a", "port": 2, "protocol": "TCP"},
                ],
            ),
            'EndpointSlice.discovery.k8s.io "web-x" is invalid: ports[1].name: Duplicate '
            'value: "a"',
        ),
    ],
)
def test_invalid_objects_are_refused_with_upstream_texts(
    tmp_path: Path, doc: Obj, message: str
) -> None:
    bench = Bench(tmp_path)
    with pytest.raises(InvalidObjectError) as caught:
        bench.context.create(doc["kind"], doc, "test")
    assert str(to_status(caught.value).message) == message
    bench.close()


def test_address_type_is_immutable(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    created = bench.context.create("EndpointSlice", _slice(addressType="IPv4"), "test")
    created["addressType"] = "IPv6"
    with pytest.raises(InvalidObjectError) as caught:
        bench.context.update("EndpointSlice", created, "test")
    assert str(to_status(caught.value).message) == (
        'EndpointSlice.discovery.k8s.io "web-x" is invalid: addressType: Invalid value: '
        '"IPv6": field is immutable'
    )
    bench.close()


def _cells(plural: str, obj: Obj) -> list[Any]:
    table = table_for(plural)
    assert table is not None
    stamped = {**obj, "metadata": {**obj["metadata"], "creationTimestamp": "2026-01-01T10:00:00Z"}}
    return table.cells(stamped, dt.datetime(2026, 1, 1, 10, 5, tzinfo=dt.UTC))


def test_tables_are_upstream_s() -> None:
    table = table_for("endpoints")
    assert table is not None
    assert [c["name"] for c in table.columns] == ["Name", "Endpoints", "Age"]
    addresses = [{"ip": f"10.0.0.{i}"} for i in range(1, 3)]
    many = _endpoints(addresses=addresses, notReadyAddresses=[{"ip": "10.0.0.9"}],
                      ports=[{"name": "a", "port": 80}, {"name": "b", "port": 81}])  # fmt: skip
    assert _cells("endpoints", many) == [
        "web", "10.0.0.1:80,10.0.0.2:80,10.0.0.1:81 + 1 more...", "5m"
    ]  # fmt: skip
    assert _cells("endpoints", {**many, "subsets": []})[1] == "<none>"
    headless = _endpoints(addresses=[{"ip": "10.0.0.1"}])
    assert _cells("endpoints", headless)[1] == "10.0.0.1"
    slices = table_for("endpointslices")
    assert slices is not None
    assert [c["name"] for c in slices.columns] == [
        "Name", "AddressType", "Ports", "Endpoints", "Age"
    ]  # fmt: skip
    slice_ = _slice(addressType="IPv4",
                    endpoints=[{"addresses": [f"10.0.0.{i}"]} for i in range(1, 6)],
                    ports=[{"port": 80}, {"name": "x"}, {}, {"port": 9}])  # fmt: skip
    assert _cells("endpointslices", slice_) == [
        "web-x", "IPv4", "80,x,* + 1 more...", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...", "5m"
    ]  # fmt: skip
    assert _cells("endpointslices", _slice(addressType="IPv4"))[2:4] == ["<unset>", "<unset>"]


# ------------------------------------------------------------------ scenario table
SCENARIOS = yaml.safe_load((Path(__file__).parent / "scenarios" / "endpoints.yaml").read_text())


def _scenario_pod(case: dict[str, Any]) -> Obj:
    metadata: Obj = {
        "name": case["name"],
        "namespace": "default",
        "uid": f"uid-{case['name']}",
        "labels": case.get("labels", {"app": "web"}),
    }
    if case.get("deleting"):
        metadata["deletionTimestamp"] = "2026-01-01T10:00:00Z"
    ports = case.get("ports", [{"name": "http", "containerPort": 8080}])
    status: Obj = {
        "phase": case.get("phase", "Running"),
        "conditions": [{"type": "Ready", "status": "True" if case.get("ready", True) else "False"}],
    }
    if case.get("ip", "127.0.0.1"):
        status["podIP"] = case.get("ip", "127.0.0.1")
    return {"metadata": metadata,
            "spec": {"containers": [{"name": "c", "image": "nginx", "ports": ports}]},
            "status": status}  # fmt: skip


def _scenario_service(case: dict[str, Any]) -> Obj:
    spec: Obj = {
        "selector": case.get("selector", {"app": "web"}),
        "ports": case.get("ports", [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]),
    }
    if case.get("publish"):
        spec["publishNotReadyAddresses"] = True
    return {"metadata": {"name": "web", "namespace": "default"}, "spec": spec}


@pytest.mark.parametrize("case", SCENARIOS, ids=[c["name"] for c in SCENARIOS])
def test_scenario(case: dict[str, Any]) -> None:
    service = _scenario_service(case.get("service", {}))
    pods = [_scenario_pod(p) for p in case["pods"]]
    subsets = endpoint_subsets(service, pods)

    def names(field: str) -> list[str]:
        return sorted(a["targetRef"]["name"] for s in subsets for a in s.get(field) or [])

    assert names("addresses") == case["ready"]
    assert names("notReadyAddresses") == case["notReady"]
    assert sorted({p["port"] for s in subsets for p in s.get("ports") or []}) == case["ports"]
    endpoints, _ = slice_content(service, pods)
    conditions = {
        e["targetRef"]["name"]: [e["conditions"][k] for k in ("ready", "serving", "terminating")]
        for e in endpoints
    }
    assert conditions == case["slice"]


def test_what_is_deleted_by_hand_is_written_again(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    _service(bench, [{"port": 80, "targetPort": 8080}])
    _pod(bench, "web-a", True)
    endpoints, slices = _sync(bench)
    assert endpoints is not None
    bench.context.delete("Endpoints", "default", "web")
    bench.context.delete("EndpointSlice", "default", slices[0]["metadata"]["name"])
    for controller, resource, obj in (
        (EndpointsController(bench.contexts("endpoint-controller")), "endpoints", endpoints),
        (EndpointSliceController(bench.contexts("endpointslice-controller")),
         "endpointslices.discovery.k8s.io", slices[0]),
    ):  # fmt: skip
        assert controller.keys_for(WatchEvent("DELETED", 1, HOST_CLUSTER, resource, obj)) == [KEY]
    again, slices_again = _sync(bench)
    assert again is not None
    assert again["subsets"] == endpoints["subsets"]
    assert [s["endpoints"] for s in slices_again] == [slices[0]["endpoints"]]
    bench.close()
