"""Pod logs as the kubelet serves them (:mod:`allot.apiserver.podlogs`): which container
states have a log (upstream's ``validateContainerLogStatus`` texts), tails read backwards
a chunk at a time, and a followed log that ends with its container's run."""

from __future__ import annotations

import asyncio
import io
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.apiserver import podlogs
from allot.controllers import logtimes
from allot.statuses import InvalidObjectError, RequestError

CID = "containerd://abc"
SUBJECT = 'container "c" in pod "p"'


@pytest.mark.parametrize(
    ("status", "refused"),
    [
        ({"state": {"running": {"startedAt": "t"}}, "containerID": CID}, None),
        ({"state": {"terminated": {"exitCode": 0, "containerID": CID}}}, None),
        (
            {"state": {"terminated": {"exitCode": 128, "reason": "ContainerCannotRun"}}},
            f"{SUBJECT} is terminated",
        ),
        (
            {
                "state": {"terminated": {"exitCode": 1}},
                "lastState": {"terminated": {"exitCode": 1, "containerID": CID}},
            },
            None,
        ),
        (
            {
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "containerID": CID}},
            },
            None,
        ),
        (
            {
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1}},
            },
            f"{SUBJECT} is terminated",
        ),
        (
            {"state": {"waiting": {"reason": "ContainerCreating"}}},
            f"{SUBJECT} is waiting to start: ContainerCreating",
        ),
        (
            {"state": {"waiting": {"reason": "CreateContainerConfigError"}}},
            f"{SUBJECT} is waiting to start: CreateContainerConfigError",
        ),
        (
            {"state": {"waiting": {"reason": "ErrImagePull"}}},
            f"{SUBJECT} is waiting to start: image can't be pulled",
        ),
        (
            {"state": {"waiting": {"reason": "ImagePullBackOff"}}},
            f"{SUBJECT} is waiting to start: trying and failing to pull image",
        ),
        ({"state": {}}, f"{SUBJECT} is waiting to start - no logs yet"),
    ],
)
def test_which_states_have_a_log(status: dict[str, Any], refused: str | None) -> None:
    assert podlogs.refusal(status, "c", "p") == refused


def test_container_status_finds_init_containers() -> None:
    pod = {"status": {"initContainerStatuses": [{"name": "init", "state": {}}]}}
    assert podlogs.container_status(pod, "init") == {"name": "init", "state": {}}
    assert podlogs.container_status(pod, "main") is None


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab\u00e9 ", max_size=6), max_size=12),
    trailing=st.booleans(),
    tail=st.none() | st.integers(min_value=0, max_value=14),
    chunk=st.integers(min_value=1, max_value=9),
)
def test_tail_is_the_last_lines(
    lines: list[str], trailing: bool, tail: int | None, chunk: int
) -> None:
    """Whatever the chunk size, the tail is what splitting the whole text gives."""
    text = "\n".join(lines) + ("\n" if trailing and lines else "")
    data = text.encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(podlogs, "CHUNK_BYTES", chunk)
        log = io.BytesIO(data)
        offset = podlogs.tail_offset(log, tail)
    kept = data.splitlines(keepends=True)
    expected = data if tail is None else b"".join(kept[-tail:] if tail else [])
    assert data[offset:] == expected


def test_read_of_a_missing_file_is_empty(tmp_path: Path) -> None:
    assert podlogs.read(tmp_path / "none.log", None) == b""
    (tmp_path / "c.log").write_bytes(b"1\n2\n3\n")
    assert podlogs.read(tmp_path / "c.log", 2) == b"2\n3\n"


def test_limit_bytes_cuts_the_log_after_the_tail(tmp_path: Path) -> None:
    """``kubectl logs --limit-bytes=N`` (with ``--tail``: the last lines, then cut)."""
    (tmp_path / "c.log").write_bytes(b"one\ntwo\nthree\n")
    assert podlogs.read(tmp_path / "c.log", None, 5) == b"one\nt"
    assert podlogs.read(tmp_path / "c.log", 2, 6) == b"two\nth"
    assert podlogs.read(tmp_path / "c.log", None, 100) == b"one\ntwo\nthree\n"


def test_a_followed_log_ends_at_its_limit() -> None:
    async def chunks() -> Any:
        for chunk in (b"abc", b"defg", b"never"):
            yield chunk

    async def scenario(limit: int | None) -> list[bytes]:
        return [chunk async for chunk in podlogs.limited(chunks(), limit)]

    assert asyncio.run(scenario(5)) == [b"abc", b"de"]
    assert asyncio.run(scenario(3)) == [b"abc"]
    assert asyncio.run(scenario(None)) == [b"abc", b"defg", b"never"]


def test_follow_sends_what_is_appended_until_the_run_ends(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    path.write_bytes(b"one\ntwo\n")
    runs = {"running": True}

    async def scenario() -> list[bytes]:
        received: list[bytes] = []
        stream = podlogs.follow(path, 1, lambda: runs["running"], asyncio.Event())
        received.append(await anext(stream))
        with path.open("ab") as log:
            log.write(b"three\n")
        received.append(await anext(stream))
        with path.open("ab") as log:
            log.write(b"four\n")
        runs["running"] = False  # ended: what it wrote last still comes
        received.extend([chunk async for chunk in stream])
        return received

    assert asyncio.run(scenario()) == [b"two\n", b"three\n", b"four\n"]


def test_follow_waits_for_the_file_and_stops_with_the_server(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    stopping = asyncio.Event()

    async def scenario() -> list[bytes]:
        stream = podlogs.follow(path, None, lambda: True, stopping)
        first = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.3)
        path.write_bytes(b"late\n")
        received = [await first]
        stopping.set()
        received.extend([chunk async for chunk in stream])
        return received

    assert asyncio.run(scenario()) == [b"late\n"]


def test_follow_of_a_run_that_ended_without_a_log_is_empty(tmp_path: Path) -> None:
    async def scenario() -> list[bytes]:
        stream = podlogs.follow(tmp_path / "c.log", None, lambda: False, asyncio.Event())
        return [chunk async for chunk in stream]

    assert asyncio.run(scenario()) == []


RESTARTED = {
    "state": {"running": {}},
    "containerID": "containerd://new",
    "lastState": {"terminated": {"exitCode": 1, "containerID": CID}},
}
WAITING = {
    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
    "lastState": RESTARTED["lastState"],
}


@pytest.mark.parametrize(
    ("status", "previous", "file", "refused"),
    [
        (None, False, "c.log", f"{SUBJECT} is waiting to start: ContainerCreating"),
        (RESTARTED, False, "c.log", None),
        (RESTARTED, True, "c.previous.log", None),
        (WAITING, True, "c.log", None),  # the run that just ended is still the log
        (
            {"state": {"running": {}}, "containerID": CID},
            True,
            "c.log",
            f"previous terminated {SUBJECT} not found",
        ),
        (None, True, "c.log", f"previous terminated {SUBJECT} not found"),
    ],
)
def test_locate(
    tmp_path: Path, status: dict[str, Any] | None, previous: bool, file: str, refused: str | None
) -> None:
    path, why = podlogs.locate(tmp_path, "c", status, "p", previous)
    assert (path, why) == (tmp_path / file, refused)


def test_locate_without_a_status_serves_a_log_that_is_there(tmp_path: Path) -> None:
    (tmp_path / "c.log").write_text("started\n")
    assert podlogs.locate(tmp_path, "c", None, "p", False) == (tmp_path / "c.log", None)


SECOND = 1_000_000_000
T0 = 1_795_000_000 * SECOND  # 2026-11-18T11:06:40Z


def _timed_log(tmp_path: Path) -> Path:
    """Three lines seen at T0, T0 + 1 s (the second written in two stretches: its time
    is its last byte's) and T0 + 2 s, the last without its newline."""
    path = tmp_path / "c.log"
    path.write_bytes(b"one\ntwo\nthree")
    for end, nanos in ((4, T0), (6, T0 + SECOND // 2), (8, T0 + SECOND), (13, T0 + 2 * SECOND)):
        logtimes.record(path, end, nanos)
    return path


def test_timestamps_and_since_choose_and_stamp_lines_by_when_they_were_seen(
    tmp_path: Path,
) -> None:
    """``kubectl logs --timestamps`` (the kubelet's RFC 3339 with nine digits of fraction),
    ``--since``/``--since-time`` (lines seen at or after), with ``--tail`` first and
    ``--limit-bytes`` last, as the kubelet's log reader orders them."""
    path = _timed_log(tmp_path)
    stamped = podlogs.read(path, None, None, podlogs.Times(timestamps=True))
    assert stamped == (
        b"2026-11-18T11:06:40.000000000Z one\n"
        b"2026-11-18T11:06:41.000000000Z two\n"
        b"2026-11-18T11:06:42.000000000Z three"
    )
    assert podlogs.read(path, None, None, podlogs.Times(since=T0 + 1)) == b"two\nthree"
    assert podlogs.read(path, None, None, podlogs.Times(since=T0 + SECOND)) == b"two\nthree"
    assert podlogs.read(path, None, None, podlogs.Times(since=T0 + 3 * SECOND)) == b""
    assert podlogs.read(path, 2, None, podlogs.Times(since=T0 + 2 * SECOND)) == b"three"
    assert podlogs.read(path, 1, 12, podlogs.Times(timestamps=True)) == b"2026-11-18T1"
    assert podlogs.read(path, None, None) == b"one\ntwo\nthree"  # untouched without times


def test_log_lines_without_a_record_have_the_files_time(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    path.write_bytes(b"old\n")
    os.utime(path, ns=(T0, T0))
    assert podlogs.read(path, None, None, podlogs.Times(timestamps=True)) == (
        b"2026-11-18T11:06:40.000000000Z old\n"
    )


def test_a_followed_log_with_times_sends_whole_lines_stamped(tmp_path: Path) -> None:
    path = _timed_log(tmp_path)
    runs = {"running": True}

    async def scenario() -> list[bytes]:
        times = podlogs.Times(since=T0 + 1, timestamps=True)
        stream = podlogs.follow(path, None, lambda: runs["running"], asyncio.Event(), times)
        received = [await anext(stream)]
        with path.open("ab") as log:
            log.write(b"\nfour\n")  # three's line ends now, and four's: not recorded yet
        received.append(await anext(stream))
        runs["running"] = False
        received.extend([chunk async for chunk in stream])
        return received

    first, later = asyncio.run(scenario())
    assert first == b"2026-11-18T11:06:41.000000000Z two\n"
    stamp = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z "
    assert re.fullmatch(stamp + b"three\n" + stamp + b"four\n", later), later  # completed now
    assert not later.startswith(b"2026-11-18")


@pytest.mark.parametrize(
    ("query", "error"),
    [
        (
            {"sinceSeconds": "0"},
            'PodLogOptions "p" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0',
        ),
        ({"sinceSeconds": "x"}, 'sinceSeconds: Invalid value: "x": must be an integer'),
        (
            {"sinceSeconds": "5", "sinceTime": "2026-11-18T11:06:40Z"},
            'PodLogOptions "p" is invalid: Forbidden: at most one of `sinceTime` or '
            "`sinceSeconds` may be specified",
        ),
        (
            {"sinceTime": "yesterday"},
            'sinceTime: Invalid value: "yesterday": must be an RFC 3339 time',
        ),
        (
            {"tailLines": "-1"},
            'PodLogOptions "p" is invalid: tailLines: Invalid value: -1: must be greater than '
            "or equal to 0",
        ),
        (
            {"limitBytes": "0", "sinceSeconds": "-2"},
            'PodLogOptions "p" is invalid: [limitBytes: Invalid value: 0: must be greater than '
            "0, sinceSeconds: Invalid value: -2: must be greater than 0]",
        ),
    ],
)
def test_log_time_options_are_checked(query: dict[str, str], error: str) -> None:
    with pytest.raises((RequestError, InvalidObjectError)) as raised:
        podlogs.requested_times(query, "p", T0)
    assert str(raised.value) == error


def test_log_time_options() -> None:
    assert podlogs.requested_times({"sinceSeconds": "2"}, "p", T0) == podlogs.Times(T0 - 2 * SECOND)
    assert podlogs.requested_times(
        {"sinceTime": "2026-11-18T11:06:41Z", "timestamps": "true"}, "p", T0
    ) == podlogs.Times(T0 + SECOND, timestamps=True)
    assert not podlogs.requested_times({}, "p", T0).needed


def test_log_time_records_are_read_as_they_grow(tmp_path: Path) -> None:
    """A followed log reads its sidecar again from where it stopped; a record written
    half (no newline yet) waits for its end, and records that go back are skipped."""
    log = tmp_path / "c.log"
    reader = logtimes.Reader(log)
    assert reader.records() == []
    logtimes.record(log, 4, T0)
    with logtimes.times_path(log).open("a") as times:
        times.write("9 ")
    assert reader.records() == [(4, T0)]
    with logtimes.times_path(log).open("a") as times:
        times.write(f"{T0 + SECOND}\n3 {T0 + 2 * SECOND}\n")
    assert reader.records() == [(4, T0), (9, T0 + SECOND)]
    assert logtimes.load(log) == reader.records()
    assert [logtimes.seen_at(reader.records(), o) for o in (0, 3, 4, 8, 9)] == [
        T0,
        T0,
        T0 + SECOND,
        T0 + SECOND,
        None,
    ]
