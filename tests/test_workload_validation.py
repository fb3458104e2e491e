"""Workload validation, table-driven from ``tests/scenarios/workload-validation.yaml``
(pinned upstream texts), and upstream's defaulting of every workload kind."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allot.api import kinds
from allot.api.base import ApiModel
from allot.api.errors import DecodeError
from allot.cel import SelectorCompiler
from allot.registry.kinds import rules_for
from allot.validation import cron, indexes
from allot.validation.objects import (
    apply_defaults,
    validate_create,
    validate_status_update,
    validate_update,
)
from allot.validation.resource import ResourceContext
from tests.conftest import load_scenarios

SCENARIOS = load_scenarios("workload-validation.yaml")
TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}


def defaulted(document: dict[str, Any]) -> ApiModel:
    obj = kinds.decode(copy.deepcopy(document))
    apply_defaults(obj, rules_for(obj))
    return obj


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_workload_validation_scenario(scenario: dict[str, Any], compiler: SelectorCompiler) -> None:
    context = ResourceContext(compiler=compiler)
    obj = defaulted(scenario["object"])
    rules = rules_for(obj)
    if scenario.get("subresource") == "status":
        errors = validate_status_update(obj, defaulted(scenario["old"]), context, rules)
    elif "old" in scenario:
        errors = validate_update(obj, defaulted(scenario["old"]), context, rules)
    else:
        errors = validate_create(obj, context, rules)
    assert [str(e) for e in errors] == scenario["errors"]


def wire(kind: str, api_version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "x", "namespace": "default"},
        "spec": spec,
    }


def test_deployment_defaults() -> None:
    spec = defaulted(wire("Deployment", "apps/v1", {"template": TEMPLATE})).to_wire()["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert spec["revisionHistoryLimit"] == 10
    assert spec["progressDeadlineSeconds"] == 600
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    recreate = {"template": TEMPLATE, "strategy": {"type": "Recreate"}}
    spec = defaulted(wire("Deployment", "apps/v1", recreate)).to_wire()["spec"]
    assert spec["strategy"] == {"type": "Recreate"}


def test_replica_set_and_stateful_set_defaults() -> None:
    replica_set = defaulted(wire("ReplicaSet", "apps/v1", {"template": TEMPLATE})).to_wire()
    assert replica_set["spec"]["replicas"] == 1
    spec = defaulted(wire("StatefulSet", "apps/v1", {"template": TEMPLATE})).to_wire()["spec"]
    assert spec["replicas"] == 1
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }


def test_job_defaults() -> None:
    job = defaulted(wire("Job", "batch/v1", {"template": TEMPLATE})).to_wire()
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["manualSelector"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert job["metadata"]["labels"] == {"app": "web"}  # the template's, when it has none
    parallel = defaulted(wire("Job", "batch/v1", {"parallelism": 3, "template": TEMPLATE}))
    assert "completions" not in parallel.to_wire()["spec"]  # a work queue: unset
    per_index = {
        "backoffLimitPerIndex": 1,
        "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "X"}]}]},
        "template": TEMPLATE,
    }
    spec = defaulted(wire("Job", "batch/v1", per_index)).to_wire()["spec"]
    assert spec["backoffLimit"] == 2**31 - 1
    assert spec["podReplacementPolicy"] == "Failed"
    assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
        {"type": "X", "status": "True"}
    ]


def test_cron_job_defaults_leave_the_job_template_s_job_fields() -> None:
    template = {"spec": {"template": TEMPLATE}}
    spec = defaulted(
        wire("CronJob", "batch/v1", {"schedule": "@daily", "jobTemplate": template})
    ).to_wire()["spec"]
    assert spec["concurrencyPolicy"] == "Allow"
    assert spec["suspend"] is False
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    job_spec = spec["jobTemplate"]["spec"]
    assert "completions" not in job_spec
    assert job_spec["template"]["spec"]["restartPolicy"] == "Always"


def test_service_and_secret_defaults() -> None:
    service = defaulted(
        wire("Service", "v1", {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]})
    ).to_wire()
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["sessionAffinity"] == "None"
    assert service["spec"]["internalTrafficPolicy"] == "Cluster"
    assert service["spec"]["ports"] == [
        {"port": 80, "protocol": "TCP", "targetPort": 80},
        {"port": 53, "protocol": "UDP", "targetPort": 53},
    ]
    node_port = defaulted(
        wire("Service", "v1", {"type": "LoadBalancer", "sessionAffinity": "ClientIP"})
    ).to_wire()["spec"]
    assert node_port["externalTrafficPolicy"] == "Cluster"
    assert node_port["allocateLoadBalancerNodePorts"] is True
    assert node_port["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    secret = defaulted(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default"},
            "data": {"a": "b2xk", "b": "Yg=="},
            "stringData": {"a": "new"},
        }
    ).to_wire()
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"a": "bmV3", "b": "Yg=="}
    assert "stringData" not in secret


@pytest.mark.parametrize(
    ("schedule", "minutes", "hours", "weekdays"),
    [
        ("*/15 * * * *", {0, 15, 30, 45}, set(range(24)), set(range(7))),
        ("0 9-17/4 * * mon-fri", {0}, {9, 13, 17}, {1, 2, 3, 4, 5}),
        ("@hourly", {0}, set(range(24)), set(range(7))),
        ("5,10 0 * * SUN", {5, 10}, {0}, {0}),
    ],
)
def test_cron_schedules_parse(
    schedule: str, minutes: set[int], hours: set[int], weekdays: set[int]
) -> None:
    parsed = cron.parse(schedule)
    assert parsed.minutes == frozenset(minutes)
    assert parsed.hours == frozenset(hours)
    assert parsed.weekdays == frozenset(weekdays)


def test_every_descriptor_is_a_duration() -> None:
    assert cron.parse("@every 1h30m").every == 5400


@given(st.sets(st.integers(min_value=0, max_value=200)))
def test_index_sets_round_trip(values: set[int]) -> None:
    text = indexes.render(values)
    assert indexes.parse(text, 201) == sorted(values)


@pytest.mark.parametrize(
    ("value", "byte"), [("abc!", 3), ("Yg", 0), ("Y===", 1), ("YWJjZA", 4), ("not base64", 3)]
)
def test_secret_data_must_be_base64(value: str, byte: int) -> None:
    document = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        "data": {"ok": "Yg==", "bad": value},
    }
    with pytest.raises(DecodeError) as raised:
        kinds.decode(document)
    assert str(raised.value) == (
        'Secret in version "v1" cannot be handled as a Secret: '
        f"illegal base64 data at input byte {byte}"
    )
