"""A synchronous driver for the apps controllers: a real Registry, a fake clock, and every
store event mapped to keys and reconciled until nothing is left to do (what the
ControllerManager does in the server's loop). The scenarios step pods' status themselves
(Running and Ready) as a kubelet would. Used by tests/test_controller_apps.py and
tests/test_controller_daemonset.py."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from allot.api.pods import is_pod_ready
from allot.controllers.context import ControllerContext
from allot.controllers.daemonset import DaemonSetController
from allot.controllers.deployment import DeploymentController
from allot.controllers.replicaset import REPLICATION_CONTROLLER, ReplicaSetController
from allot.controllers.runtime import Controller, RetryLater
from allot.controllers.statefulset import StatefulSetController
from allot.controllers.workloads import ClusterContexts
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.store import WatchEvent
from allot.store.errors import Conflict
from allot.types import Obj, rfc3339

NAMESPACE = "team"
MAX_ROUNDS = 200


class AppsDriver:
    def __init__(self, tmp_path: Path, cluster: str = HOST_CLUSTER, graceful: bool = False) -> None:
        self.now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        self.registry = Registry(tmp_path, clock=self.clock)
        if graceful:  # pods on a node are deleted gracefully, as with a node agent
            self.registry.handlers.graceful_pods_in = lambda name: name == cluster
        store, handlers = self.registry.store, self.registry.handlers
        host = ControllerContext(HOST_CLUSTER, store, handlers, self.clock)
        tenant = (lambda name: name == cluster) if cluster != HOST_CLUSTER else None

        def contexts(name: str) -> ClusterContexts:
            return ClusterContexts(host, name, tenant)

        self.controllers: list[Controller] = [
            DeploymentController(contexts("deployment-controller")),
            ReplicaSetController(contexts("replicaset-controller")),
            StatefulSetController(contexts("statefulset-controller")),
            DaemonSetController(contexts("daemon-set-controller")),
            ReplicaSetController(contexts("replication-controller"), REPLICATION_CONTROLLER),
        ]
        self.context = ControllerContext(cluster, store, handlers, self.clock)
        self._events: list[WatchEvent] = []
        store.add_listener(self._events.append)
        self.context.create("Namespace", {"metadata": {"name": NAMESPACE}}, "test")

    def clock(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)

    def close(self) -> None:
        self.registry.close()

    def settle(self, strict: bool = False) -> None:
        """Reconcile every workload, then whatever the writes concern, until quiet;
        ``strict`` lets a reconcile's RetryLater through."""
        queue: list[tuple[Controller, Hashable]] = [
            (c, key) for c in self.controllers for key in c.initial_keys()
        ]
        self._events.clear()
        for _ in range(MAX_ROUNDS):
            seen: set[tuple[str, Hashable]] = set()
            for controller, key in queue:
                if (controller.name, key) in seen:
                    continue
                seen.add((controller.name, key))
                with contextlib.suppress(*((Conflict,) if strict else (RetryLater, Conflict))):
                    controller.reconcile(key)
            events = list(self._events)
            self._events.clear()
            queue = [
                (c, k) for event in events for c in self.controllers for k in c.keys_for(event)
            ]
            if not queue:
                return
        raise AssertionError("the controllers never settled")

    # ------------------------------------------------------------- kubelet
    def pods(self) -> list[Obj]:
        return self.context.list("Pod", NAMESPACE)

    def make_ready(self, count: int | str, names: list[str] | None = None) -> None:
        """Make pods Running and Ready, in name order (``all`` or a count)."""
        waiting = [
            p
            for p in self.pods()
            if not is_pod_ready(p)
            and not p["metadata"].get("deletionTimestamp")
            and (names is None or p["metadata"]["name"] in names)
        ]
        chosen = waiting if count == "all" else waiting[: int(count)]
        for pod in chosen:
            self.set_phase(pod, "Running", ready=True)

    def set_phase(self, pod: Obj, phase: str, ready: bool) -> None:
        latest = self.context.get("Pod", NAMESPACE, pod["metadata"]["name"])
        assert latest is not None
        if not (latest.get("spec") or {}).get("nodeName"):
            self.context.bind(NAMESPACE, latest["metadata"]["name"], "node-1")
            latest = self.context.get("Pod", NAMESPACE, pod["metadata"]["name"])
            assert latest is not None
        stamp = rfc3339(self.now)
        latest["status"] = {
            "phase": phase,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": stamp,
                }
            ],
        }
        self.context.update_status("Pod", latest, "kubelet")

    def finish_terminating(self) -> None:
        """Remove the pods being deleted gracefully (their containers have stopped)."""
        for pod in self.pods():
            if pod["metadata"].get("deletionTimestamp"):
                self.context.delete(
                    "Pod", NAMESPACE, pod["metadata"]["name"], {"gracePeriodSeconds": 0}
                )

    def event_messages(self, name: str) -> list[str]:
        return [
            e["message"]
            for e in self.context.list("Event", NAMESPACE)
            if (e.get("involvedObject") or {}).get("name") == name
        ]


def image_of(template_or_pod: Obj) -> str:
    spec = template_or_pod.get("spec") or {}
    image: str = (spec.get("containers") or [{}])[0].get("image", "")
    return image


def pods_by_image(pods: list[Obj]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for pod in pods:
        if not pod["metadata"].get("deletionTimestamp"):
            counts[image_of(pod)] = counts.get(image_of(pod), 0) + 1
    return counts


def subset(actual: Obj, expected: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``actual`` named in ``expected`` (zeros for missing counts)."""
    return {k: actual.get(k, 0 if isinstance(v, int) else None) for k, v in expected.items()}
