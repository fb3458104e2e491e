"""How long a simulated pod runs (``allot.controllers.runtimes.simulated_run_seconds``):
Job pods that are not restarted end on their own; every other pod runs until stopped."""

from __future__ import annotations

from typing import Any

import pytest

from allot.controllers.runtimes import simulated_run_seconds

JOB = {"batch.kubernetes.io/job-name": "train"}
CASES: list[tuple[str, dict[str, Any], float | None]] = [
    ("bare pod, Always", {"restartPolicy": "Always"}, None),
    ("bare pod, Never", {"restartPolicy": "Never"}, None),
    ("bare pod, no policy", {}, None),
    ("Job pod, Never", {"restartPolicy": "Never", "labels": JOB}, 3.0),
    ("Job pod, OnFailure", {"restartPolicy": "OnFailure", "labels": JOB}, 3.0),
    ("Job pod, Always", {"restartPolicy": "Always", "labels": JOB}, None),
    (
        "annotation wins",
        {"restartPolicy": "Never", "labels": JOB, "seconds": "30"},
        30.0,
    ),
    ("annotation on a bare pod", {"restartPolicy": "Always", "seconds": "0.5"}, 0.5),
]


@pytest.mark.parametrize(("case", "shape", "expected"), CASES, ids=[c[0] for c in CASES])
def test_simulated_run_seconds(case: str, shape: dict[str, Any], expected: float | None) -> None:
    metadata: dict[str, Any] = {"name": "p", "labels": shape.get("labels") or {}}
    if "seconds" in shape:
        metadata["annotations"] = {"allot.dev/simulated-runtime-seconds": shape["seconds"]}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if "restartPolicy" in shape:
        spec["restartPolicy"] = shape["restartPolicy"]
    assert simulated_run_seconds({"metadata": metadata, "spec": spec}, 3.0) == expected
