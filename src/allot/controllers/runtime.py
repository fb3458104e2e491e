"""Running controllers inside the API server's event loop, driven by watched changes.

Each controller maps watch events to work keys (offered only the events of the resources
it declares it watches) and reconciles one key at a time; keys are
de-duplicated while queued, failures are retried with a growing delay, and a controller may
park keys until something relevant changes (the scheduler's unschedulable pods).

The events come from a :class:`~allot.client.dispatch.Dispatcher` (:meth:`ControllerManager
.subscribe`) after the write committed, never from inside it: each controller is a
subscriber of its own (its ``observe`` in the observers' stage, its ``keys_for`` in the
controllers' stage), so one that raises is logged and retried alone while the others go
on, and a controller that keeps failing on an event is resynced from its initial keys.
Before each turn a worker has the dispatcher hand over what is committed, so what a
controller remembers from events (``observe``) has caught up before it reconciles.

A controller's turn of the loop reconciles its queued keys one after the other until the
queue is empty or ``TURN_SECONDS`` have passed, then yields. With one key per turn, 50
clients' creates took nearly every turn: the queues grew while clients wrote, every twin,
allocation and status came after the last create, and p99 create-to-visible under load
was the length of the whole burst (17-19 s in ``bench.tenancy``). Draining the queue
finishes work already accepted before much more is taken (p99 2.2 s), bounds how long a
request waits behind one controller, and lets a turn's writes share one commit. Running
in the server's own loop means no locking: a reconcile reads and writes the store between
two requests. Controllers write through the registry's handlers, so every change passes
validation exactly like a client's. Built and started with the server by
:mod:`allot.platform`.

A failed reconcile is logged as one line, as upstream's workqueue controllers log a sync
error (``utilruntime.HandleError``), when the failure is expected: the API refused a write
(quota, a policy, validation: the errors :mod:`allot.statuses` maps) or the controller
raised :class:`ReconcileError` after reporting it; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from allot.client import errors as clienterrors
from allot.client.dispatch import CONTROLLERS, OBSERVERS, Dispatcher, Subscription
from allot.client.protocol import WatchEvent
from allot.statuses import InvalidObjectError, RequestError
from allot.store.errors import Conflict, StoreError

LOG = logging.getLogger("allot.controllers")
MAX_BACKOFF_SECONDS = 30.0
TURN_SECONDS = 0.1
"""How long one controller may keep the loop before it lets requests and other
controllers run (it goes on at its next turn)."""


class RetryLater(Exception):
    """Raised by ``reconcile``: the key is not ready yet; look again after ``seconds``
    (no back-off, no log line)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds


class ReconcileError(Exception):
    """Raised by ``reconcile``: an expected failure, already reported where users look (an
    Event), worded as upstream's sync error; retried with back-off and logged as one line
    without a traceback."""


EXPECTED_FAILURES = (
    ReconcileError,
    RequestError,
    InvalidObjectError,
    StoreError,
    clienterrors.ClientError,
)
"""Failures logged without a traceback: the API's refusals and :class:`ReconcileError`."""
CONFLICTS = (Conflict, clienterrors.Conflict)
"""Someone wrote first: the store's (through ControllerContext) or the protocol's."""


class Controller(Protocol):
    """A controller may also say which store resources its ``keys_for`` answers for, as
    ``watches: frozenset[str]`` (store keys: ``pods``, ``replicasets.apps``): the manager
    then offers it only those resources' events. Without it, every event is offered."""

    name: str

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        """The work keys an event concerns (empty when it does not matter); no other effect."""

    def initial_keys(self) -> list[Hashable]:
        """Keys to reconcile at start (the state already stored)."""

    def reconcile(self, key: Hashable) -> None:
        """Bring ``key`` to its desired state; raise to be retried later."""


@dataclass
class _Worker:
    controller: Controller
    queue: asyncio.Queue[Hashable] = field(default_factory=asyncio.Queue)
    pending: set[Hashable] = field(default_factory=set)
    failures: dict[Hashable, int] = field(default_factory=dict)

    def add(self, key: Hashable) -> None:
        if key not in self.pending:
            self.pending.add(key)
            self.queue.put_nowait(key)


class Observer(Protocol):
    def observe(self, event: WatchEvent) -> None:
        """Keep what the controller derives from events current (caches, what a deleted
        object held), before any controller maps the event to keys."""


@runtime_checkable
class ObservingController(Controller, Observer, Protocol):
    """A controller that also keeps state from events (:meth:`Observer.observe`)."""


class ControllerManager:
    def __init__(
        self,
        controllers: list[Controller],
        observe: Callable[[str, float], None] | None = None,
        turn_seconds: float = TURN_SECONDS,
    ) -> None:
        self.turn_seconds = turn_seconds
        self.workers = [_Worker(c) for c in controllers]
        self.dispatcher: Dispatcher | None = None
        self._subscriptions: list[Subscription] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.observe = observe or (lambda controller, seconds: None)

    def subscribe(self, dispatcher: Dispatcher) -> None:
        """Receive events from ``dispatcher``: each observer, then each controller's key
        mapping, as a subscriber of its own."""
        self.dispatcher = dispatcher
        for worker in self.workers:
            controller = worker.controller
            if isinstance(controller, ObservingController):
                self._subscriptions.append(
                    dispatcher.subscribe(
                        f"{controller.name}.observe", controller.observe, stage=OBSERVERS
                    )
                )
            self._subscriptions.append(
                dispatcher.subscribe(
                    controller.name,
                    _mapper(worker),
                    resources=_watches(controller),
                    stage=CONTROLLERS,
                    resync=_resync(worker),
                )
            )

    def start(self) -> None:
        for worker in self.workers:
            for key in worker.controller.initial_keys():
                worker.add(key)
            self._tasks.append(
                asyncio.create_task(self._run(worker), name=f"controller-{worker.controller.name}")
            )
        if self.dispatcher is not None:
            self.dispatcher.start()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        if self.dispatcher is not None:
            for subscription in self._subscriptions:
                self.dispatcher.unsubscribe(subscription)
            self._subscriptions.clear()

    async def idle(self, timeout: float = 10.0) -> bool:
        """Wait until every queue is empty and the dispatcher holds nothing (tests and
        benchmarks); what is written but not yet committed is committed first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            if self.dispatcher is not None:
                await self.dispatcher.settle()
            quiet = self.dispatcher is None or self.dispatcher.quiet()
            if quiet and all(not w.pending for w in self.workers):
                return True
            await asyncio.sleep(0.01)
        return False

    async def _run(self, worker: _Worker) -> None:
        while True:
            key = await worker.queue.get()
            if self.dispatcher is not None:
                self.dispatcher.drain()  # what is committed reaches the observers first
            turn_ends = time.perf_counter() + self.turn_seconds
            while self._reconcile(worker, key):
                if worker.queue.empty() or time.perf_counter() >= turn_ends:
                    break
                key = worker.queue.get_nowait()
            await asyncio.sleep(0)

    def _reconcile(self, worker: _Worker, key: Hashable) -> bool:
        """Reconcile one key; False when the turn should end here (a conflict: the key
        is queued again, and whoever wrote first gets to run before it is read again)."""
        worker.pending.discard(key)
        started = time.perf_counter()
        try:
            worker.controller.reconcile(key)
            worker.failures.pop(key, None)
            self.observe(worker.controller.name, time.perf_counter() - started)
        except CONFLICTS:
            worker.add(key)  # someone wrote first: read again and retry
            return False
        except RetryLater as later:
            asyncio.get_running_loop().call_later(later.seconds, worker.add, key)
        except Exception as err:
            attempts = worker.failures.get(key, 0) + 1
            worker.failures[key] = attempts
            delay = min(MAX_BACKOFF_SECONDS, 0.05 * 2**attempts)
            _log_failure(worker.controller.name, key, attempts, delay, err)
            asyncio.get_running_loop().call_later(delay, worker.add, key)
        return True


def _log_failure(
    controller: str, key: Hashable, attempts: int, delay: float, err: Exception
) -> None:
    """One line for an expected failure (with its text); the traceback for anything else."""
    line = "%s: reconciling %s failed (attempt %d, retry in %.2fs)"
    if isinstance(err, EXPECTED_FAILURES):
        LOG.error(line + ": %s", controller, key, attempts, delay, err)
    else:
        LOG.exception(line, controller, key, attempts, delay)


def _mapper(worker: _Worker) -> Callable[[WatchEvent], None]:
    def handle(event: WatchEvent) -> None:
        for key in worker.controller.keys_for(event):
            worker.add(key)

    return handle


def _resync(worker: _Worker) -> Callable[[], None]:
    """A controller that failed on an event for good: every initial key again."""

    def resync() -> None:
        for key in worker.controller.initial_keys():
            worker.add(key)

    return resync


def _watches(controller: Controller) -> frozenset[str] | None:
    """The store resources a controller declares it maps to keys; None: every resource."""
    watches = getattr(controller, "watches", None)
    return frozenset(watches) if watches is not None else None
