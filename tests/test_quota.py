"""ResourceQuota usage as Kubernetes 1.36's evaluators compute it, and its enforcement."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from allot.api.quantity import Quantity
from allot.registry.admission import AdmissionDenied
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.quota import Charging, claim_devices, pod_usage, usage
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.statuses import InvalidObjectError, to_status

OPTIONS = WriteOptions(field_manager="t", field_validation="Strict", dry_run=False)


def _texts(charged: Mapping[str, Quantity]) -> dict[str, str]:
    return {key: str(value) for key, value in charged.items()}


def _claim(*requests: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "q", "annotations": annotations or {}},
        "spec": {"devices": {"requests": list(requests)}},
    }


def test_exact_count_all_and_first_available() -> None:
    claim = _claim(
        {"name": "a", "exactly": {"deviceClassName": "gpu", "count": 2}},
        {"name": "b", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}},
        {
            "name": "c",
            "firstAvailable": [
                {"name": "x", "deviceClassName": "big", "count": 1},
                {"name": "y", "deviceClassName": "small", "count": 3},
                {"name": "z", "deviceClassName": "small", "count": 2},
            ],
        },
    )
    charged = _texts(claim_devices(claim, {"gpu": "nvidia.com/gpu"}))
    assert charged["gpu.deviceclass.resource.k8s.io/devices"] == "34"
    assert charged["big.deviceclass.resource.k8s.io/devices"] == "1"
    assert charged["small.deviceclass.resource.k8s.io/devices"] == "3"
    assert charged["requests.deviceclass.resource.kubernetes.io/small"] == "3"
    assert charged["requests.nvidia.com/gpu"] == "34"
    whole = usage(by_kind("ResourceClaim"), claim, Charging(None, "host", {}))
    assert str(whole["count/resourceclaims.resource.k8s.io"]) == "1"


def test_the_annotation_alone_exempts_nothing() -> None:
    claim = _claim(
        {"name": "a", "exactly": {"deviceClassName": "gpu", "count": 3}},
        annotations={"resource.kubernetes.io/extended-resource-claim": "true"},
    )
    assert _texts(claim_devices(claim, {"gpu": "nvidia.com/gpu"})) == {
        "gpu.deviceclass.resource.k8s.io/devices": "3",
        "requests.deviceclass.resource.kubernetes.io/gpu": "3",
        "requests.nvidia.com/gpu": "3",
    }
    # the owning pod was charged 2: only the remainder is the claim's
    owner = {"requests.nvidia.com/gpu": Quantity.from_int(2)}
    assert _texts(claim_devices(claim, {"gpu": "nvidia.com/gpu"}, owner)) == {
        "gpu.deviceclass.resource.k8s.io/devices": "3",
        "requests.deviceclass.resource.kubernetes.io/gpu": "3",
        "requests.nvidia.com/gpu": "1",
    }


def _pod(spec: dict[str, Any], phase: str = "Pending") -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": spec, "status": {"phase": phase}}


def _gpus(requests: str | None = None, limits: str | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = {"nvidia.com/gpu": requests}
    if limits is not None:
        resources["limits"] = {"nvidia.com/gpu": limits}
    return {"name": "c", "image": "i", "resources": resources}


@pytest.mark.parametrize(
    ("spec", "charged"),
    [
        ({"containers": [_gpus("2", "2")]}, 2),
        ({"containers": [_gpus(limits="3")]}, 3),  # a limit alone is the request
        ({"containers": [_gpus("1", "1"), _gpus("2", "2")]}, 3),
        # init containers run one at a time, before the others: the larger of the two
        ({"initContainers": [_gpus("4", "4")], "containers": [_gpus("1", "1")]}, 4),
        ({"initContainers": [_gpus("1", "1"), _gpus("2", "2")], "containers": [_gpus("3")]}, 3),
        # a sidecar (restartPolicy Always) runs on: added to the regular containers
        (
            {
                "initContainers": [{**_gpus("1", "1"), "restartPolicy": "Always"}, _gpus("2")],
                "containers": [_gpus("2", "2")],
            },
            3,
        ),
        ({"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}, 0),
    ],
    ids=["one", "limit only", "summed", "init larger", "regular larger", "sidecar", "cpu"],
)
def test_pod_usage_as_upstream_pod_requests(spec: dict[str, Any], charged: int) -> None:
    gpus = _texts(pod_usage(_pod(spec))).get("requests.nvidia.com/gpu", "0")
    assert gpus == str(charged)
    assert pod_usage(_pod(spec, phase="Succeeded")) == {}


def test_implicit_class_names_are_charged() -> None:
    limits = {"deviceclass.resource.kubernetes.io/a": "2"}
    container = {"name": "c", "resources": {"limits": limits}}
    assert _texts(pod_usage(_pod({"containers": [container]}))) == {
        "pods": "1",
        "requests.deviceclass.resource.kubernetes.io/a": "2",
    }


def _create(api: Registry, obj: dict[str, Any]) -> None:
    resource = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    api.handlers.create("host", Target(resource, namespace, None, ""), obj, OPTIONS)


def test_admission_refuses_past_the_hard_limit(tmp_path: Path) -> None:
    api = Registry(tmp_path)
    _create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "q"}})
    _create(
        api,
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "gpus", "namespace": "q"},
            "spec": {"hard": {"gpu.deviceclass.resource.k8s.io/devices": "2"}},
        },
    )
    request = {"name": "a", "exactly": {"deviceClassName": "gpu", "count": 2}}
    _create(api, {**_claim(request), "metadata": {"name": "first", "namespace": "q"}})
    with pytest.raises(AdmissionDenied) as caught:
        _create(api, {**_claim(request), "metadata": {"name": "second", "namespace": "q"}})
    status = to_status(caught.value)
    assert status.code == 403
    assert status.reason == "Forbidden"
    assert status.message == (
        'resourceclaims.resource.k8s.io "second" is forbidden: exceeded quota: gpus, '
        "requested: gpu.deviceclass.resource.k8s.io/devices=2, "
        "used: gpu.deviceclass.resource.k8s.io/devices=2, "
        "limited: gpu.deviceclass.resource.k8s.io/devices=2"
    )
    api.store.close()


GPU_QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "gpus", "namespace": "q"},
    "spec": {"hard": {"requests.nvidia.com/gpu": "1"}},
}
GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"extendedResourceName": "nvidia.com/gpu"},
}
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def _namespace_with_gpu_quota(tmp_path: Path) -> Registry:
    api = Registry(tmp_path)
    _create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "q"}})
    _create(api, GPU_CLASS)
    _create(api, GPU_QUOTA)
    return api


def _extended_claim(name: str, owner: dict[str, Any] | None, count: int = 1) -> dict[str, Any]:
    claim = _claim(
        {"name": "r", "exactly": {"deviceClassName": "gpu", "count": count}},
        annotations={ANNOTATION: "true"},
    )
    claim["metadata"]["name"] = name
    if owner is not None:
        claim["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return claim


def _denial(api: Registry, obj: dict[str, Any]) -> str:
    with pytest.raises(AdmissionDenied) as caught:
        _create(api, obj)
    status = to_status(caught.value)
    assert (status.code, status.reason) == (403, "Forbidden")
    return status.message or ""


def test_a_forged_extended_resource_claim_is_charged(tmp_path: Path) -> None:
    """The annotation exempts only the claim of a pod that was charged (upstream's owner
    check): no owner, a pod that is gone, or a second claim of the same pod pay in full."""
    api = _namespace_with_gpu_quota(tmp_path)
    denied = (
        'resourceclaims.resource.k8s.io "{}" is forbidden: exceeded quota: gpus, '
        "requested: requests.nvidia.com/gpu={}, used: requests.nvidia.com/gpu={}, "
        "limited: requests.nvidia.com/gpu=1"
    )
    assert _denial(api, _extended_claim("orphan", None, 2)) == denied.format("orphan", 2, 0)
    ghost = {"metadata": {"name": "ghost", "uid": "0000"}}
    assert _denial(api, _extended_claim("ghost", ghost, 2)) == denied.format("ghost", 2, 0)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "q"},
        "spec": {"containers": [{"name": "c", "image": "i", **_gpus(limits="1")}]},
    }
    _create(api, pod)
    stored = api.store.get("host", by_kind("Pod").store, "q", "p")
    _create(api, _extended_claim("p-extended-resources-abcde", stored))  # the pod paid for it
    assert _denial(api, _extended_claim("second", stored)) == denied.format("second", 1, 1)
    api.store.close()


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        (
            {"limits": {"nvidia.com/gpu": "-1"}},
            'spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "-1": '
            "must be greater than or equal to 0",
        ),
        (
            {"limits": {"nvidia.com/gpu": "500m"}},
            'spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": '
            "must be an integer",
        ),
        (
            {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "8"}},
            'spec.containers[0].resources.requests: Invalid value: "1": '
            "must be equal to nvidia.com/gpu limit of 8",
        ),
        (
            {"requests": {"nvidia.com/gpu": "1"}},
            "spec.containers[0].resources.limits: Required value: "
            "Limit must be set for non overcommitable resources",
        ),
        (
            {"limits": {"deviceclass.resource.kubernetes.io/gpu": "1.5"}},
            "spec.containers[0].resources.limits[deviceclass.resource.kubernetes.io/gpu]: "
            'Invalid value: "1500m": must be an integer',
        ),
        (
            {"requests": {"cpu": "-2"}},
            'spec.containers[0].resources.requests[cpu]: Invalid value: "-2": '
            "must be greater than or equal to 0",
        ),
    ],
    ids=["negative", "fraction", "request below limit", "request alone", "implicit", "cpu"],
)
def test_pod_resource_amounts_are_validated(
    tmp_path: Path, resources: dict[str, Any], message: str
) -> None:
    api = Registry(tmp_path)
    _create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "q"}})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "q"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]},
    }
    with pytest.raises(InvalidObjectError) as caught:
        _create(api, pod)
    status = to_status(caught.value)
    assert (status.code, status.reason) == (422, "Invalid")
    if "limits" in resources and "requests" not in resources:  # defaulted: both refused
        requested = message.replace(".limits[", ".requests[")
        message = f"[{message}, {requested}]"
    assert status.message == f'Pod "p" is invalid: {message}'
    api.store.close()


def test_init_containers_cannot_take_uncharged_devices(tmp_path: Path) -> None:
    """The pod is charged max(init, regular) = 1; the scheduler's claim asks a device per
    container (2, as kube-scheduler does), so it pays for the one the pod was not charged."""
    api = _namespace_with_gpu_quota(tmp_path)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "q"},
        "spec": {
            "initContainers": [{**_gpus(limits="1"), "name": "i"}],
            "containers": [_gpus(limits="1")],
        },
    }
    _create(api, pod)
    stored = api.store.get("host", by_kind("Pod").store, "q", "p")
    claim = _extended_claim("p-extended-resources-abcde", stored, count=2)
    assert _denial(api, claim) == (
        'resourceclaims.resource.k8s.io "p-extended-resources-abcde" is forbidden: '
        "exceeded quota: gpus, requested: requests.nvidia.com/gpu=1, "
        "used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1"
    )
    api.store.close()
