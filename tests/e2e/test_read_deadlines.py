"""Half-open connections cannot hold the server: a client that sends half a request's
headers, or stops in the middle of its body, is disconnected after the read deadline (1 s
here, 32 s by default as kube-apiserver's ReadHeaderTimeout), while a watch that only
receives keeps its connection and other clients are answered meanwhile."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from allot.apiserver.server import ServerThread

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    with ServerThread(tmp_path_factory.mktemp("deadlines"), read_timeout=1.0) as running:
        yield running


def _connect(server: ServerThread) -> ssl.SSLSocket:
    host, port = server.endpoint.url.removeprefix("https://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=server.endpoint.tls.ca_cert)
    raw = socket.create_connection((host, int(port)), timeout=10)
    return context.wrap_socket(raw, server_hostname=host)


def _closed_within(connection: ssl.SSLSocket, seconds: float) -> bool:
    """True when the server closes the connection before ``seconds`` have passed."""
    connection.settimeout(seconds)
    try:
        return connection.recv(1024) == b""
    except TimeoutError:
        return False
    except (ConnectionResetError, ssl.SSLError):
        return True


def _token(server: ServerThread) -> str:
    return server.api.registry.tokens.ensure("host")


def test_half_sent_headers_are_cut_off(server: ServerThread) -> None:
    with _connect(server) as connection:
        connection.sendall(b"GET /clusters/host/version HTTP/1.1\r\nHost: x\r\n")
        assert _closed_within(connection, 10)


def test_a_connection_that_sends_nothing_is_cut_off(server: ServerThread) -> None:
    with _connect(server) as connection:
        assert _closed_within(connection, 10)


def test_a_stalled_body_is_cut_off_and_nothing_is_written(server: ServerThread) -> None:
    head = (
        "POST /clusters/host/api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {_token(server)}\r\nContent-Type: application/json\r\n"
        "Content-Length: 200\r\n\r\n"
    )
    with _connect(server) as connection:
        connection.sendall(head.encode() + b'{"apiVersion": "v1", "kind": "Conf')
        assert _closed_within(connection, 10)
    with _client(server) as client:
        listed = client.get("/clusters/host/api/v1/namespaces/default/configmaps")
    assert listed.json()["items"] == []


def test_a_quiet_watch_keeps_its_connection_and_others_are_answered(
    server: ServerThread,
) -> None:
    request = (
        "GET /clusters/host/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=4"
        f" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {_token(server)}\r\n\r\n"
    )
    with _connect(server) as watch, _client(server) as other:
        watch.sendall(request.encode())
        started = time.monotonic()
        assert b"200 OK" in watch.recv(1024)
        assert not _closed_within(watch, 2.5)  # past the 1 s deadline: still open
        assert other.get("/clusters/host/version").status_code == 200
        watch.settimeout(10)
        assert watch.recv(1024).endswith(b"0\r\n\r\n")  # ended by its own timeoutSeconds
        assert time.monotonic() - started >= 3


def _client(server: ServerThread) -> httpx.Client:
    return httpx.Client(
        base_url=server.endpoint.url,
        verify=ssl.create_default_context(cafile=server.endpoint.tls.ca_cert),
        headers={"Authorization": f"Bearer {_token(server)}"},
        timeout=10,
    )


def test_the_default_deadline_is_kube_apiservers(tmp_path: Path) -> None:
    from allot.apiserver.connections import READ_TIMEOUT

    assert READ_TIMEOUT == 32.0
