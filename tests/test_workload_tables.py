"""``kubectl get`` columns of the workload kinds, as upstream's printers write them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from allot.registry.kinds import table_for

NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
CREATED = "2026-11-25T11:00:00Z"
TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "log", "image": "fluent"}]},
}


def obj(name: str, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": CREATED}, **fields}


def columns(plural: str) -> list[str]:
    table = table_for(plural)
    assert table is not None
    return [c["name"] + ("*" if c["priority"] else "") for c in table.columns]


def cells(plural: str, item: dict[str, Any]) -> list[Any]:
    table = table_for(plural)
    assert table is not None
    return table.cells(item, NOW)


def test_column_names_and_wide_columns() -> None:
    assert columns("deployments") == [
        "Name", "Ready", "Up-to-date", "Available", "Age", "Containers*", "Images*", "Selector*"
    ]  # fmt: skip
    assert columns("replicasets") == [
        "Name", "Desired", "Current", "Ready", "Age", "Containers*", "Images*", "Selector*"
    ]  # fmt: skip
    assert columns("statefulsets") == ["Name", "Ready", "Age", "Containers*", "Images*"]
    assert columns("jobs") == [
        "Name", "Status", "Completions", "Duration", "Age", "Containers*", "Images*", "Selector*"
    ]  # fmt: skip
    assert columns("cronjobs")[:7] == [
        "Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age"
    ]  # fmt: skip
    assert columns("services") == [
        "Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector*"
    ]  # fmt: skip
    assert columns("serviceaccounts") == ["Name", "Age"]
    assert columns("secrets") == ["Name", "Type", "Data", "Age"]
    assert columns("controllerrevisions") == ["Name", "Controller", "Revision", "Age"]


def test_deployment_and_replica_set_rows() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
    }
    deployment = obj(
        "web",
        spec={"replicas": 3, "selector": selector, "template": TEMPLATE},
        status={"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    )
    assert cells("deployments", deployment) == [
        "web", "2/3", 3, 2, "60m", "web,log", "nginx,fluent", "app=web,tier in (a,b)"
    ]  # fmt: skip
    replica_set = obj("web-5d4f", spec={"replicas": 3, "template": TEMPLATE}, status={})
    assert cells("replicasets", replica_set)[:5] == ["web-5d4f", 3, 0, 0, "60m"]
    stateful = obj("db", spec={"replicas": 2, "template": TEMPLATE}, status={"readyReplicas": 1})
    assert cells("statefulsets", stateful) == ["db", "1/2", "60m", "web,log", "nginx,fluent"]


@pytest.mark.parametrize(
    ("conditions", "deleting", "status"),
    [
        ([], False, "Running"),
        ([{"type": "Complete", "status": "True"}], False, "Complete"),
        ([{"type": "Failed", "status": "True"}], True, "Failed"),
        ([], True, "Terminating"),
        ([{"type": "Suspended", "status": "True"}], False, "Suspended"),
        ([{"type": "FailureTarget", "status": "True"}], False, "FailureTarget"),
        ([{"type": "SuccessCriteriaMet", "status": "True"}], False, "SuccessCriteriaMet"),
        ([{"type": "Suspended", "status": "False"}], False, "Running"),
    ],
)
def test_job_status_column(conditions: list[Any], deleting: bool, status: str) -> None:
    job = obj("pi", spec={"completions": 3}, status={"conditions": conditions})
    if deleting:
        job["metadata"]["deletionTimestamp"] = CREATED
    assert cells("jobs", job)[1] == status


def test_job_completions_and_duration() -> None:
    running = obj(
        "pi",
        spec={"completions": 3, "template": TEMPLATE},
        status={"succeeded": 1, "startTime": "2026-11-25T11:58:30Z"},
    )
    assert cells("jobs", running)[2:4] == ["1/3", "90s"]
    finished = obj(
        "queue",
        spec={"parallelism": 4},
        status={
            "succeeded": 1,
            "startTime": "2026-11-25T11:00:00Z",
            "completionTime": "2026-11-25T11:05:00Z",
        },
    )
    assert cells("jobs", finished)[2:4] == ["1/1 of 4", "5m"]
    assert cells("jobs", obj("new", spec={"parallelism": 1}))[2:4] == ["0/1", ""]


def test_cron_job_row() -> None:
    cron_job = obj(
        "nightly",
        spec={"schedule": "0 1 * * *", "suspend": False, "jobTemplate": {"spec": {}}},
        status={"active": [{"name": "a"}], "lastScheduleTime": "2026-11-25T11:30:00Z"},
    )
    assert cells("cronjobs", cron_job)[:7] == [
        "nightly", "0 1 * * *", "<none>", "False", 1, "30m", "60m"
    ]  # fmt: skip
    zoned = obj("z", spec={"schedule": "@daily", "timeZone": "Europe/Paris"}, status={})
    assert cells("cronjobs", zoned)[2:6] == ["Europe/Paris", "<unset>", 0, "<none>"]


def test_service_rows() -> None:
    cluster_ip = obj(
        "web",
        spec={
            "type": "ClusterIP",
            "clusterIP": "10.96.0.10",
            "selector": {"app": "web"},
            "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
        },
    )
    assert cells("services", cluster_ip) == [
        "web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP,53/UDP", "60m", "app=web"
    ]  # fmt: skip
    node_port = obj(
        "np",
        spec={
            "type": "NodePort",
            "clusterIP": "10.96.0.11",
            "ports": [{"port": 80, "nodePort": 30080}],
        },
    )
    assert cells("services", node_port)[3:5] == ["<none>", "80:30080/TCP"]
    balancer = obj("lb", spec={"type": "LoadBalancer", "ports": []}, status={"loadBalancer": {}})
    assert cells("services", balancer)[3:5] == ["<pending>", "<none>"]
    external = obj("ext", spec={"type": "ExternalName", "externalName": "db.example.com"})
    assert cells("services", external)[1:4] == ["ExternalName", "<none>", "db.example.com"]


def test_secret_service_account_and_revision_rows() -> None:
    secret = obj("token", type="Opaque", data={"a": "Yg==", "b": "Yw=="})
    assert cells("secrets", secret) == ["token", "Opaque", 2, "60m"]
    assert cells("serviceaccounts", obj("default")) == ["default", "60m"]
    revision = obj("db-7f9", revision=2)
    revision["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": True}
    ]
    assert cells("controllerrevisions", revision) == ["db-7f9", "statefulset.apps/db", 2, "60m"]
    assert cells("controllerrevisions", obj("orphan"))[1] == "<none>"
