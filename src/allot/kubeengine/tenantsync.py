"""allot's tenant sync between real API servers: each real tenant's kube-apiserver and the
host's, for ``allot up --engine kubernetes``.

The same controller as the embedded engine's (:class:`allot.tenancy.sync.TenantSync`,
unchanged), on the client protocol's remote side: a :class:`RemoteClient` of the host and
one of each Ready tenant (its administrator's kubeconfig), their informers' changes on the
host client's dispatcher, the host's DRA index fed by its informers, and a
:class:`ControllerManager` running the sync, all on an asyncio loop in a thread of its own
(the up process's main thread keeps the processes, :mod:`allot.kubeengine.tenants`). A
tenant is added when its control plane is Ready, given new entitled classes when the host's
DeviceClasses change them, and removed when it is deleted or Unhealthy; a tenant API
server that stops answering is retried by its informers with back-off.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from allot.api.tenancy import Tenant
from allot.controllers.runtime import ControllerManager
from allot.dra import DraIndex
from allot.kube.client import Client as KubeClient
from allot.kube.remote import RemoteClient
from allot.kubeengine.cluster import RealCluster
from allot.registry.kubeconfigs import own_context
from allot.tenancy.directory import TenantDirectory, TenantEntry
from allot.tenancy.sync import TenantSync

DRA = (
    "resourceslices.resource.k8s.io",
    "deviceclasses.resource.k8s.io",
    "resourceclaims.resource.k8s.io",
)
START_SECONDS = 60.0


class RealTenantSync:
    """The sync's loop, thread and clients; its methods are called from the main thread."""

    def __init__(self, cluster: RealCluster) -> None:
        self.data_dir = cluster.data_dir
        self.api = cluster.client()
        self.host = RemoteClient(self.api)
        self.index = DraIndex("host")
        self.host.add_indexer("dra-index", self.index.observe, DRA)
        self.directory = TenantDirectory()
        self.clients: dict[str, RemoteClient] = {}
        self.sync = TenantSync(self.host, self._client, self.directory, self.index)
        self.sync.inform()
        self.manager = ControllerManager([self.sync])
        self.manager.subscribe(self.host.dispatcher)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="tenant-sync")

    def start(self) -> None:
        self.thread.start()
        self._call(self._start()).result(START_SECONDS)

    async def _start(self) -> None:
        await self.host.start()
        self.index.refresh(
            self.host.list("ResourceSlice"),
            self.host.list("DeviceClass"),
            self.host.list("ResourceClaim"),
        )
        self.manager.start()

    def _client(self, tenant: str) -> RemoteClient:
        path = self.data_dir / "kubeconfigs" / f"{tenant}.yaml"
        api = KubeClient.from_kubeconfig(Path(path), own_context(tenant))
        client = RemoteClient(api, tenant, dispatcher=self.host.dispatcher)
        self.clients[tenant] = client
        return client

    def add(self, tenant: Tenant, entitled: list[str]) -> None:
        """Sync ``tenant`` (its API server Ready) from now on."""
        self._call(self._add(tenant, entitled))

    async def _add(self, tenant: Tenant, entitled: list[str]) -> None:
        name = tenant.metadata.name or ""
        self.directory.put(TenantEntry(tenant, entitled))
        client = self.sync.context(name)
        assert isinstance(client, RemoteClient)
        await client.start()
        self._resync(name)

    def entitle(self, tenant: Tenant, entitled: list[str]) -> None:
        """The tenant's classes changed (the host's DeviceClasses): resync it."""
        self.loop.call_soon_threadsafe(self._entitle, tenant, entitled)

    def _entitle(self, tenant: Tenant, entitled: list[str]) -> None:
        if self.directory.is_tenant(tenant.metadata.name or ""):
            self.directory.put(TenantEntry(tenant, entitled))
            self._resync(tenant.metadata.name or "")

    def _resync(self, name: str) -> None:
        for worker in self.manager.workers:
            worker.add(("resync", name))

    def remove(self, name: str) -> None:
        """Stop syncing tenant ``name`` (deleted, or its API server down)."""
        self._call(self._remove(name))

    async def _remove(self, name: str) -> None:
        self.directory.drop(name)
        self.sync.forget(name)
        client = self.clients.pop(name, None)
        if client is not None:
            await asyncio.gather(*(i.stop() for i in client.informers.values()))
            client.api.close()

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._call(self._stop()).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.api.close()

    async def _stop(self) -> None:
        await self.manager.stop()
        for name in list(self.clients):
            await self._remove(name)
        await self.host.stop()

    def _call(self, work: Coroutine[Any, Any, None]) -> Future[None]:
        future = asyncio.run_coroutine_threadsafe(work, self.loop)
        future.add_done_callback(_report)
        return future


def _report(future: Future[None]) -> None:
    error = None if future.cancelled() else future.exception()
    if error is not None:
        print(f"warning: the tenant sync: {error}", file=sys.stderr, flush=True)
