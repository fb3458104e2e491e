"""The engines the client-protocol tests run on, one factory each: ``inprocess`` (the
registry itself, :class:`allot.registry.inprocess.InProcessClient`) and ``remote`` (the
embedded HTTPS API server that ``allot up`` runs, through the official client:
:class:`allot.kube.remote.RemoteClient`). The ``engine`` fixture (tests/conftest.py) is
parametrised by :data:`ENGINES`; another engine (a real kube-apiserver) is one more
factory here, yielding an :class:`Engine` whose client speaks to it. Loopback only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from allot.apiserver.server import ServerThread
from allot.client.protocol import Client
from allot.cluster.controller import CacheReads, ChangeCounts
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


ENGINES: dict[str, Callable[[Path], AbstractContextManager[Engine]]] = {
    "inprocess": inprocess,
    "remote": remote,
}
