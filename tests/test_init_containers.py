"""Init containers and native sidecars on the node agent, scenario by scenario
(``tests/scenarios/init-containers.yaml``): the simulated runtime runs them on a fake
clock whose timers (back-off restarts, a Job pod's exit) fire as the test advances it;
the pod's status, conditions, kubectl's row and the kubelet's events are checked after
each step. Then the process runtime runs real processes through the same agent."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.controllers.nodeagent import DevicePreparer, NodeAgent
from allot.controllers.runtimes import ProcessRuntime, SimulatedRuntime
from allot.registry.kinds import table_for
from allot.store import WatchEvent
from allot.tenancy import translate
from allot.types import Obj
from tests.batch_harness import Bench

SCENARIOS = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "init-containers.yaml").read_text()
)
_TABLE = table_for("pods")
assert _TABLE is not None
ROW = _TABLE


class FakeTimer:
    """``call_later`` on the bench's fake clock: callbacks run as the clock is advanced
    past their time, in time order."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self._due: list[tuple[float, int, Callable[..., object], tuple[object, ...]]] = []
        self._order = itertools.count()
        self._elapsed = 0.0

    def __call__(self, seconds: float, callback: Callable[..., object], *args: object) -> None:
        heapq.heappush(self._due, (self._elapsed + seconds, next(self._order), callback, args))

    def advance(self, seconds: float) -> None:
        target = self._elapsed + seconds
        while self._due and self._due[0][0] <= target:
            when, _, callback, args = heapq.heappop(self._due)
            self.bench.clock.advance(when - self._elapsed)
            self._elapsed = when
            callback(*args)
        self.bench.clock.advance(target - self._elapsed)
        self._elapsed = target


def _status_history(bench: Bench) -> list[str]:
    """kubectl's STATUS column of the pods, each time it changes, as status writes go."""
    history: list[str] = []

    def record(event: WatchEvent) -> None:
        if event.resource == "pods" and event.type == "MODIFIED":
            status = ROW.cells(event.object, bench.clock())[2]
            if not history or history[-1] != status:
                history.append(status)

    bench.registry.store.add_listener(record)
    return history


def _merge(base: Obj, extra: Obj) -> Obj:
    merged = dict(base)
    for key, value in extra.items():
        both = isinstance(value, dict) and isinstance(base.get(key), dict)
        merged[key] = _merge(base[key], value) if both else value
    return merged


def _summary(entry: Obj) -> str:
    """A container's status in a line: state, reason, exit code, flags, restarts."""
    (state, detail), = (entry.get("state") or {}).items()  # fmt: skip
    words = [state]
    if detail.get("reason"):
        words.append(detail["reason"])
    if "exitCode" in detail:
        words.append(str(detail["exitCode"]))
    words += [flag for flag in ("ready", "started") if entry.get(flag)]
    if entry.get("restartCount"):
        words.append(f"restarts={entry['restartCount']}")
    return " ".join(words)


def _entries(pod: Obj) -> dict[str, Obj]:
    status = pod.get("status") or {}
    entries = [*(status.get("initContainerStatuses") or [])]
    return {e["name"]: e for e in [*entries, *(status.get("containerStatuses") or [])]}


@pytest.mark.parametrize("scenario", SCENARIOS["scenarios"], ids=lambda s: s["name"])
def test_init_container_scenario(tmp_path: Path, scenario: dict[str, Any]) -> None:
    bench = Bench(tmp_path)
    timer = FakeTimer(bench)
    agent = NodeAgent(
        bench.context, DevicePreparer(tmp_path / "cdi"), SimulatedRuntime(timer=timer)
    )
    history = _status_history(bench)
    bench.registry.handlers.graceful_pods_in = lambda cluster: True  # as with a kubelet
    bench.context.create("Namespace", {"metadata": {"name": "team"}}, "test")
    pod = _merge(SCENARIOS["base"], scenario["pod"])
    created = bench.context.create("Pod", {"apiVersion": "v1", "kind": "Pod", **pod}, "test")
    agent.reconcile(("pod", "team", "p"))
    for number, step in enumerate(scenario["steps"]):
        timer.advance(step.get("advance", 0))
        if step.get("delete"):
            bench.context.delete("Pod", "team", "p")
            agent.reconcile(("stop", "team", "p"))
            timer.advance(0)
        _check(bench, created, history, step.get("expect") or {}, f"step {number}")
    bench.close()


def _check(bench: Bench, created: Obj, history: list[str], expect: Obj, where: str) -> None:
    pod = bench.context.get("Pod", "team", "p") or {}
    uid = created["metadata"]["uid"]
    status = pod.get("status") or {}
    if "phase" in expect:
        assert status.get("phase") == expect["phase"], where
    if "row" in expect:
        assert ROW.cells(pod, bench.clock())[1:4] == expect["row"], where
    if "history" in expect:
        assert history == expect["history"], where
    entries = _entries(pod)
    for name, summary in (expect.get("statuses") or {}).items():
        assert _summary(entries[name]) == summary, f"{where}: {name}"
    for name, message in (expect.get("message") or {}).items():
        waiting = entries[name]["state"]["waiting"]
        assert waiting["message"] == message.replace("<uid>", uid), where
    for name, (code, reason) in (expect.get("last") or {}).items():
        last = entries[name]["lastState"]["terminated"]
        assert (last["exitCode"], last["reason"]) == (code, reason), where
    conditions = {c["type"]: c for c in status.get("conditions") or []}
    for kind, (value, reason, message) in (expect.get("conditions") or {}).items():
        found = conditions[kind]
        seen = (found["status"], found.get("reason", ""), found.get("message", ""))
        assert seen == (value, reason, message), f"{where}: {kind}"
    for field in expect.get("absent") or []:
        assert field not in status, where
    events = sorted(bench.context.list("Event", "team"), key=lambda e: e["metadata"]["name"])
    for reason, message in expect.get("no_events") or []:
        assert (reason, message) not in [(e["reason"], e["message"]) for e in events], where
    if "events" in expect:
        seen_events = iter(
            [(e["reason"], e["message"], e["involvedObject"].get("fieldPath")) for e in events]
        )
        for reason, message, field_path in expect["events"]:
            wanted = (reason, message.replace("<uid>", uid), field_path)
            assert any(pair == wanted for pair in seen_events), f"{where}: {wanted}"


def test_a_tenant_sees_its_pod_s_init_container_statuses() -> None:
    """The tenant sync copies the twin's init container statuses and conditions, with
    the kubelet's pod name in a waiting message made the tenant's."""
    twin = {"metadata": {"name": "p.default", "namespace": "tenant-a", "uid": "host-1"}}
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": "tenant-1"}}
    message = "back-off 1s restarting failed container=init pod=p.default_tenant-a(host-1)"
    waiting = {"reason": "CrashLoopBackOff", "message": message}
    status = {
        "phase": "Pending",
        "conditions": [{"type": "Initialized", "status": "False", "reason": "NotInitialized"}],
        "initContainerStatuses": [{"name": "init", "state": {"waiting": waiting}}],
    }
    mapped = translate.pod_status_to_tenant(
        status, lambda name: name, lambda text: translate.kubelet_pod_to_tenant(text, twin, pod)
    )
    assert mapped["conditions"] == status["conditions"]
    waiting = mapped["initContainerStatuses"][0]["state"]["waiting"]
    assert (
        waiting["message"] == "back-off 1s restarting failed container=init pod=p_default(tenant-1)"
    )


def _process_pod(out: Path, init: list[Obj], main: str) -> Obj:
    env = [{"name": "OUT", "value": str(out)}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team"},
        "spec": {
            "nodeName": "node-a",
            "restartPolicy": "Never",
            "initContainers": [{"image": "busybox:1", "env": env, **c} for c in init],
            "containers": [
                {"name": "main", "image": "busybox:1", "env": env, "command": ["sh", "-c", main]}
            ],
        },
    }


async def _run_process_pod(tmp_path: Path, pod: Obj) -> tuple[Obj, list[str]]:
    """Run ``pod`` on the process runtime (unsandboxed) until it finishes; its final
    state and the STATUS column after each status write."""
    bench = Bench(tmp_path)
    history = _status_history(bench)
    runtime = ProcessRuntime(tmp_path / "logs", tmp_path / "pods")
    agent = NodeAgent(bench.context, DevicePreparer(tmp_path / "cdi"), runtime)
    bench.context.create("Namespace", {"metadata": {"name": "team"}}, "test")
    bench.context.create("Pod", pod, "test")
    agent.reconcile(("pod", "team", "p"))
    for _ in range(200):
        found = bench.context.get("Pod", "team", "p") or {}
        if (found.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            break
        await asyncio.sleep(0.05)
    await runtime.stop_all()
    bench.close()
    return found, history


def test_the_process_runtime_runs_init_containers_then_stops_the_sidecar_last(
    tmp_path: Path,
) -> None:
    out = tmp_path / "order"
    sidecar = (
        'echo side >> "$OUT"; trap \'echo side-stopped >> "$OUT"; exit 0\' TERM; '
        "while true; do sleep 0.05; done"
    )
    init = [
        {"name": "one", "command": ["sh", "-c", 'sleep 0.3; echo one >> "$OUT"; echo hello']},
        {"name": "side", "restartPolicy": "Always", "command": ["sh", "-c", sidecar]},
        {"name": "two", "command": ["sh", "-c", 'echo two >> "$OUT"']},
    ]
    main = 'echo main >> "$OUT"; sleep 0.3; echo main-done >> "$OUT"'
    pod, history = asyncio.run(_run_process_pod(tmp_path, _process_pod(out, init, main)))
    order = out.read_text().split()
    # "two" starts once the sidecar has started, so their first lines race (as upstream)
    assert order[0] == "one"
    assert sorted(order[1:3]) == ["side", "two"]
    assert order[3:] == ["main", "main-done", "side-stopped"]
    assert pod["status"]["phase"] == "Succeeded"
    statuses = ["Init:0/3", "Init:1/3", "Init:2/3", "PodInitializing", "Running", "Completed"]
    # each status write is seen; a fast step may fall between two of them
    assert history[0] == "Init:0/3"
    assert history[-2:] == ["Running", "Completed"]
    assert [s for s in statuses if s in history] == history
    entries = _entries(pod)
    assert _summary(entries["one"]) == "terminated Completed 0 ready"
    assert _summary(entries["side"]) == "terminated Completed 0"
    assert _summary(entries["main"]) == "terminated Completed 0"
    assert (tmp_path / "logs" / "team" / "p" / "one.log").read_text() == "hello\n"


def test_the_process_runtime_fails_the_pod_when_an_init_container_fails_under_never(
    tmp_path: Path,
) -> None:
    out = tmp_path / "order"
    init = [{"name": "check", "command": ["sh", "-c", "echo no database; exit 4"]}]
    main = 'echo main >> "$OUT"'
    pod, history = asyncio.run(_run_process_pod(tmp_path, _process_pod(out, init, main)))
    assert not out.exists()  # the app container never ran
    assert pod["status"]["phase"] == "Failed"
    assert history == ["Init:0/1", "Init:Error"]
    entries = _entries(pod)
    assert _summary(entries["check"]) == "terminated Error 4"
    assert _summary(entries["main"]) == "waiting PodInitializing"


def test_the_process_runtime_restarts_a_sidecar_that_exits(tmp_path: Path) -> None:
    """A sidecar that exits is started again (with back-off) while the app container
    runs; the pod's phase comes from the app container alone."""
    out = tmp_path / "order"
    init = [
        {
            "name": "side",
            "restartPolicy": "Always",
            "command": ["sh", "-c", 'echo up >> "$OUT"; exit 1'],
        }
    ]
    main = 'until [ "$(grep -c up "$OUT")" -ge 2 ]; do sleep 0.05; done'
    pod, _ = asyncio.run(_run_process_pod(tmp_path, _process_pod(out, init, main)))
    assert pod["status"]["phase"] == "Succeeded"
    side = _entries(pod)["side"]
    assert side["restartCount"] >= 1
    assert side["lastState"]["terminated"]["exitCode"] == 1
    assert _summary(_entries(pod)["main"]) == "terminated Completed 0"
