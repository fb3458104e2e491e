"""Dashboard sessions on a fake clock: valid for 12 hours, then refused and forgotten;
signing out ends one session only."""

from __future__ import annotations

from allot.ops.dashboard import SESSION_SECONDS, Sessions


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_expires_after_twelve_hours() -> None:
    clock = Clock()
    sessions = Sessions(clock)
    session = sessions.open()
    clock.now += SESSION_SECONDS
    assert sessions.valid(session)
    clock.now += 1
    assert not sessions.valid(session)
    clock.now -= 1  # forgotten once refused: the clock going back does not revive it
    assert not sessions.valid(session)


def test_signing_out_ends_that_session_only() -> None:
    sessions = Sessions(Clock())
    first, second = sessions.open(), sessions.open()
    assert first != second
    sessions.close(first)
    assert not sessions.valid(first)
    assert sessions.valid(second)
    assert not sessions.valid(None)
    assert not sessions.valid("")
