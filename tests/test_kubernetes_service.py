"""The ``kubernetes`` Service in ``default`` of the host and of every tenant cluster, as
kube-apiserver keeps it: 10.96.0.1, port 443 ``https`` toward the API server's port, with
its Endpoints and EndpointSlice (127.0.0.1 and that port), made again when deleted. The
platform runs in-process (as in ``test_tenancy_convergence``)."""

from __future__ import annotations

import pytest

from allot.platform import Platform
from allot.statuses import InvalidObjectError
from tests.queueing_platform import run_with_platform, settle
from tests.test_tenancy_convergence import _prepare
from tests.test_tenancy_recreate import TENANT, _context


def _service(api: Platform, cluster: str) -> tuple[object, ...] | None:
    found = _context(api, cluster).get("Service", "default", "kubernetes")
    if found is None:
        return None
    spec, labels = found["spec"], found["metadata"].get("labels")
    port = spec["ports"][0]
    return spec["type"], spec["clusterIP"], port["name"], port["port"], port["protocol"], labels


EXPECTED = (
    "ClusterIP",
    "10.96.0.1",
    "https",
    443,
    "TCP",
    {"component": "apiserver", "provider": "kubernetes"},
)


def _check_endpoints(api: Platform, cluster: str) -> None:
    context = _context(api, cluster)
    service = context.get("Service", "default", "kubernetes")
    endpoints = context.get("Endpoints", "default", "kubernetes")
    slice_ = context.get("EndpointSlice", "default", "kubernetes")
    assert service is not None
    assert endpoints is not None
    assert slice_ is not None
    port = service["spec"]["ports"][0]["targetPort"]
    assert endpoints["subsets"] == [
        {"addresses": [{"ip": "127.0.0.1"}],
         "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}
    ]  # fmt: skip
    assert slice_["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
    assert slice_["endpoints"] == [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]
    assert slice_["ports"] == [{"name": "https", "protocol": "TCP", "port": port}]


def test_every_cluster_has_its_kubernetes_service_and_keeps_it() -> None:
    async def body(api: Platform) -> None:
        await _prepare(api)
        assert _service(api, "host") == EXPECTED
        assert _service(api, TENANT) == EXPECTED
        tenant = _context(api, TENANT)
        tenant.delete("Service", "default", "kubernetes")
        await settle(api)
        assert _service(api, TENANT) == EXPECTED  # made again
        for cluster in ("host", TENANT):
            _check_endpoints(api, cluster)
        tenant.delete("Endpoints", "default", "kubernetes")
        tenant.delete("EndpointSlice", "default", "kubernetes")
        await settle(api)
        _check_endpoints(api, TENANT)  # made again
        taken = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "mine", "namespace": "default"},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]},
        }
        with pytest.raises(InvalidObjectError, match="provided IP is already allocated"):
            tenant.create("Service", taken, "test")  # the kubernetes Service holds it

    run_with_platform(body)
