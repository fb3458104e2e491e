"""A process container's environment: literal values, the downward API's ``fieldRef``
values read from its pod (a Job's completion index among them), then its devices'."""

from __future__ import annotations

from allot.controllers.runtimes import container_environment, pod_field
from allot.types import Obj

POD: Obj = {
    "metadata": {
        "name": "sweep-1-abcde",
        "namespace": "team",
        "uid": "u-1",
        "labels": {"job-name": "sweep"},
        "annotations": {"batch.kubernetes.io/job-completion-index": "1"},
    },
    "spec": {"nodeName": "node-a", "serviceAccountName": "default"},
    "status": {"podIP": "10.0.0.7"},
}


def _from_field(name: str, path: str) -> Obj:
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}


def test_literal_field_and_device_values() -> None:
    container = {
        "name": "c",
        "env": [
            {"name": "MODE", "value": "eval"},
            _from_field(
                "JOB_COMPLETION_INDEX",
                "metadata.annotations['batch.kubernetes.io/job-completion-index']",
            ),
            _from_field("POD_NAME", "metadata.name"),
            _from_field("NODE", "spec.nodeName"),
            _from_field("JOB", "metadata.labels['job-name']"),
        ],
    }
    environment = container_environment(container, POD, {"CUDA_VISIBLE_DEVICES": "GPU-1"})
    assert environment == {
        "MODE": "eval",
        "JOB_COMPLETION_INDEX": "1",
        "POD_NAME": "sweep-1-abcde",
        "NODE": "node-a",
        "JOB": "sweep",
        "CUDA_VISIBLE_DEVICES": "GPU-1",
    }


def test_unresolvable_sources_leave_the_variable_unset() -> None:
    container = {
        "name": "c",
        "env": [
            _from_field("MISSING", "metadata.labels['absent']"),
            _from_field("UNKNOWN", "spec.unknownField"),
            {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        ],
    }
    assert container_environment(container, POD, {}) == {}


def test_pod_fields() -> None:
    assert pod_field(POD, "metadata.namespace") == "team"
    assert pod_field(POD, "metadata.uid") == "u-1"
    assert pod_field(POD, "status.podIP") == "10.0.0.7"
    assert pod_field(POD, "status.hostIP") is None
