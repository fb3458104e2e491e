"""Running the API server: TLS on loopback with uvicorn, kubeconfigs, clean shutdown.

``serve`` prepares the data directory (CA, server certificate, tokens), writes one
kubeconfig per cluster, then serves until interrupted. ``ServerThread`` runs the same server
in a background thread for tests and the demo, on a free port. Only loopback addresses are
accepted.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from allot.apiserver.app import ApiServer
from allot.apiserver.security import TLSFiles, ensure_tls, write_kubeconfig

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass
class Endpoint:
    url: str
    tls: TLSFiles
    kubeconfigs: dict[str, Path]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def prepare(server: ApiServer, host: str, port: int) -> Endpoint:
    if host not in LOOPBACK:
        raise ValueError(f"allot serves on loopback only (127.0.0.1 or ::1), not {host!r}")
    tls = ensure_tls(server.data_dir / "pki")
    url = f"https://{'127.0.0.1' if host == 'localhost' else host}:{port}"
    server.url = url
    kubeconfigs = {}
    for cluster in server.tokens.clusters():
        kubeconfigs[cluster] = write_kubeconfig(
            server.data_dir, cluster, url, server.tokens.ensure(cluster), tls.ca_cert
        )
    return Endpoint(url, tls, kubeconfigs)


def _config(server: ApiServer, endpoint: Endpoint, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        server.app(),
        host=host,
        port=port,
        log_level="warning",
        ssl_certfile=str(endpoint.tls.server_cert),
        ssl_keyfile=str(endpoint.tls.server_key),
        lifespan="on",
        timeout_graceful_shutdown=2,
    )


def serve(
    data_dir: Path,
    host: str,
    port: int,
    announce: Callable[[Endpoint], None] | None = None,
    on_started: Callable[[Endpoint], None] | None = None,
    api: ApiServer | None = None,
) -> None:
    """Serve until interrupted; ``on_started`` runs in a thread once requests are served."""
    server = api or ApiServer(data_dir)
    endpoint = prepare(server, host, port)
    if announce is not None:
        announce(endpoint)
    instance = uvicorn.Server(_config(server, endpoint, host, port))
    if on_started is not None:
        threading.Thread(
            target=_when_started,
            args=(instance, on_started, endpoint),
            daemon=True,
            name="allot-after-start",
        ).start()
    try:
        instance.run()
    finally:
        server.stopping.set()
        server.store.close()


def _when_started(
    instance: uvicorn.Server, action: Callable[[Endpoint], None], endpoint: Endpoint
) -> None:
    deadline = time.monotonic() + 60
    while not instance.started and time.monotonic() < deadline:
        time.sleep(0.05)
    if instance.started:
        action(endpoint)


class ServerThread:
    """The API server in a background thread (tests, demo); ``stop()`` shuts it down."""

    def __init__(
        self, data_dir: Path, *, port: int | None = None, api: ApiServer | None = None
    ) -> None:
        self.api = api or ApiServer(data_dir)
        self.port = port or free_port()
        self.endpoint = prepare(self.api, "127.0.0.1", self.port)
        self._server = uvicorn.Server(_config(self.api, self.endpoint, "127.0.0.1", self.port))
        self._thread = threading.Thread(target=self._run, name="allot-apiserver", daemon=True)

    def _run(self) -> None:
        asyncio.run(self._server.serve())

    def start(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the API server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.api.stopping.set()
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self.api.store.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
