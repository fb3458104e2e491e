"""The CronJob controller, scenario by scenario (``tests/scenarios/cronjobs.yaml``), against
a real Registry on a fake clock; the test finishes Jobs as the Job controller would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.controllers.cronjobs import CronJobController, job_name
from allot.types import rfc3339
from tests.batch_harness import START, Bench, key_of, subset
from tests.test_controller_jobs import subset_loose

SCENARIOS = yaml.safe_load((Path(__file__).parent / "scenarios" / "cronjobs.yaml").read_text())


def _cronjob(scenario: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "cron", "namespace": "default"},
        "spec": {**SCENARIOS["spec"], **scenario["cronjob"]},
    }


def test_job_names_count_minutes_since_the_epoch() -> None:
    assert job_name("cron", START) == "cron-29454360"


@pytest.mark.parametrize("scenario", SCENARIOS["scenarios"], ids=lambda s: s["name"])
def test_cronjob_scenario(tmp_path: Path, scenario: dict[str, Any]) -> None:
    bench = Bench(tmp_path)
    controller = CronJobController(bench.contexts("cronjob-controller"))
    cronjob = bench.context.create("CronJob", _cronjob(scenario), "test")
    key = key_of(cronjob)
    for number, step in enumerate(scenario["steps"]):
        _act(bench, step)
        retry = bench.settle(controller, key)
        _check(bench, step.get("expect") or {}, retry, f"step {number}")
    bench.close()


def _jobs(bench: Bench) -> list[dict[str, Any]]:
    return sorted(bench.context.list("Job"), key=lambda j: j["metadata"]["name"])


def _act(bench: Bench, step: dict[str, Any]) -> None:
    for verb, condition in (("complete", "Complete"), ("fail", "Failed")):
        jobs = _jobs(bench)
        for position in step.get(verb) or []:
            _finish(bench, jobs[position], condition)
    if "patch" in step:
        cronjob = bench.context.get("CronJob", "default", "cron")
        assert cronjob is not None
        cronjob["spec"].update(step["patch"])
        bench.context.update("CronJob", cronjob, "test")
    if "advance" in step:
        bench.clock.advance(step["advance"])


def _finish(bench: Bench, job: dict[str, Any], condition: str) -> None:
    now = rfc3339(bench.clock())
    status: dict[str, Any] = {
        "startTime": job["metadata"]["creationTimestamp"],
        "conditions": [
            {"type": condition, "status": "True", "lastTransitionTime": now},
        ],
    }
    if condition == "Complete":
        status["completionTime"] = now
    job["status"] = status
    bench.context.update_status("Job", job, "test")


def _check(bench: Bench, expect: dict[str, Any], retry: float | None, where: str) -> None:
    cronjob = bench.context.get("CronJob", "default", "cron")
    assert cronjob is not None
    status = cronjob.get("status") or {}
    jobs = _jobs(bench)
    if "jobs" in expect:
        assert [j["metadata"]["name"] for j in jobs] == expect["jobs"], where
    if "active" in expect:
        assert [r["name"] for r in status.get("active") or []] == expect["active"], where
    if "status" in expect:
        assert subset(expect["status"], status), f"{where}: {status}"
    for field in expect.get("absent") or []:
        assert field not in status, f"{where}: {field} in {status}"
    seen = [reason for reason, _ in bench.events("cron")]
    assert "UnexpectedJob" not in seen, f"{where}: every Job was created by the CronJob"
    if "events" in expect:
        reasons = iter(seen)
        assert all(wanted in reasons for wanted in expect["events"]), (
            f"{where}: {bench.events('cron')}"
        )
    if "retry" in expect:
        if expect["retry"] is None:
            assert retry is None, where
        else:
            assert retry == pytest.approx(expect["retry"], abs=0.01), f"{where}: {retry}"
    if "job" in expect:
        assert subset_loose(expect["job"], jobs[-1]), f"{where}: {jobs[-1]}"
