"""How the controller manager shares the event loop: a controller's turn reconciles its
queued keys until the queue is empty or its time budget is spent, then lets other tasks
(requests, other controllers) run; a conflict ends the turn. The tenancy benchmark's
latency under load depends on it (issue 15)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable

from allot.controllers.runtime import ControllerManager
from allot.store import WatchEvent
from allot.store.errors import Conflict


class _Recorder:
    """A controller that notes, in one shared log, which keys it reconciled and when."""

    name = "recorder"

    def __init__(self, log: list[str], keys: int, seconds: float = 0.0) -> None:
        self.log, self.keys, self.seconds = log, keys, seconds
        self.conflicts: set[Hashable] = set()

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        return []

    def initial_keys(self) -> list[Hashable]:
        return list(range(self.keys))

    def reconcile(self, key: Hashable) -> None:
        if key in self.conflicts:
            self.conflicts.discard(key)
            self.log.append(f"conflict {key}")
            raise Conflict("written meanwhile")
        if self.seconds:
            time.sleep(self.seconds)
        self.log.append(f"key {key}")


async def _run_with_ticker(manager: ControllerManager, log: list[str], ticks: int) -> None:
    """Start the manager beside a task that logs a tick at each of its loop turns."""

    async def ticker() -> None:
        for index in range(ticks):
            log.append(f"tick {index}")
            await asyncio.sleep(0)

    manager.start()
    await asyncio.gather(ticker(), manager.idle(timeout=5.0))
    await manager.stop()


def test_a_turn_drains_the_queue_before_other_tasks_run() -> None:
    log: list[str] = []
    manager = ControllerManager([_Recorder(log, keys=50)])
    asyncio.run(_run_with_ticker(manager, log, ticks=3))
    keys = [index for index, entry in enumerate(log) if entry.startswith("key")]
    assert len(keys) == 50
    # all 50 keys in one turn: no tick between the first and the last key
    assert not any(entry.startswith("tick") for entry in log[keys[0] : keys[-1]])


def test_a_turn_ends_when_its_time_budget_is_spent() -> None:
    log: list[str] = []
    manager = ControllerManager([_Recorder(log, keys=6, seconds=0.01)], turn_seconds=0.015)
    asyncio.run(_run_with_ticker(manager, log, ticks=20))
    assert [entry for entry in log if entry.startswith("key")] == [f"key {i}" for i in range(6)]
    runs, current = [], 0
    for entry in log:
        if entry.startswith("key"):
            current += 1
        elif current:
            runs.append(current)
            current = 0
    # 10 ms per key against a 15 ms budget: two keys per turn, other tasks between turns
    assert runs == [2, 2, 2]


def test_a_conflict_ends_the_turn_and_the_key_is_retried() -> None:
    log: list[str] = []
    recorder = _Recorder(log, keys=4)
    recorder.conflicts.add(1)
    manager = ControllerManager([recorder])
    asyncio.run(_run_with_ticker(manager, log, ticks=5))
    position = log.index("conflict 1")
    assert log[:position] == ["key 0"]  # the manager started first
    assert log[position + 1].startswith("tick")  # others ran before the key was read again
    assert sorted(e for e in log if e.startswith("key")) == [f"key {i}" for i in range(4)]
