"""Revocation's entitlement reads on the client protocol, the same test on each engine
(tests/engines.py): the tenant found by its host namespace's label, its classes by its
params ConfigMap, a claim of a class outside them refused, and the refusal gone once the
params entitle the class again."""

from __future__ import annotations

from typing import Any

import pytest

from allot.tenancy import entitlement, names
from allot.tenancy.revocation import Entitlements
from tests.engines import SERVER_FIELD_MANAGER, Engine

pytestmark = pytest.mark.slow
TENANT = "research"


def _claim(device_class: str) -> dict[str, Any]:
    request = {"name": "g", "exactly": {"deviceClassName": device_class}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "train", "namespace": names.host_namespace(TENANT)},
        "spec": {"devices": {"requests": [request]}},
    }


def test_a_claim_outside_the_entitlement_is_refused(engine: Engine) -> None:
    client = engine.client
    for namespace in (entitlement.namespace(TENANT), _namespace(names.PLATFORM_NAMESPACE)):
        client.create(namespace, field_manager=SERVER_FIELD_MANAGER)
    params = entitlement.params(TENANT, ["gpu.nvidia.com"], [])
    client.create(params, field_manager=SERVER_FIELD_MANAGER)
    entitlements = Entitlements(client)

    assert entitlements.of_namespace(names.host_namespace(TENANT)) == (TENANT, ["gpu.nvidia.com"])
    assert entitlements.of_namespace("default") is None
    assert entitlements.refusal(_claim("gpu.nvidia.com")) == ""
    why = entitlement.not_entitled(["mig.nvidia.com"], TENANT, ["gpu.nvidia.com"])
    assert entitlements.refusal(_claim("mig.nvidia.com")) == f'resourceclaim "train": {why}'

    stored = client.get("ConfigMap", names.PLATFORM_NAMESPACE, params["metadata"]["name"])
    assert stored is not None
    stored["data"]["deviceClasses"] = "gpu.nvidia.com mig.nvidia.com"
    client.update(stored, field_manager=SERVER_FIELD_MANAGER)
    assert entitlements.refusal(_claim("mig.nvidia.com")) == ""


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
