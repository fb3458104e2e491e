"""ResourceQuota usage as Kubernetes 1.36's evaluators compute it, and its enforcement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from allot.apiserver.admission import AdmissionDenied
from allot.apiserver.app import ApiServer
from allot.apiserver.handlers import WriteOptions
from allot.apiserver.quota import claim_devices, pod_usage, usage
from allot.apiserver.requests import Target
from allot.apiserver.resources import by_kind
from allot.statuses import to_status

OPTIONS = WriteOptions(field_manager="t", field_validation="Strict", dry_run=False)


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
    charged = claim_devices(claim, {"gpu": "nvidia.com/gpu"})
    assert charged["gpu.deviceclass.resource.k8s.io/devices"] == 34
    assert charged["big.deviceclass.resource.k8s.io/devices"] == 1
    assert charged["small.deviceclass.resource.k8s.io/devices"] == 3
    assert charged["requests.deviceclass.resource.kubernetes.io/small"] == 3
    assert charged["requests.nvidia.com/gpu"] == 34
    whole = usage(by_kind("ResourceClaim"), claim, {})
    assert whole["count/resourceclaims.resource.k8s.io"] == 1


def test_extended_resource_claims_are_not_charged_twice() -> None:
    claim = _claim(
        {"name": "a", "exactly": {"deviceClassName": "gpu", "count": 1}},
        annotations={"resource.kubernetes.io/extended-resource-claim": "true"},
    )
    charged = claim_devices(claim, {"gpu": "nvidia.com/gpu"})
    assert charged == {"gpu.deviceclass.resource.k8s.io/devices": 1}
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]},
        "status": {"phase": "Running"},
    }
    assert pod_usage(pod) == {"pods": 1, "requests.nvidia.com/gpu": 2}
    assert pod_usage({**pod, "status": {"phase": "Succeeded"}}) == {}


def _create(api: ApiServer, obj: dict[str, Any]) -> None:
    resource = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    api.handlers.create("host", Target(resource, namespace, None, ""), obj, OPTIONS)


def test_admission_refuses_past_the_hard_limit(tmp_path: Path) -> None:
    api = ApiServer(tmp_path)
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
