"""Properties of the Job controller under random pod outcomes (hypothesis, derandomized):
never more active pods than parallelism or than completions still missing, counters equal
to the finished pods, Indexed pods on distinct valid indexes, one terminal condition."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from allot.controllers.jobrules import completion_index, parse_indexes
from allot.controllers.jobs import JobController
from tests.batch_harness import Bench, key_of

TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
STEPS = st.lists(
    st.tuples(st.sampled_from(["succeed", "fail", "wait"]), st.integers(1, 3)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60)
@given(
    completions=st.integers(1, 5),
    parallelism=st.integers(1, 3),
    indexed=st.booleans(),
    backoff_limit=st.integers(0, 4),
    steps=STEPS,
)
def test_job_invariants(
    completions: int,
    parallelism: int,
    indexed: bool,
    backoff_limit: int,
    steps: list[tuple[str, int]],
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        bench = Bench(Path(directory))
        controller = JobController(bench.contexts("job-controller"))
        bench.registry.store.add_listener(controller.observe)
        spec = {
            "completions": completions,
            "parallelism": parallelism,
            "backoffLimit": backoff_limit,
            "template": TEMPLATE,
        }
        if indexed:
            spec["completionMode"] = "Indexed"
        job = bench.context.create(
            "Job",
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "work", "namespace": "default"},
                "spec": spec,
            },
            "test",
        )
        key = key_of(job)
        bench.settle(controller, key)
        for verb, count in steps:
            if verb == "wait":
                bench.clock.advance(count * 60)  # past any back-off
            else:
                for pod in bench.active("work")[:count]:
                    bench.finish_pod(pod, 0 if verb == "succeed" else 1)
            bench.settle(controller, key)
            _check(bench, completions, parallelism, indexed, backoff_limit)
        bench.close()


def _check(bench: Bench, completions: int, parallelism: int, indexed: bool, limit: int) -> None:
    job = bench.context.get("Job", "default", "work")
    assert job is not None
    status = job["status"]
    pods = bench.pods("work")
    active = bench.active("work")
    succeeded = [p for p in pods if p["status"].get("phase") == "Succeeded"]
    failed = [p for p in pods if p["status"].get("phase") == "Failed"]
    conditions = {c["type"] for c in status.get("conditions") or [] if c["status"] == "True"}
    assert len(active) <= parallelism
    if "FailureTarget" in conditions:  # its deleted active pods count as failed too
        assert status.get("failed", 0) >= len(failed)
    else:
        assert status.get("failed", 0) == len(failed)
    assert not {"Complete", "Failed"} <= conditions
    if indexed:
        done = parse_indexes(status.get("completedIndexes"), completions)
        assert done == {completion_index(p) for p in succeeded}
        assert status.get("succeeded", 0) == len(done)
        running = [completion_index(p) for p in active]
        assert len(set(running)) == len(running)
        assert all(i is not None and i < completions and i not in done for i in running)
    else:
        assert status.get("succeeded", 0) == len(succeeded)
    assert len(active) <= completions - status.get("succeeded", 0)
    if "Complete" in conditions:
        assert status["succeeded"] == completions
        assert not active
    if "Failed" in conditions:
        assert status["failed"] > limit
        assert not active
    assert all(not p["metadata"].get("finalizers") for p in succeeded + failed)
