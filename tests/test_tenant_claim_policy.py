"""The entitlement policy's claim rules on UPDATE, evaluated without HTTP: once a class has
left a tenant's entitlement, a claim created before is refused the writes that would give
the tenant devices through it (a new ``status.allocation``, a new ``reservedFor``
consumer), as kube-scheduler's writes would be on a real cluster, while the writes that
take devices back (deallocation, dropping a consumer, removing the finalizer) still pass.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from allot.registry.admission import AdmissionDenied
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.statuses import to_status
from allot.tenancy import entitlement
from allot.tenancy.names import PLATFORM_NAMESPACE
from tests.tenant_host import host_with_policy

NAMESPACE = "tenant-legal-ai"
OPTIONS = WriteOptions(
    field_manager="test", field_validation="Strict", dry_run=False, user="system:allot:host"
)
ALLOCATION = {
    "devices": {
        "results": [
            {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-a", "device": "gpu-0"}
        ]
    }
}
CONSUMER = {"resource": "pods", "name": "p", "uid": "uid-p"}
REVOKED = (
    'resourceclaims.resource.k8s.io "kept" is forbidden: ValidatingAdmissionPolicy'
    " 'allot-tenant-claims' with binding 'allot-tenant-claims.legal-ai' denied request:"
    " device class gpu-whole is not in the entitlement of tenant legal-ai (entitled: gpu-slice)"
)


def _target(obj: dict[str, Any], subresource: str = "") -> Target:
    resource = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    name = obj["metadata"]["name"] if subresource or "resourceVersion" in obj["metadata"] else None
    return Target(resource, namespace, name, subresource)


def _write(api: Registry, obj: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    if "resourceVersion" not in obj["metadata"]:
        result = api.handlers.create("host", _target(obj), obj, OPTIONS)
    else:
        result = api.handlers.update("host", _target(obj, subresource), obj, OPTIONS)
    return copy.deepcopy(result.object)


def _entitle(api: Registry, classes: list[str]) -> None:
    resource = by_kind("ConfigMap").store
    current = api.store.peek("host", resource, PLATFORM_NAMESPACE, "entitlement-legal-ai")
    desired = entitlement.params("legal-ai", classes, [])
    if current is not None:
        desired["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    _write(api, desired)


@pytest.fixture
def api(tmp_path: Path) -> Registry:
    classes = ["gpu-whole", "gpu-slice"]
    return host_with_policy(
        tmp_path, classes, entitlement.claims_policy(), entitlement.CLAIMS_POLICY
    )


def _claim(api: Registry) -> dict[str, Any]:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "kept", "namespace": NAMESPACE},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu-whole"}}]}
        },
    }
    return _write(api, claim)


def _refused(api: Registry, claim: dict[str, Any]) -> None:
    with pytest.raises(AdmissionDenied) as denied:
        _write(api, claim, "status")
    status = to_status(denied.value)
    assert (status.code, status.message) == (403, REVOKED)


def test_a_revoked_class_is_not_allocated_or_reserved(api: Registry) -> None:
    claim = _claim(api)
    _entitle(api, ["gpu-slice"])
    _refused(api, {**claim, "status": {"allocation": ALLOCATION, "reservedFor": [CONSUMER]}})
    _refused(api, {**claim, "status": {"allocation": ALLOCATION}})


def test_an_allocated_claim_of_a_revoked_class_gets_no_new_consumer(api: Registry) -> None:
    claim = _write(api, {**_claim(api), "status": {"allocation": ALLOCATION}}, "status")
    claim = _write(
        api, {**claim, "status": {**claim["status"], "reservedFor": [CONSUMER]}}, "status"
    )
    _entitle(api, ["gpu-slice"])
    second = {"resource": "pods", "name": "q", "uid": "uid-q"}
    _refused(api, {**claim, "status": {**claim["status"], "reservedFor": [CONSUMER, second]}})
    released = _write(api, {**claim, "status": {"allocation": ALLOCATION}}, "status")
    deallocated = _write(api, {**released, "status": {}}, "status")
    assert not deallocated.get("status")


def test_the_entitled_path_and_other_namespaces_pass(api: Registry) -> None:
    claim = _claim(api)
    allocated = _write(
        api, {**claim, "status": {"allocation": ALLOCATION, "reservedFor": [CONSUMER]}}, "status"
    )
    assert allocated["status"]["reservedFor"] == [CONSUMER]
    _entitle(api, [])
    elsewhere = copy.deepcopy(claim)
    elsewhere["metadata"] = {"name": "kept", "namespace": "default"}
    elsewhere = _write(api, elsewhere)
    _write(api, {**elsewhere, "status": {"allocation": ALLOCATION}}, "status")
