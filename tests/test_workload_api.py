"""The workload kinds (apps/v1, batch/v1, Service, ServiceAccount, Secret) are served by
the registry in every cluster: create, get, list, update, ``/status``, with the status a
create starts from and the defaults upstream's API server writes."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.api.errors import StrictDecodingError
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.listing import ListOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.types import Obj

MANIFEST = Path(__file__).parent / "data" / "workloads" / "all-kinds.yaml"
OPTIONS = WriteOptions("test", "Strict", False)
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Job", "CronJob", "Service", "ServiceAccount")
CLIENT_STATUS: dict[str, Obj] = {
    "Deployment": {"readyReplicas": 5},
    "StatefulSet": {"readyReplicas": 5},
    "Job": {"active": 3},
    "CronJob": {"lastScheduleTime": "2026-01-01T00:00:00Z"},
    "Service": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}},
}
INITIAL_STATUS = {
    "Deployment": {},
    "ReplicaSet": {"replicas": 0},
    "StatefulSet": {"availableReplicas": 0, "replicas": 0},
    "Job": {},
    "CronJob": {},
    "Service": {"loadBalancer": {}},
}


def documents() -> list[Obj]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    registry = Registry(tmp_path)
    registry.add_cluster("legal-ai")
    yield registry
    registry.close()


def target(kind: str, name: str | None = None, subresource: str = "") -> Target:
    return Target(by_kind(kind), "default", name, subresource)


def create(registry: Registry, cluster: str, document: Obj) -> Obj:
    kind = document["kind"]
    return registry.handlers.create(cluster, target(kind), copy.deepcopy(document), OPTIONS).object


@pytest.mark.parametrize("cluster", [HOST_CLUSTER, "legal-ai"])
def test_every_kind_round_trips_in_every_cluster(registry: Registry, cluster: str) -> None:
    for document in documents():
        kind, name = document["kind"], document["metadata"]["name"]
        sent = {**document, "status": CLIENT_STATUS[kind]} if kind in CLIENT_STATUS else document
        created = create(registry, cluster, sent)
        if kind in INITIAL_STATUS:
            assert created["status"] == INITIAL_STATUS[kind], kind
        fetched = registry.handlers.get(cluster, target(kind, name))
        assert fetched["metadata"]["uid"] == created["metadata"]["uid"]
        page = registry.handlers.list_page(cluster, target(kind), ListOptions())
        assert name in [item["metadata"]["name"] for item in page.items], kind


def test_status_is_written_only_through_its_subresource(registry: Registry) -> None:
    deployment = next(d for d in documents() if d["kind"] == "Deployment")
    created = create(registry, HOST_CLUSTER, deployment)
    handlers = registry.handlers
    changed: Any = copy.deepcopy(created)
    changed["status"] = {"replicas": 2, "readyReplicas": 2}
    changed["spec"]["replicas"] = 3
    updated = handlers.update(HOST_CLUSTER, target("Deployment", "web"), changed, OPTIONS).object
    assert updated["status"] == {}
    assert updated["spec"]["replicas"] == 3
    assert updated["metadata"]["generation"] == 2
    changed["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"]
    status = handlers.update(
        HOST_CLUSTER, target("Deployment", "web", "status"), changed, OPTIONS
    ).object
    assert status["status"] == {"replicas": 2, "readyReplicas": 2}
    assert status["metadata"]["generation"] == 2


def test_a_status_write_decodes_its_status_strictly_and_keeps_the_stored_spec(
    registry: Registry,
) -> None:
    """A ``/status`` write does not decode the stored spec again, yet its status is decoded
    and validated as before: an unknown or mistyped status field is refused with its
    path, ``Warn`` drops it with a warning, and the body's spec is ignored."""
    deployment = next(d for d in documents() if d["kind"] == "Deployment")
    created = create(registry, HOST_CLUSTER, deployment)
    handlers, status_target = registry.handlers, target("Deployment", "web", "status")
    body: Any = copy.deepcopy(created)
    body["spec"]["replicas"] = 7
    body["status"] = {"replicas": 2, "bogus": 1}
    with pytest.raises(StrictDecodingError) as refused:
        handlers.update(HOST_CLUSTER, status_target, body, OPTIONS)
    assert 'unknown field "status.bogus"' in str(refused.value)
    body["status"] = {"replicas": "two"}
    with pytest.raises(StrictDecodingError) as mistyped:
        handlers.update(HOST_CLUSTER, status_target, body, OPTIONS)
    assert "status.replicas" in str(mistyped.value)
    body["status"] = {"replicas": 2, "bogus": 1}
    warn = WriteOptions("test", "Warn", False)
    written = handlers.update(HOST_CLUSTER, status_target, body, warn)
    assert written.warnings == ['unknown field "status.bogus"']
    assert written.object["status"] == {"replicas": 2}
    assert written.object["spec"] == created["spec"]
    assert written.object["metadata"]["generation"] == created["metadata"]["generation"]


def test_a_job_gets_its_generated_selector(registry: Registry) -> None:
    job = next(d for d in documents() if d["kind"] == "Job")
    created = create(registry, HOST_CLUSTER, job)
    uid = created["metadata"]["uid"]
    assert created["spec"]["selector"] == {
        "matchLabels": {"batch.kubernetes.io/controller-uid": uid}
    }
    generated = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid,
        "job-name": "pi",
    }
    assert created["spec"]["template"]["metadata"]["labels"] == generated
    assert created["metadata"]["labels"] == generated
    assert created["spec"]["manualSelector"] is False


def test_kinds_are_served_with_upstream_names() -> None:
    expected = {
        "Deployment": ("deployments", ("deploy",), ("all",), ("status", "scale")),
        "ReplicaSet": ("replicasets", ("rs",), ("all",), ("status", "scale")),
        "StatefulSet": ("statefulsets", ("sts",), ("all",), ("status", "scale")),
        "ControllerRevision": ("controllerrevisions", (), (), ()),
        "Job": ("jobs", (), ("all",), ("status",)),
        "CronJob": ("cronjobs", ("cj",), ("all",), ("status",)),
        "Service": ("services", ("svc",), ("all",), ("status",)),
        "ServiceAccount": ("serviceaccounts", ("sa",), (), ()),
        "Secret": ("secrets", (), (), ()),
    }
    for kind, (plural, short, categories, subresources) in expected.items():
        served = by_kind(kind)
        assert served.plural == plural
        assert served.short_names == short
        assert served.categories == categories
        assert served.subresources == subresources, kind


def test_warn_field_validation_warns_with_the_hint_too(registry: Registry) -> None:
    """Issue 28: with ``fieldValidation=Warn`` a request in the v1beta1 shape is stored
    without the stray field and warned of, with allot's advice as a warning of its own."""
    request = {"name": "gpu", "exactly": {"deviceClassName": "c"}, "deviceClassName": "c"}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "beta", "namespace": "default"},
             "spec": {"devices": {"requests": [request]}}}  # fmt: skip
    _, warnings = registry.admission.decode(HOST_CLUSTER, claim, "Warn")
    assert warnings == [
        'unknown field "spec.devices.requests[0].deviceClassName"',
        "spec.devices.requests[0] has the v1beta1 shape: in resource.k8s.io/v1, move "
        "deviceClassName under spec.devices.requests[0].exactly (or list alternatives under "
        "spec.devices.requests[0].firstAvailable)",
    ]
    assert registry.admission.decode(HOST_CLUSTER, claim, "Ignore")[1] == []
