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
writes, never one in the middle. Used by :class:`allot.store.objects.Store` only.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable

LOG = logging.getLogger("allot.store")


class GroupCommit:
    """The transaction the writes of the current loop turn share."""

    def __init__(
        self,
        db: sqlite3.Connection,
        lock: threading.RLock,
        on_commit: Callable[[], None],
        on_lost: Callable[[], None],
    ) -> None:
        self._db = db
        self._lock = lock
        self._on_commit = on_commit  # hands the committed writes' events over
        self._on_lost = on_lost  # forgets the events of writes rolled back
        self._open = False
        self._loop: asyncio.AbstractEventLoop | None = None
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
            if loop is not None:
                self._loop = loop
                loop.call_soon(self.flush)
        return loop is None or loop is not self._loop

    def commit_now(self) -> None:
        """Commit the open transaction (with the loop turn's writes so far, if any), then
        hand the committed events over."""
        with self._lock:
            if self._open and not self.closed:
                self._db.execute("COMMIT")
                self._open = False
        self._on_commit()

    def abandon(self) -> None:
        """A write failed inside the transaction. When SQLite rolled the whole transaction
        back (a full disk, an I/O error), the turn's earlier writes are gone from the file
        though the store's memory holds them: logged; their events never leave."""
        if self._open and not self._db.in_transaction:
            self._open = False
            self._on_lost()
            LOG.error("the store's transaction was rolled back: this turn's writes are lost")

    def flush(self) -> None:
        """Commit what the turn wrote (the end of a turn, or an answer about to leave)."""
        try:
            self.commit_now()
        except sqlite3.Error:
            with self._lock:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                self._open = False
            self._on_lost()
            raise

    async def committed(self) -> None:
        """Return once every write made so far is committed; raise if the commit failed.
        An answer does not wait for the end of the turn: what the turn wrote so far is
        committed at once, the rest of the turn goes into the next transaction."""
        if self._open:
            self.flush()
