"""The benchmarks' watch (:class:`bench.tenancy.Watch`) ends before its client closes.

Closing an httpx client under a thread still reading its watch stream freed the socket's
descriptor while that thread polled it; the next connection opened took the number, and the
stale thread's TLS reads took that connection's records: the new watch lost events until its
stream broke (the tenancy benchmark's minute-long stall, team-00's load watch being the first
connection after the idle phase's). Closing a watch now wakes its thread and waits for it,
so the next watch, likely on the same descriptor number, gets every event on one stream.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from allot.apiserver.server import ServerThread
from bench.scheduler import _client
from bench.tenancy import Watch

CONFIG_MAPS = "/api/v1/namespaces/default/configmaps"


def _create(client: httpx.Client, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    client.post(CONFIG_MAPS, json=body).raise_for_status()


def _wait_for(seen: dict[str, float], names: list[str]) -> None:
    deadline = time.monotonic() + 10  # generous: delivery takes milliseconds
    while time.monotonic() < deadline and not all(f"default/{n}" in seen for n in names):
        time.sleep(0.01)
    assert sorted(k for k in seen if k.removeprefix("default/") in names) == sorted(
        f"default/{n}" for n in names
    )


def test_a_closed_watch_has_ended_and_the_next_watch_loses_no_event(tmp_path: Path) -> None:
    with ServerThread(tmp_path / "data") as server:
        url, ca = server.endpoint.url, str(server.endpoint.tls.ca_cert)
        token = server.api.registry.tokens.ensure("host")
        first_seen: dict[str, float] = {}
        with _client(url, ca, token) as client:
            first = Watch(client, CONFIG_MAPS, first_seen, allocated=False)
            _create(client, "before")
            _wait_for(first_seen, ["before"])  # its stream is open and read
            first.close()
            assert not first.running
        seen: dict[str, float] = {}
        with _client(url, ca, token) as client:
            second = Watch(client, CONFIG_MAPS, seen, allocated=False)
            _wait_for(seen, ["before"])  # the initial list: its stream is open
            names = [f"after-{index}" for index in range(5)]
            for name in names:
                _create(client, name)
            _wait_for(seen, names)
            second.close()
        assert (first.restarts, second.restarts) == (0, 0)
