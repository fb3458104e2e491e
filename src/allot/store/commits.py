"""Grouped commits: the writes of one event-loop turn share one SQLite transaction.

A commit costs several times what the inserts of a write cost, and the platform's loop
(HTTP, every controller) makes thousands of writes a second; committing each one alone
spent most of the store's time in commits (issue 15). So :class:`GroupCommit` opens a
transaction at the first write of a loop turn and commits it once, at the end of that turn
(``flush``, scheduled with ``call_soon``), for every write made meanwhile, or earlier when
an answer is about to leave.

No acknowledged write may be lost: nothing outside the process learns of a write before the
commit that holds it.

- An HTTP response is sent only after ``committed()`` returns: the API server awaits it for
  every request it answers, so a client is never told of (nor shown) a write that a crash
  could still take back. ``committed()`` commits at once rather than waiting for the end
  of the turn, and nothing runs between a request's last write and that call, so no
  other task's write can share (and a failure of it roll back) a transaction whose writes
  a client was already told of.
- Watch streams are committed listeners: their events are handed over after the commit.
- A write made where no event loop runs (tests, command-line tools, another thread)
  commits before it returns, as before.

In-process listeners (the controllers) see a write at once; what they write in turn goes
into the same transaction or a later one, so a crash takes back only a suffix of the
writes, never one in the middle.

A transaction can fail (a full disk: SQLite then rolls all of it back, at the failing write
or at the commit). The store's memory follows the file: every write of the transaction is
taken back (``on_lost`` gets the transaction's undo log: what ``on_begin`` returned, then
what the store ``remember``-ed per write), its events never leave, and the failure is an
:class:`~allot.store.errors.Unwritable` (``DiskFull``), logged in one line at most every
ten seconds. Every request whose answer could tell of the lost writes gets that error from
``committed()``: those that wrote in the transaction or read while it was open
(``observe``), tracked per asyncio task (each request is one) in a context variable.
Used by :class:`allot.store.objects.Store` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar

from allot.store.errors import Unwritable, unwritable

LOG = logging.getLogger("allot.store")
FAILURES_KEPT = 64  # lost transactions remembered for the requests still to ask
LOG_EVERY_SECONDS = 10.0

_SEEN: ContextVar[tuple[int, int] | None] = ContextVar("allot_store_seen", default=None)
"""(the task, by ``id``; the first transaction it wrote in, or read while it was open,
since it last asked ``committed()``). A task inherits its creator's context: a value
another task set is not its own."""


class GroupCommit:
    """The transaction the writes of the current loop turn share."""

    def __init__(
        self,
        db: sqlite3.Connection,
        lock: threading.RLock,
        on_commit: Callable[[], None],
        on_begin: Callable[[], object],
        on_lost: Callable[[list[object]], None],
    ) -> None:
        self._db = db
        self._lock = lock
        self._on_commit = on_commit  # hands the committed writes' events over
        self._on_begin = on_begin  # the state to restore should the transaction be lost
        self._on_lost = on_lost  # takes back the writes of a lost transaction
        self._open = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._number = 0  # transactions begun so far: the open one's number
        self._undo: list[object] = []
        self._failed: dict[int, sqlite3.Error] = {}
        self._last_report = -LOG_EVERY_SECONDS
        self._unreported = 0
        self.closed = False

    def begin(self) -> bool:
        """Open the transaction for a write unless it is open; True when the write must be
        committed before it returns (``commit_now``): no loop runs in this thread."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if not self._open:
            self._db.execute("BEGIN")
            self._open = True
            self._number += 1
            self._undo = [self._on_begin()]
            if loop is not None:
                self._loop = loop
                loop.call_soon(self._end_of_turn)
        self.observe()
        return loop is None or loop is not self._loop

    def remember(self, entry: object) -> None:
        """Keep what takes a write of the open transaction back, should it be lost."""
        self._undo.append(entry)

    def observe(self) -> None:
        """The current task wrote, or reads what the open transaction holds: its answer
        waits for that transaction's fate."""
        if not self._open:
            return
        try:
            task = id(asyncio.current_task())
        except RuntimeError:
            return  # no loop runs: such a write commits (or fails) before it returns
        seen = _SEEN.get()
        if seen is None or seen[0] != task:
            _SEEN.set((task, self._number))

    def commit_now(self) -> None:
        """Commit the open transaction (with the loop turn's writes so far, if any), then
        hand the committed events over; ``Unwritable`` when the commit failed."""
        with self._lock:
            if self._open and not self.closed:
                try:
                    self._db.execute("COMMIT")
                except sqlite3.Error as err:
                    raise self._lost(err) from None
                self._open = False
                self._undo = []
        self._on_commit()

    def abandon(self, err: sqlite3.Error) -> Unwritable:
        """A write failed inside the transaction: the error to raise for it. When SQLite
        rolled the whole transaction back (a full disk), the turn's earlier writes are
        taken back too."""
        if self._open and not self._db.in_transaction:
            return self._lost(err)
        return unwritable(err)

    def _lost(self, err: sqlite3.Error) -> Unwritable:
        """Roll the transaction back, on disk and in the store's memory."""
        with self._lock:
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            self._open = False
            undo, self._undo = self._undo, []
            self._failed[self._number] = err
            while len(self._failed) > FAILURES_KEPT:
                del self._failed[next(iter(self._failed))]
            self._on_lost(undo)
        failure = unwritable(err)
        self._report(failure, len(undo) - 1)
        return failure

    def _report(self, failure: Unwritable, writes: int) -> None:
        """One log line, at most every ``LOG_EVERY_SECONDS``: never one per request."""
        self._unreported += 1
        now = time.monotonic()
        if now - self._last_report < LOG_EVERY_SECONDS:
            return
        LOG.error(
            "the store's transaction was rolled back (%s): %d writes taken back; "
            "%d transactions lost since the last report",
            failure.detail,
            writes,
            self._unreported,
        )
        self._last_report, self._unreported = now, 0

    def flush(self) -> None:
        """Commit what the turn wrote (the end of a turn, or an answer about to leave)."""
        self.commit_now()

    def _end_of_turn(self) -> None:
        with contextlib.suppress(Unwritable):  # reported; the writers hear of it themselves
            self.flush()

    async def committed(self) -> None:
        """Return once every write made so far is committed; raise ``Unwritable`` if a
        transaction the current task wrote in or read from was lost. An answer does not
        wait for the end of the turn: what the turn wrote so far is committed at once, the
        rest of the turn goes into the next transaction."""
        seen = _SEEN.get()
        if seen is not None:
            _SEEN.set(None)
        if self._open:
            with contextlib.suppress(Unwritable):  # raised below if this task saw it
                self.flush()
        if seen is not None and seen[0] == id(asyncio.current_task()):
            for number, err in self._failed.items():
                if number >= seen[1]:
                    raise unwritable(err)
