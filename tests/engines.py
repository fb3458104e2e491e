"""The engines the client-protocol tests run on, one factory each: ``inprocess`` (the
registry itself, :class:`allot.registry.inprocess.InProcessClient`), ``remote`` (the
embedded HTTPS API server that ``allot up`` runs, through the official client:
:class:`allot.kube.remote.RemoteClient`) and ``real`` (issue 19's Kubernetes 1.36, with
allot's CRDs installed as ``allot render`` writes them, through RemoteClient). The
``engine`` fixture (tests/conftest.py) is parametrised by :data:`ENGINES`. Each engine's
``other_cluster`` is a second cluster of its kind on the same dispatcher. Loopback only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from allot.apiserver.server import ServerThread
from allot.client.errors import NotFound
from allot.client.protocol import Client
from allot.cluster.controller import CacheReads, ChangeCounts
from allot.cluster.crd import alert_crd, tenant_crd
from allot.kube.client import Client as KubeClient
from allot.kube.remote import RemoteClient
from allot.ops.capacity import StoreReads
from allot.registry.clusters import Registry
from allot.registry.inprocess import InProcessClient

SERVER_FIELD_MANAGER = "test"


def gpu_claim(name: str, namespace: str = "team") -> dict[str, Any]:
    """A claim for one whole GPU of seed 000's fleet (``gpu.nvidia.com``)."""
    request = {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [request]}},
    }


def set_allocated(client: Client, name: str, allocated: bool, namespace: str = "team") -> None:
    """Allocate (or free) a :func:`gpu_claim` as a scheduler would: ``gpu-0`` of the whole
    GPU pool in its status."""
    claim = client.get("ResourceClaim", namespace, name)
    assert claim is not None
    result = {"request": "g", "driver": "gpu.nvidia.com", "pool": "a100-whole-pool-0",
              "device": "gpu-0"}  # fmt: skip
    claim["status"] = {"allocation": {"devices": {"results": [result]}}} if allocated else {}
    client.update(claim, field_manager=SERVER_FIELD_MANAGER, subresource="status")


@dataclass
class Engine:
    name: str
    client: Client
    reads: StoreReads
    """The store-like reads of the capacity view over this engine's cache."""
    _start: Callable[[], Any] = field(repr=False, default=lambda: None)
    _stop: Callable[[], Any] = field(repr=False, default=lambda: None)
    other_cluster: Callable[[str], AbstractContextManager[Client]] | None = field(
        repr=False, default=None
    )
    """A second cluster of this engine by name, its changes on this client's dispatcher
    (in process: another cluster of the registry; remote: another API server)."""

    async def start(self) -> None:
        """Start watching (the remote informers list the kinds informed so far)."""
        started = self._start()
        if asyncio.iscoroutine(started):
            await started

    async def stop(self) -> None:
        stopped = self._stop()
        if asyncio.iscoroutine(stopped):
            await stopped

    async def until(self, check: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
        """Poll ``check`` on the loop until it is truthy; its value."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            found = check()
            if found:
                return found
            await asyncio.sleep(0.02)
        raise AssertionError(f"{self.name}: {what} did not happen within {timeout}s")


@contextmanager
def inprocess(root: Path) -> Iterator[Engine]:
    registry = Registry(root / "data")
    client = InProcessClient("host", registry.store, registry.handlers, registry.clock)

    async def settle_then_stop() -> None:
        await client.dispatcher.settle()
        client.dispatcher.stop()

    @contextmanager
    def other_cluster(name: str) -> Iterator[Client]:
        registry.add_cluster(name)
        yield InProcessClient(
            name, registry.store, registry.handlers, registry.clock, dispatcher=client.dispatcher
        )

    try:
        yield Engine(
            "inprocess",
            client,
            registry.store,
            client.dispatcher.start,
            settle_then_stop,
            other_cluster,
        )
    finally:
        registry.close()


@contextmanager
def remote(root: Path) -> Iterator[Engine]:
    with ServerThread(root / "data") as server:
        api = KubeClient.from_kubeconfig(server.endpoint.kubeconfigs["host"])
        client = RemoteClient(api)
        counts = ChangeCounts()
        client.add_indexer("changes", counts.observe, None)
        others: list[RemoteClient] = []

        @contextmanager
        def other_cluster(name: str) -> Iterator[Client]:
            with ServerThread(root / name) as other:
                other_api = KubeClient.from_kubeconfig(other.endpoint.kubeconfigs["host"])
                others.append(RemoteClient(other_api, name, dispatcher=client.dispatcher))
                try:
                    yield others[-1]
                finally:
                    other_api.close()

        async def start() -> None:
            for each in (client, *others):
                await each.start()

        async def stop() -> None:
            for each in (*others, client):
                await each.stop()

        try:
            yield Engine("remote", client, CacheReads(client, counts), start, stop, other_cluster)
        finally:
            api.close()


@contextmanager
def _real_client(root: Path, name: str, dispatcher: Any = None) -> Iterator[RemoteClient]:
    """A real Kubernetes 1.36 control plane on ``root`` (tests/realkube.py's options),
    through RemoteClient, until exit."""
    from allot.kubeengine.cluster import start
    from tests.realkube import TEST_OPTIONS

    cluster = start(root / "data", port=0, options=TEST_OPTIONS)
    api = cluster.client()
    try:
        cluster.ready()
        client = RemoteClient(api, name, dispatcher=dispatcher)
        _install_crds(client)
        yield client
    finally:
        api.close()
        cluster.stop()


def _install_crds(client: RemoteClient, timeout: float = 30.0) -> None:
    """allot's kinds, as ``allot render`` writes them (the Tenant and Alert CRDs), served."""
    for crd in (tenant_crd(), alert_crd()):
        client.create(crd, field_manager=SERVER_FIELD_MANAGER)
    deadline = time.monotonic() + timeout
    for kind in ("Tenant", "Alert"):
        while True:
            try:
                client.list(kind)
                break
            except NotFound:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


@contextmanager
def real(root: Path) -> Iterator[Engine]:
    """Real Kubernetes (issue 19's engine); another cluster is another real control plane."""
    with _real_client(root / "host", "host") as client:
        counts = ChangeCounts()
        client.add_indexer("changes", counts.observe, None)
        others: list[RemoteClient] = []

        @contextmanager
        def other_cluster(name: str) -> Iterator[Client]:
            with _real_client(root / name, name, client.dispatcher) as other:
                others.append(other)
                yield other

        async def start() -> None:
            for each in (client, *others):
                await each.start()

        async def stop() -> None:
            for each in (*others, client):
                await each.stop()

        yield Engine("real", client, CacheReads(client, counts), start, stop, other_cluster)


ENGINES: dict[str, Callable[[Path], AbstractContextManager[Engine]]] = {
    "inprocess": inprocess,
    "remote": remote,
    "real": real,
}
