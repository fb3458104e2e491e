"""Jobs and CronJobs with the real kubectl: an Indexed Job in a tenant runs to completion
(``kubectl wait --for=condition=complete``), a failing Job hits its backoff limit, and a
CronJob's Job appears once the platform's clock passes the next minute."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import pytest

from allot.apiserver.server import ServerThread
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import publish
from allot.platform import build
from tests.e2e.conftest import Cluster
from tests.e2e.tenancy import Tenancy

pytestmark = pytest.mark.slow
TENANT = "batch-team"


class ShiftedClock:
    """The wall clock plus an offset the test moves forward (the platform's clock)."""

    def __init__(self) -> None:
        self.offset = dt.timedelta(0)

    def __call__(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + self.offset


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Tenancy, ShiftedClock]]:
    root = tmp_path_factory.mktemp("batch")
    data = root / "data"
    clock = ShiftedClock()
    with ServerThread(data, api=build(data, clock=clock).server) as server:
        publish(server.endpoint.kubeconfigs["host"], parse_fleet(SEED_000_FLEET))
        tenancy = Tenancy(Cluster(server, root / "home"), data)
        tenancy.create_tenant(TENANT)
        yield tenancy, clock


def _job(name: str, spec: dict[str, Any], annotations: dict[str, str] | None = None) -> str:
    template: dict[str, Any] = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
        }
    }
    if annotations:
        template["metadata"] = {"annotations": annotations}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {**spec, "template": template},
    }
    return json.dumps(job)


def test_an_indexed_job_completes_in_a_tenant(platform: tuple[Tenancy, ShiftedClock]) -> None:
    tenancy, _ = platform
    spec = {"completions": 3, "parallelism": 3, "completionMode": "Indexed"}
    tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=_job("indexed", spec))
    waited = tenancy.as_tenant(
        TENANT, "wait", "--for=condition=complete", "job/indexed", "--timeout=90s"
    )
    assert waited.stdout.strip() == "job.batch/indexed condition met"
    job = tenancy.tenant_json(TENANT, "job", "indexed")
    assert job["status"]["completedIndexes"] == "0-2"
    assert job["status"]["succeeded"] == 3
    types = [c["type"] for c in job["status"]["conditions"]]
    assert types == ["SuccessCriteriaMet", "Complete"]
    pods = tenancy.tenant_json(TENANT, "pods", "-l", "batch.kubernetes.io/job-name=indexed")
    indexes = sorted(
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
        for p in pods["items"]
    )
    assert indexes == ["0", "1", "2"]
    assert {p["status"]["phase"] for p in pods["items"]} == {"Succeeded"}
    assert {p["spec"]["hostname"] for p in pods["items"]} == {
        "indexed-0",
        "indexed-1",
        "indexed-2",
    }
    events = tenancy.tenant_events(TENANT, "indexed")
    assert "Completed: Job completed" in events


def test_a_failing_job_hits_its_backoff_limit(platform: tuple[Tenancy, ShiftedClock]) -> None:
    tenancy, _ = platform
    failing = _job(
        "failing", {"backoffLimit": 1}, annotations={"allot.dev/simulated-exit-code": "1"}
    )
    tenancy.cluster.kubectl("apply", "-f", "-", stdin=failing)
    tenancy.cluster.kubectl(
        "wait", "--for=condition=failed", "job/failing", "--timeout=90s", timeout=120
    )
    job = tenancy.host_json("job", "failing")
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"] == "Job has reached the specified backoff limit"
    assert job["status"]["failed"] == 2
    pods = tenancy.host_json("pods", "-l", "batch.kubernetes.io/job-name=failing")["items"]
    assert [p["status"]["phase"] for p in pods] == ["Failed", "Failed"]  # failed pods are kept
    exit_codes = {
        p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] for p in pods
    }
    assert exit_codes == {1}


def test_a_cronjob_starts_a_job_when_its_minute_comes(
    platform: tuple[Tenancy, ShiftedClock],
) -> None:
    tenancy, clock = platform
    job_spec = json.loads(_job("unused", {"completions": 1}))["spec"]
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "every-minute"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": job_spec}},
    }
    tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=json.dumps(cronjob))
    listed = tenancy.as_tenant(TENANT, "get", "cronjobs")
    assert "every-minute" in listed.stdout
    clock.offset += dt.timedelta(seconds=61)
    tenancy.as_tenant(TENANT, "annotate", "cronjob/every-minute", "touched=1")

    def started() -> list[Any]:
        jobs = tenancy.tenant_json(TENANT, "jobs")["items"]
        return [j for j in jobs if j["metadata"]["name"].startswith("every-minute-")]

    jobs = tenancy.wait(started, "the CronJob's Job")
    annotations = jobs[0]["metadata"]["annotations"]
    assert "batch.kubernetes.io/cronjob-scheduled-timestamp" in annotations
    minutes = int(jobs[0]["metadata"]["name"].rsplit("-", 1)[1])
    scheduled = dt.datetime.fromisoformat(
        annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"].replace("Z", "+00:00")
    )
    assert minutes == int(scheduled.timestamp()) // 60
    name = jobs[0]["metadata"]["name"]
    tenancy.as_tenant(TENANT, "wait", "--for=condition=complete", f"job/{name}", "--timeout=60s")
    status = tenancy.tenant_json(TENANT, "cronjob", "every-minute")["status"]
    # a Job's scheduled time, the first one's or later: when the wall clock crosses a
    # minute during the test, the CronJob has rightly started the next minute's Job
    scheduled_times = {
        j["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        for j in started()  # listed after the status: its Job is among them
    }
    assert status["lastScheduleTime"] in scheduled_times
    assert (
        status["lastScheduleTime"] >= annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    )


def test_job_pods_of_a_deleted_job_go_with_it(platform: tuple[Tenancy, ShiftedClock]) -> None:
    tenancy, _ = platform
    tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=_job("short", {"completions": 1}))
    tenancy.as_tenant(TENANT, "wait", "--for=condition=complete", "job/short", "--timeout=60s")
    tenancy.as_tenant(TENANT, "delete", "job", "short", "--wait=true", "--timeout=30s")

    def gone() -> bool:
        selector = "batch.kubernetes.io/job-name=short"
        pods = tenancy.tenant_json(TENANT, "pods", "-l", selector)
        twins = tenancy.host_json("pods", "-A", "-l", selector)
        return not pods["items"] and not twins["items"]

    tenancy.wait(gone, "the deleted Job's pods to go")


def test_a_finished_job_with_a_ttl_is_deleted(platform: tuple[Tenancy, ShiftedClock]) -> None:
    tenancy, _ = platform
    spec = {"completions": 1, "ttlSecondsAfterFinished": 0}
    tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=_job("ephemeral", spec))

    def gone() -> bool:
        found = tenancy.as_tenant(TENANT, "get", "job", "ephemeral", check=False)
        return "NotFound" in found.stderr

    tenancy.wait(gone, "the finished Job to be deleted by its TTL", timeout=60)
