"""Fair-sharing Tenants judged against the catalogue: unknown or unentitled classes refused
(the pure check and the API server's 422), guarantees past the published devices accepted
with a warning, per cohort and resource (``allot.lint.sharing``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allot.api.tenancy import Tenant
from allot.registry.clusters import Registry
from allot.registry.resources import by_kind
from allot.statuses import InvalidObjectError, to_status
from allot.tenancy import entitlement
from allot.validation.tenancy import device_quota_keys, validate_sharing_classes
from tests.tenant_host import create

GIB = 2**30
CATALOGUE = {"a100": {"team": "ml"}, "mig-1g": {"team": "ml"}, "l4": {"team": "web"}}


def _tenant(name: str, sharing: dict[str, Any], team: str = "ml") -> dict[str, Any]:
    return {
        "apiVersion": "allot.dev/v1alpha1",
        "kind": "Tenant",
        "metadata": {"name": name},
        "spec": {"deviceClassSelector": {"matchLabels": {"team": team}}, "sharing": sharing},
    }


def _errors(document: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_sharing_classes(Tenant.model_validate(document), CATALOGUE)]


def test_shares_of_entitled_classes_pass() -> None:
    shares = [{"name": "a100", "guaranteed": "1"}, {"name": "mig-1g", "guaranteed": "2"}]
    assert _errors(_tenant("t", {"cohort": "pool", "deviceClasses": shares})) == []


def test_unknown_and_unentitled_classes_name_the_share() -> None:
    shares = [{"name": "h100", "guaranteed": "1"}, {"name": "l4", "guaranteed": "1"}]
    assert _errors(_tenant("t", {"cohort": "pool", "deviceClasses": shares})) == [
        'spec.sharing.deviceClasses[0].name: Not found: "h100": no DeviceClass of this name; '
        'did you mean "a100"?',
        'spec.sharing.deviceClasses[1].name: Invalid value: "l4": the tenant is not entitled '
        "to this DeviceClass (its deviceClassSelector does not select it)",
    ]


def test_a_tenant_without_selector_is_entitled_to_nothing() -> None:
    document = _tenant("t", {"deviceClasses": [{"name": "a100", "guaranteed": "1"}]})
    del document["spec"]["deviceClassSelector"]
    assert len(_errors(document)) == 1


# ------------------------------------------------------------------ the API server
def _class(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": {"team": "ml"}},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _device(name: str, kind: str, memory: int) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {"type": {"string": kind}, "uuid": {"string": f"GPU-{name}"}},
        "capacity": {"memory": {"value": str(memory)}},
    }


@pytest.fixture
def host(tmp_path: Path) -> Registry:
    """Two whole 80 GiB GPUs and three 10 GiB MIG devices; a class for each kind."""
    server = Registry(tmp_path)
    create(server, _class("a100", "device.attributes['gpu.nvidia.com'].type == 'gpu'"))
    create(server, _class("mig-1g", "device.attributes['gpu.nvidia.com'].type == 'mig'"))
    devices = [_device(f"gpu-{i}", "gpu", 80 * GIB) for i in range(2)]
    devices += [_device(f"mig-{i}", "mig", 10 * GIB) for i in range(3)]
    pool = {"name": "pool", "generation": 1, "resourceSliceCount": 1}
    spec = {"driver": "gpu.nvidia.com", "pool": pool, "allNodes": True, "devices": devices}
    create(server, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"name": "s"}, "spec": spec})  # fmt: skip
    return server


def test_an_unknown_class_is_refused_with_its_field_path(host: Registry) -> None:
    shares = [{"name": "h100", "guaranteed": "1"}]
    with pytest.raises(InvalidObjectError) as caught:
        create(host, _tenant("research-ai", {"cohort": "pool", "deviceClasses": shares}))
    status = to_status(caught.value)
    assert status.code == 422
    assert status.reason == "Invalid"
    assert status.details is not None
    assert status.details.causes is not None
    cause = status.details.causes[0]
    assert (cause.field, cause.reason) == (
        "spec.sharing.deviceClasses[0].name",
        "FieldValueNotFound",
    )


def test_guarantees_past_the_devices_are_accepted_with_a_warning(host: Registry) -> None:
    first = {"cohort": "pool", "deviceClasses": [{"name": "a100", "guaranteed": "1"}]}
    assert create(host, _tenant("legal-ai", first)).warnings == []
    second = {
        "cohort": "pool",
        "deviceClasses": [
            {"name": "a100", "guaranteed": "2"},
            {"name": "mig-1g", "guaranteed": "3"},
        ],
        "gpuMemory": {"guaranteed": "200Gi"},
    }
    written = create(host, _tenant("research-ai", second))
    assert written.warnings == [
        "tenant research-ai: cohort pool: guarantees of a100 sum to 3 (research-ai 2, legal-ai 1) "
        "but the published devices hold 2 device(s); some guarantee cannot be met",
        "tenant research-ai: cohort pool: guarantees of GPU memory sum to 200Gi "
        "(research-ai 200Gi) but the published devices hold 190Gi of GPU memory; some "
        "guarantee cannot be met",
    ]
    assert host.store.get("host", by_kind("Tenant").store, "", "research-ai") is not None


def test_another_cohort_does_not_count(host: Registry) -> None:
    create(host, _tenant("legal-ai", {"cohort": "other", "deviceClasses": [
        {"name": "a100", "guaranteed": "2"}]}))  # fmt: skip
    mine = {"cohort": "pool", "deviceClasses": [{"name": "a100", "guaranteed": "2"}]}
    assert create(host, _tenant("research-ai", mine)).warnings == []


QUOTA_KEYS = [
    "pods", "count/jobs.batch", "count/resourceclaims.resource.k8s.io", "requests.cpu",
    "limits.memory", "requests.storage", "hugepages-2Mi", "requests.example.kubernetes.io/x",
    "a100.deviceclass.resource.k8s.io/devices", "requests.deviceclass.resource.kubernetes.io/a100",
    "deviceclass.resource.kubernetes.io/a100", "requests.nvidia.com/gpu", "limits.nvidia.com/gpu",
    "nvidia.com/gpu", "example.com/fpga", "requests.example.com/fpga",
]  # fmt: skip
DEVICE_KEYS = set(QUOTA_KEYS[8:])


@given(st.sets(st.sampled_from(QUOTA_KEYS), min_size=1))
def test_validation_refuses_exactly_the_keys_the_quota_builder_drops(keys: set[str]) -> None:
    document = _tenant("t", {"cohort": "pool"})
    document["spec"]["quota"] = {"hard": dict.fromkeys(sorted(keys), "1")}
    tenant = Tenant.model_validate(document)
    built = entitlement.quota(tenant)
    kept = set(built["spec"]["hard"]) if built else set()
    fields = device_quota_keys(tenant.spec.quota)
    refused = {field.removeprefix("spec.quota.hard[")[:-1] for field in fields}
    assert refused == keys & DEVICE_KEYS
    assert kept == keys - DEVICE_KEYS
