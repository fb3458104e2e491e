"""What the Job and CronJob scenario tests share: a real Registry on a fake clock, the
controllers called directly, and pod or Job outcomes written by the test (as the node
agent or the Job controller would write them)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from allot.api.pods import is_pod_active
from allot.controllers.context import ControllerContext
from allot.controllers.runtime import RetryLater
from allot.controllers.workloads import ClusterContexts, WorkloadKey
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.types import Obj, rfc3339

START = dt.datetime(2026, 1, 1, 10, 0, 0, tzinfo=dt.UTC)


class FakeClock:
    def __init__(self, now: dt.datetime = START) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)


class Bench:
    """A registry, a clock and a context on the host cluster."""

    def __init__(self, tmp_path: Path, start: dt.datetime = START) -> None:
        self.clock = FakeClock(start)
        self.registry = Registry(tmp_path, clock=self.clock)
        self.context = ControllerContext(
            HOST_CLUSTER, self.registry.store, self.registry.handlers, self.clock
        )

    def contexts(self, controller: str) -> ClusterContexts:
        return ClusterContexts(self.context, controller)

    def close(self) -> None:
        self.registry.close()

    def settle(self, controller: Any, key: WorkloadKey, rounds: int = 6) -> float | None:
        """Reconcile until the object stops changing; the last RetryLater's seconds."""
        retry: float | None = None
        before: Any = None
        for _ in range(rounds):
            retry = None
            try:
                controller.reconcile(key)
            except RetryLater as later:
                retry = later.seconds
            state = self.snapshot()
            if state == before:
                break
            before = state
        return retry

    def snapshot(self) -> Any:
        return [
            (kind, o["metadata"]["name"], o["metadata"].get("resourceVersion"))
            for kind in ("Job", "CronJob", "Pod")
            for o in self.context.list(kind)
        ]

    def pods(self, job: str) -> list[Obj]:
        """The Job's pods, oldest first (then by name)."""
        pods = [
            p
            for p in self.context.list("Pod")
            if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == job
        ]
        return sorted(
            pods, key=lambda p: (p["metadata"].get("creationTimestamp"), p["metadata"]["name"])
        )

    def active(self, job: str) -> list[Obj]:
        return [p for p in self.pods(job) if is_pod_active(p)]

    def run_pod(self, pod: Obj, ready: bool = True, restarts: int = 0) -> None:
        """Mark a pod Running (and Ready), as the node agent does."""
        now = rfc3339(self.clock())
        pod["status"] = {
            "phase": "Running",
            "startTime": now,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": ready,
                    "restartCount": restarts,
                    "state": {"running": {"startedAt": now}},
                }
                for c in pod["spec"]["containers"]
            ],
        }
        self.context.update_status("Pod", pod, "test")

    def finish_pod(self, pod: Obj, exit_code: int, conditions: list[Obj] | None = None) -> None:
        """End a pod's containers with ``exit_code`` (Succeeded when 0, else Failed)."""
        now = rfc3339(self.clock())
        pod["status"] = {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": now},
                *(conditions or []),
            ],
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": exit_code,
                            "reason": "Completed" if exit_code == 0 else "Error",
                            "startedAt": now,
                            "finishedAt": now,
                        }
                    },
                }
                for c in pod["spec"]["containers"]
            ],
        }
        self.context.update_status("Pod", pod, "test")

    def events(self, name: str) -> list[tuple[str, str]]:
        """(reason, message) of the Events about the object named ``name``, in order."""
        found = [
            e
            for e in self.context.list("Event")
            if (e.get("involvedObject") or {}).get("name") == name
        ]
        found.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
        return [(e["reason"], e["message"]) for e in found]


def subset(expected: Any, actual: Any) -> bool:
    """Whether ``expected`` is contained in ``actual`` (maps by key, lists item by item)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and subset(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def key_of(obj: Obj) -> WorkloadKey:
    metadata = obj["metadata"]
    return WorkloadKey(HOST_CLUSTER, metadata.get("namespace") or "", metadata["name"])
