"""The Job controller, scenario by scenario (``tests/scenarios/jobs.yaml``), against a real
Registry on a fake clock, with pod outcomes written by the test."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.controllers.jobrules import completion_index
from allot.controllers.jobs import FINALIZER, JobController
from tests.batch_harness import Bench, key_of, subset

SCENARIOS = yaml.safe_load((Path(__file__).parent / "scenarios" / "jobs.yaml").read_text())


def _job(scenario: dict[str, Any]) -> dict[str, Any]:
    template = scenario.get("template") or SCENARIOS["template"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "work", "namespace": "default"},
        "spec": {**scenario["job"], "template": template},
    }


@pytest.mark.parametrize("scenario", SCENARIOS["scenarios"], ids=lambda s: s["name"])
def test_job_scenario(tmp_path: Path, scenario: dict[str, Any]) -> None:
    bench = Bench(tmp_path)
    controller = JobController(bench.contexts("job-controller"))
    bench.registry.store.add_listener(controller.observe)  # as the controller manager does
    bench.registry.assemble(bench.registry.standard_plugins())  # quotas judge its pods
    for obj in scenario.get("objects") or []:
        bench.context.create(obj["kind"], obj, "test")
    job = bench.context.create("Job", _job(scenario), "test")
    key = key_of(job)
    for number, step in enumerate(scenario["steps"]):
        _act(bench, step)
        retry = bench.settle(controller, key)
        _check(bench, step.get("expect") or {}, retry, f"step {number}")
    bench.close()


def _act(bench: Bench, step: dict[str, Any]) -> None:
    if "advance" in step:
        bench.clock.advance(step["advance"])
    if "patch" in step:
        job = bench.context.get("Job", "default", "work")
        assert job is not None
        job["spec"].update(step["patch"])
        bench.context.update("Job", job, "test")
    if "run" in step:
        waiting = [p for p in bench.active("work") if p.get("status", {}).get("phase") != "Running"]
        for pod in waiting[: step["run"]]:
            bench.run_pod(pod, restarts=step.get("restarts", 0))
    for verb, code in (("succeed", 0), ("fail", 1)):
        if verb in step:
            _finish(bench, step[verb], code)


def _finish(bench: Bench, what: Any, default_code: int) -> None:
    what = what if isinstance(what, dict) else {"count": what}
    active = bench.active("work")
    if "indexes" in what:
        chosen = [p for p in active if completion_index(p) in what["indexes"]]
    else:
        chosen = active[: what["count"]]
    for pod in chosen:
        bench.finish_pod(pod, what.get("exitCode", default_code), what.get("conditions"))


def _check(bench: Bench, expect: dict[str, Any], retry: float | None, where: str) -> None:
    job = bench.context.get("Job", "default", "work")
    assert job is not None
    status = job.get("status") or {}
    active = bench.active("work")
    if "active" in expect:
        assert len(active) == expect["active"], where
    if "pods" in expect:
        assert len(bench.pods("work")) == expect["pods"], where
    if "indexes" in expect:
        assert sorted(completion_index(p) or 0 for p in active) == expect["indexes"], where
    if "status" in expect:
        assert subset(expect["status"], status), f"{where}: {status}"
    for field in expect.get("absent") or []:
        assert field not in status, f"{where}: {field} in {status}"
    if "conditions" in expect:
        got = [[c["type"], c["status"], c.get("reason")] for c in status.get("conditions") or []]
        assert got == expect["conditions"], where
    if "message" in expect:
        message = status["conditions"][-1].get("message", "")
        assert re.search(expect["message"], message), f"{where}: {message}"
    if "events" in expect:
        reasons = iter(reason for reason, _ in bench.events("work"))
        assert all(wanted in reasons for wanted in expect["events"]), (
            f"{where}: {bench.events('work')}"
        )
    if "retry" in expect:
        if expect["retry"] is None:
            assert retry is None, where
        else:
            assert retry == pytest.approx(expect["retry"], abs=0.01), f"{where}: {retry}"
    if "finalizers" in expect:
        tracked = [
            p for p in bench.pods("work") if FINALIZER in (p["metadata"].get("finalizers") or [])
        ]
        assert len(tracked) == expect["finalizers"], where
    if "index_pod" in expect:
        index, wanted = expect["index_pod"]
        pod = next(p for p in active if completion_index(p) == index)
        assert subset_loose(wanted, pod), f"{where}: {pod}"
    if "pod" in expect:
        assert subset_loose(expect["pod"], active[0]), f"{where}: {active[0]}"


def subset_loose(expected: Any, actual: Any) -> bool:
    """Like ``subset``, but a list in ``expected`` matches a prefix of the actual list."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and subset_loose(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return isinstance(actual, list) and all(
            any(subset_loose(e, a) for a in actual) for e in expected
        )
    return bool(expected == actual)
