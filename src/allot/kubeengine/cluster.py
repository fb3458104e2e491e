"""Starting and stopping a real Kubernetes 1.36 host cluster on loopback.

``start`` checks everything before it writes anything (the binaries and their versions,
loopback, the data directory's engine, its lock, the API server's port), then makes the
certificates (:mod:`allot.kubeengine.pki`) and the components' files
(:mod:`allot.kubeengine.components`), starts etcd, kube-apiserver (ready when ``/readyz``
says so), kube-controller-manager, kube-scheduler and kwok (each ready by its health
endpoint), writes the host's kubeconfig as the embedded engine does
(``kubeconfigs/host.yaml``, context ``allot-host``, its bearer token from ``tokens.json``)
and waits for the ``default`` ServiceAccount, without which no pod can be created. A
component that fails stops the others and raises :class:`ComponentFailed` with its log's
last lines. The fleet is published by the caller through the API
(:class:`allot.driver.publisher.Publisher`). Called by ``allot up --engine kubernetes``
(:mod:`allot.cli.up`) and the tests' real-cluster fixture (``tests/realkube.py``); the
caller stops it with :meth:`RealCluster.stop` from the thread that started it.
"""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from allot.apiserver.lock import DataDirLock
from allot.apiserver.server import bind, free_port
from allot.kube.client import Client
from allot.kubeengine import components, pki
from allot.kubeengine.binaries import locate
from allot.kubeengine.components import Layout, Options, Ports
from allot.kubeengine.datadir import KUBERNETES, check_engine
from allot.kubeengine.processes import Component, ComponentFailed, Supervisor
from allot.registry import kubeconfigs
from allot.registry.clusters import HOST_CLUSTER, Tokens
from allot.registry.kubeconfigs import own_context
from allot.registry.rbac.identity import cluster_admin

ETCD_SECONDS = 30.0
APISERVER_SECONDS = 180.0  # a cold start on a busy 2-core machine takes a while
COMPONENT_SECONDS = 60.0
PROBE_SECONDS = 2.0

__all__ = ["ComponentFailed", "PortInUse", "RealCluster", "start"]


class PortInUse(Exception):
    """The API server's port is taken (the same words as the embedded engine's refusal)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(
            f"cannot serve on {host}:{port}: {reason} (choose another with --port, or "
            "--port 0 for a free one)"
        )


@dataclass
class RealCluster:
    """A started control plane: its URL, the host's kubeconfig, the processes."""

    data_dir: Path
    url: str
    kubeconfig: Path
    supervisor: Supervisor
    lock: DataDirLock
    notes: list[str]
    ports: Ports
    keys: pki.Pki
    binaries: dict[str, Path]

    def client(self) -> Client:
        return Client.from_kubeconfig(self.kubeconfig, own_context(HOST_CLUSTER))

    def pids(self) -> dict[str, int]:
        return self.supervisor.pids()

    def check(self) -> None:
        """ComponentFailed if a component has exited since the start."""
        self.supervisor.check()

    def ready(self) -> None:
        """Record in the lock that the cluster serves, fleet published (for ``--wait``)."""
        self.lock.record(self.url, ready=True)

    def stop(self) -> None:
        self.supervisor.stop()
        self.lock.release()


def start(
    data_dir: Path,
    host: str = "127.0.0.1",
    port: int = 6443,
    options: Options | None = None,
    env: Mapping[str, str] | None = None,
) -> RealCluster:
    """Start the real engine on ``data_dir`` (see the module's docstring)."""
    options = options or Options()
    data_dir = data_dir.absolute()  # kubeconfigs resolve relative paths from their own place
    if host not in ("127.0.0.1", "localhost"):
        raise ValueError(f"the kubernetes engine serves on 127.0.0.1 only, not {host!r}")
    check_engine(data_dir, KUBERNETES)
    binaries = locate(env)
    lock = DataDirLock(data_dir).acquire()
    try:
        ports = _ports(port)
    except PortInUse:
        lock.abandon()
        raise
    supervisor = Supervisor()
    try:
        cluster = _start(data_dir, binaries, ports, options, lock, supervisor)
    except BaseException:
        supervisor.stop()
        lock.release()
        raise
    return cluster


def _ports(port: int) -> Ports:
    """The API server's port (checked free; 0: a free one) and five free ones for the rest."""
    if port:
        try:
            bind("127.0.0.1", port).close()
        except OSError as err:
            raise PortInUse("127.0.0.1", port, err.strerror or str(err)) from None
    chosen = [port] if port else []
    while len(chosen) < 6:
        candidate = free_port()
        if candidate not in chosen:
            chosen.append(candidate)
    return Ports(*chosen)


def _start(
    data_dir: Path,
    binaries: dict[str, Path],
    ports: Ports,
    options: Options,
    lock: DataDirLock,
    supervisor: Supervisor,
) -> RealCluster:
    layout = Layout(data_dir)
    layout.root.mkdir(parents=True, exist_ok=True)  # from here on the directory is ours
    keys = pki.ensure(layout.pki_dir)
    token = Tokens(data_dir / "tokens.json").ensure(HOST_CLUSTER)
    components.write_configs(layout, keys, ports, cluster_admin(HOST_CLUSTER), token, options)
    _run_components(layout, keys, ports, options, binaries, supervisor, token)
    url = f"https://127.0.0.1:{ports.apiserver}"
    credentials = kubeconfigs.Credentials(
        url, keys.ca.cert, {HOST_CLUSTER: token}, cluster_paths=False
    )
    path = data_dir / "kubeconfigs" / f"{HOST_CLUSTER}.yaml"
    written = kubeconfigs.write(path, HOST_CLUSTER, credentials)
    lock.record(url)
    notes = [f"{path.resolve()}: {note}" for note in written.notes]
    return RealCluster(data_dir, url, path, supervisor, lock, notes, ports, keys, binaries)


def _run_components(
    layout: Layout,
    keys: pki.Pki,
    ports: Ports,
    options: Options,
    binaries: dict[str, Path],
    supervisor: Supervisor,
    token: str,
) -> None:
    """Start each component after what it needs is up; return once pods can be made."""

    def run(name: str, arguments: list[str]) -> Component:
        return supervisor.start(name, [str(binaries[name]), *arguments], layout.log(name))

    etcd_tls = trust(keys.etcd_ca.cert)
    etcd_tls.load_cert_chain(keys.apiserver_etcd_client.cert, keys.apiserver_etcd_client.key)
    etcd = run("etcd", components.etcd(layout, keys, ports, options))
    supervisor.wait_until(
        etcd, partial(healthy, ports.etcd_client, "/health", etcd_tls), ETCD_SECONDS
    )
    ca = trust(keys.ca.cert)
    storage = components.host_storage(keys, ports)
    apiserver = run("kube-apiserver", components.apiserver(layout, keys, ports.apiserver, storage))
    readyz = partial(healthy, ports.apiserver, "/readyz", ca, token)
    supervisor.wait_until(apiserver, readyz, APISERVER_SECONDS, every=0.25)
    manager = run(
        "kube-controller-manager",
        components.controller_manager(layout, keys, ports.controller_manager, options),
    )
    scheduler = run("kube-scheduler", components.scheduler(layout, keys, ports))
    kwok = run("kwok", components.kwok(layout, ports))
    for component, port, tls in (
        (manager, ports.controller_manager, ca),
        (scheduler, ports.scheduler, ca),
        (kwok, ports.kwok, None),
    ):
        supervisor.wait_until(component, partial(healthy, port, "/healthz", tls), COMPONENT_SECONDS)
    account = partial(default_account, ports.apiserver, ca, token)
    supervisor.wait_until(manager, account, COMPONENT_SECONDS)


def trust(ca: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca))


def healthy(
    port: int, path: str, tls: ssl.SSLContext | None = None, token: str | None = None
) -> bool:
    """Whether ``GET path`` on the loopback port answers 200 (HTTPS when ``tls``)."""
    connection: http.client.HTTPConnection
    if tls is None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PROBE_SECONDS)
    else:
        connection = http.client.HTTPSConnection(
            "127.0.0.1", port, timeout=PROBE_SECONDS, context=tls
        )
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        connection.request("GET", path, headers=headers)
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def default_account(port: int, tls: ssl.SSLContext, token: str) -> bool:
    """Whether kube-controller-manager has made the ``default`` namespace's account."""
    connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=PROBE_SECONDS, context=tls)
    try:
        connection.request(
            "GET",
            "/api/v1/namespaces/default/serviceaccounts/default",
            headers={"Authorization": f"Bearer {token}"},
        )
        response = connection.getresponse()
        return (
            response.status == 200 and json.loads(response.read()).get("kind") == "ServiceAccount"
        )
    except (OSError, http.client.HTTPException, ValueError):
        return False
    finally:
        connection.close()
