"""Running the API server: TLS on loopback with uvicorn, kubeconfigs, clean shutdown.

``serve`` locks the data directory (one platform per directory, ``lock``), binds the port,
builds the platform, prepares the data directory (CA, server certificate, tokens) and writes
one kubeconfig per cluster with the port really bound (``--port 0`` picks a free one;
what a user merged into an existing file is kept, see :mod:`allot.registry.kubeconfigs`),
settles the process's heap (``settle_heap``), then serves on that socket until interrupted;
an interrupt ends the open watch streams first. Nothing is written before the lock and the
port are held, so a refused second start leaves the first one intact. ``ServerThread`` runs
the same server in a background thread for tests and the demo, on a free port. Only
loopback addresses are accepted.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn

from allot.apiserver.app import ApiServer
from allot.apiserver.connections import READ_TIMEOUT, with_read_timeout
from allot.apiserver.lock import DataDirLock, DataDirUnwritable
from allot.apiserver.rootpaths import TokenRouted
from allot.apiserver.security import TLSFiles, ensure_tls
from allot.registry.clusters import Registry

LOOPBACK = ("127.0.0.1", "::1", "localhost")
GC_THRESHOLDS = (10_000, 20, 10)
"""Cyclic collection of a serving process (see :func:`settle_heap`): the young generation is
collected every 10,000 net allocations instead of 700."""


@dataclass
class Endpoint:
    url: str
    tls: TLSFiles
    kubeconfigs: dict[str, Path]
    notes: list[str] = field(default_factory=list)
    """What rewriting the kubeconfigs changed that the user should hear of."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def check_loopback(host: str) -> None:
    if host not in LOOPBACK:
        raise ValueError(f"allot serves on loopback only (127.0.0.1 or ::1), not {host!r}")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0: a free port); OSError if taken. Connections
    made before the server runs wait in the backlog instead of being refused. The protocol is
    named: asyncio sets TCP_NODELAY on accepted connections only when ``proto`` says TCP,
    and without it a response's second write waits for the client's delayed ACK (40 ms)."""
    check_loopback(host)
    address = "127.0.0.1" if host == "localhost" else host
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def prepare(server: ApiServer, host: str, port: int) -> Endpoint:
    check_loopback(host)
    registry = server.registry
    tls = ensure_tls(registry.data_dir / "pki")
    url = f"https://{'127.0.0.1' if host == 'localhost' else host}:{port}"
    registry.url = url
    kubeconfigs = {}
    notes = []
    for cluster in registry.tokens.clusters():
        kubeconfigs[cluster], changes = registry.write_kubeconfig(cluster)
        notes += [f"{kubeconfigs[cluster].resolve()}: {change}" for change in changes]
    return Endpoint(url, tls, kubeconfigs, notes)


def _config(
    server: ApiServer, endpoint: Endpoint, host: str, port: int, read_timeout: float = READ_TIMEOUT
) -> uvicorn.Config:
    return uvicorn.Config(
        TokenRouted(server.app(), server.registry.cluster_of_token),
        host=host,
        port=port,
        http=with_read_timeout(read_timeout),
        ws="none",  # no upgrades, even where a WebSocket library is installed (connections)
        log_level="warning",
        ssl_certfile=str(endpoint.tls.server_cert),
        ssl_keyfile=str(endpoint.tls.server_key),
        lifespan="on",
        timeout_graceful_shutdown=2,
        proxy_headers=False,  # loopback only: no proxy in front whose headers to trust
    )


class _Server(uvicorn.Server):
    """uvicorn's server, telling the watch streams to end, in the serving loop, when its
    shutdown begins (Ctrl-C, ``ServerThread.stop``): an open watch (``kubectl get -w``)
    would otherwise hold the shutdown until uvicorn's graceful timeout, since the streams
    hear of the stop only in the lifespan's end."""

    def __init__(self, config: uvicorn.Config, api: ApiServer) -> None:
        super().__init__(config)
        self.api = api

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.api.stopping.set()
        await super().shutdown(sockets)


def settle_heap() -> None:
    """Once the platform is built: what the process holds by now (modules, classes,
    pydantic's schemas, the platform's state) lives until it ends, so it is collected once
    and then left out of every later collection (``gc.freeze``), and the young generation
    is collected less often (:data:`GC_THRESHOLDS`). In the scheduler benchmark this cut
    the collector's time from 1.1 s to 0.35 s and its longest pause, which stops the whole
    loop, from 227 ms to 82 ms. For a process that serves until it ends (``allot up``, the
    benchmarks' platform process), never for tests that start many platforms in one."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def serve(
    data_dir: Path,
    host: str,
    port: int,
    announce: Callable[[Endpoint], None] | None = None,
    on_started: Callable[[Endpoint], None] | None = None,
    build: Callable[[], ApiServer] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serve until interrupted; ``on_started`` runs in a thread once requests are served,
    then the lock records readiness, then ``on_ready`` runs (``allot up``'s last line).

    Raises ``DataDirLocked`` when another platform serves ``data_dir`` and ``OSError`` when
    the port cannot be bound, both before anything is written, ``DataDirUnwritable`` when
    the directory cannot be written (read-only, full); ``build`` makes the platform once
    the lock and the port are held (default: a bare API server)."""
    lock = DataDirLock(data_dir).acquire()
    try:
        sock = bind(host, port)
    except OSError:
        lock.abandon()
        raise
    try:
        bound = sock.getsockname()[1]
        try:
            server = build() if build is not None else ApiServer(Registry(data_dir))
            endpoint = prepare(server, host, bound)
        except OSError as err:  # the data directory's files: the fleet, the CA, kubeconfigs
            if err.errno in DataDirUnwritable.REFUSALS:
                raise DataDirUnwritable(data_dir, err) from None
            raise
        lock.record(endpoint.url)
        if announce is not None:
            announce(endpoint)
        settle_heap()
        instance = _Server(_config(server, endpoint, host, bound), server)
        threading.Thread(
            target=_when_started,
            args=(instance, on_started, endpoint, lock, on_ready),
            daemon=True,
            name="allot-after-start",
        ).start()
        try:
            instance.run(sockets=[sock])
        finally:
            server.stopping.set()
            server.registry.close()
    finally:
        sock.close()
        lock.release()


def _when_started(
    instance: uvicorn.Server,
    action: Callable[[Endpoint], None] | None,
    endpoint: Endpoint,
    lock: DataDirLock,
    ready: Callable[[], None] | None = None,
) -> None:
    """Once requests are served: ``action`` (``allot up`` publishes its fleet), then the
    lock says the platform is ready (``allot kubeconfig --wait`` waits for that), then
    ``ready`` (so what it prints is never seen before the lock says so)."""
    deadline = time.monotonic() + 60
    while not instance.started and time.monotonic() < deadline:
        time.sleep(0.05)
    if instance.started:
        if action is not None:
            action(endpoint)
        lock.record(endpoint.url, ready=True)
        if ready is not None:
            ready()


class ServerThread:
    """The API server in a background thread (tests, demo); ``stop()`` shuts it down."""

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        api: ApiServer | None = None,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        self.lock = DataDirLock(data_dir).acquire()
        self.api = api or ApiServer(Registry(data_dir))
        self.port = port or free_port()
        self.endpoint = prepare(self.api, "127.0.0.1", self.port)
        self.lock.record(self.endpoint.url)
        config = _config(self.api, self.endpoint, "127.0.0.1", self.port, read_timeout)
        self._server = _Server(config, self.api)
        self._thread = threading.Thread(target=self._run, name="allot-apiserver", daemon=True)

    def _run(self) -> None:
        asyncio.run(self._server.serve())

    def start(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.stop()
                raise RuntimeError("the API server did not start")
            time.sleep(0.02)
        self.lock.record(self.endpoint.url, ready=True)
        return self

    def stop(self) -> None:
        self._server.should_exit = True  # its shutdown ends the watch streams first
        self._thread.join(timeout=10)
        self.api.registry.close()
        self.lock.release()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
