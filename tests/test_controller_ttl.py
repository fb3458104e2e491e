"""TTL after finished: a finished Job is deleted ``ttlSecondsAfterFinished`` after it
finished, on the controller's clock; unfinished Jobs and Jobs without a TTL stay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from allot.controllers.runtime import RetryLater
from allot.controllers.ttl import TtlAfterFinishedController, expires_at
from allot.store import WatchEvent
from allot.types import rfc3339
from tests.batch_harness import Bench, key_of

TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}


def _job(bench: Bench, ttl: int | None, finished: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": TEMPLATE, "suspend": True}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    job = bench.context.create(
        "Job",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "default"},
            "spec": spec,
        },
        "test",
    )
    if finished is not None:
        now = rfc3339(bench.clock())
        job["status"] = {
            "startTime": now,
            "conditions": [{"type": finished, "status": "True", "lastTransitionTime": now}],
        }
        job = bench.context.update_status("Job", job, "test")
    return job


@pytest.mark.parametrize("finished", ["Complete", "Failed"])
def test_a_finished_job_is_deleted_when_its_ttl_expires(tmp_path: Path, finished: str) -> None:
    bench = Bench(tmp_path)
    controller = TtlAfterFinishedController(bench.contexts("ttl-after-finished-controller"))
    job = _job(bench, 30, finished)
    assert controller.keys_for(WatchEvent("MODIFIED", 1, "host", "jobs.batch", job)) == [
        key_of(job)
    ]
    bench.clock.advance(10)
    with pytest.raises(RetryLater) as later:
        controller.reconcile(key_of(job))
    assert later.value.seconds == pytest.approx(20)
    assert bench.context.get("Job", "default", "j") is not None
    bench.clock.advance(20)
    controller.reconcile(key_of(job))
    assert bench.context.get("Job", "default", "j") is None
    bench.close()


@pytest.mark.parametrize(("ttl", "finished"), [(None, "Complete"), (0, None)])
def test_jobs_without_ttl_or_unfinished_stay(
    tmp_path: Path, ttl: int | None, finished: str | None
) -> None:
    bench = Bench(tmp_path)
    controller = TtlAfterFinishedController(bench.contexts("ttl-after-finished-controller"))
    job = _job(bench, ttl, finished)
    assert expires_at(job) is None
    assert controller.keys_for(WatchEvent("MODIFIED", 1, "host", "jobs.batch", job)) == []
    bench.clock.advance(3600)
    controller.reconcile(key_of(job))
    assert bench.context.get("Job", "default", "j") is not None
    bench.close()
