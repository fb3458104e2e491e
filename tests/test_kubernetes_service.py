"""The ``kubernetes`` Service in ``default`` of the host and of every tenant cluster, as
kube-apiserver keeps it: 10.96.0.1, port 443 ``https`` toward the API server's port, made
again when deleted. The platform runs in-process (as in ``test_tenancy_convergence``)."""

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


def test_every_cluster_has_its_kubernetes_service_and_keeps_it() -> None:
    async def body(api: Platform) -> None:
        await _prepare(api)
        assert _service(api, "host") == EXPECTED
        assert _service(api, TENANT) == EXPECTED
        tenant = _context(api, TENANT)
        tenant.delete("Service", "default", "kubernetes")
        await settle(api)
        assert _service(api, TENANT) == EXPECTED  # made again
        taken = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "mine", "namespace": "default"},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]},
        }
        with pytest.raises(InvalidObjectError, match="provided IP is already allocated"):
            tenant.create("Service", taken, "test")  # the kubernetes Service holds it

    run_with_platform(body)
