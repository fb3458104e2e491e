"""The composition root of the embedded platform: API server, controllers, tenancy.

``build`` assembles a :class:`Platform`: the :class:`~allot.registry.clusters.Registry`
(the write path, with its admission chain assembled here, in one place), the
:class:`ApiServer` that serves it, and the host control plane (resourceclaim
controller, scheduler, node agent with a simulated or process runtime, quota status) and
tenancy (the tenant controller, the sync, the fair-sharing admission controller whose
read model ``Platform.queueing.state`` the operations layer reads, the tenant clusters'
admission guard, the
entitlement re-checks of revoked classes in the scheduler and host admission, logs of
tenant pods served from their host twins) registered to start with the server; and the
host's DRA index (:mod:`allot.dra`), kept in step with the store and read by the
scheduler, the sync, capacity and audit. No controller runs inside a store write: the
store hands its committed changes to one dispatcher (:mod:`allot.client.dispatch`),
which gives them to each controller on its own; the CLI's
``allot up``, the demo and the end-to-end tests all go through here, so they run the same
platform.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from allot.api.quantity import Quantity
from allot.apiserver.app import ApiServer
from allot.cel import SelectorCompiler
from allot.client.dispatch import Dispatcher
from allot.controllers.claims import ClaimController
from allot.controllers.clusterroleaggregation import MANAGER as AGGREGATION_MANAGER
from allot.controllers.clusterroleaggregation import ClusterRoleAggregation
from allot.controllers.computedomains import ComputeDomainController
from allot.controllers.context import ControllerContext
from allot.controllers.crdstatus import CrdStatusController
from allot.controllers.cronjobs import CronJobController
from allot.controllers.daemonset import DaemonSetController
from allot.controllers.deployment import DeploymentController
from allot.controllers.disruption import DisruptionController
from allot.controllers.endpoints import EndpointsController, EndpointSliceController
from allot.controllers.ephemeral import EphemeralVolumeController
from allot.controllers.eventretention import EventRetention
from allot.controllers.jobs import JobController
from allot.controllers.kubernetesservice import KubernetesService
from allot.controllers.limits import DEFAULT_POD_PIDS, ContainerLimits
from allot.controllers.nodeagent import DevicePreparer, NodeAgent
from allot.controllers.podgc import PodGarbageCollector
from allot.controllers.quota import QuotaStatus
from allot.controllers.replicaset import REPLICATION_CONTROLLER, ReplicaSetController
from allot.controllers.runtime import Controller, ControllerManager
from allot.controllers.runtimes import (
    DEFAULT_JOB_SECONDS,
    ProcessRuntime,
    Runtime,
    SimulatedRuntime,
)
from allot.controllers.sandbox import Sandbox
from allot.controllers.scheduler import Scheduler
from allot.controllers.serviceaccounts import MANAGER as MANAGER_ACCOUNTS
from allot.controllers.serviceaccounts import ServiceAccounts
from allot.controllers.sharing import SharingApplier
from allot.controllers.statefulset import StatefulSetController
from allot.controllers.ttl import TtlAfterFinishedController
from allot.controllers.volumes import PersistentVolumeController
from allot.controllers.workloads import ClusterContexts
from allot.dra import DraIndex
from allot.driver import nvml
from allot.driver.devicenodes import DeviceNodes
from allot.ops.dashboard import dashboard_routes
from allot.ops.rules import AlertSettings
from allot.ops.service import Operations
from allot.registry import HOST_CLUSTER
from allot.registry.clusters import Registry
from allot.registry.inprocess import InProcessClient, StoreSource
from allot.registry.resources import by_kind
from allot.tenancy import names
from allot.tenancy.controller import TenantController
from allot.tenancy.directory import TenantDirectory
from allot.tenancy.guard import TenantGuard
from allot.tenancy.queueing import QueueingController
from allot.tenancy.revocation import Entitlements, RevokedClaimsAdmission
from allot.tenancy.sync import TenantSync

RUNTIMES = ("simulated", "process")
DRA_RESOURCES = (
    "resourceslices.resource.k8s.io",
    "deviceclasses.resource.k8s.io",
    "resourceclaims.resource.k8s.io",
)


@dataclass(frozen=True)
class Platform:
    """What :func:`build` assembled: the write path, its HTTP face and the control plane."""

    registry: Registry
    server: ApiServer
    controllers: ControllerManager
    operations: Operations
    scheduler: Scheduler
    queueing: QueueingController


def build(
    data_dir: Path,
    runtime: str = "simulated",
    driver_gates: Mapping[str, bool] | None = None,
    placement: str = "first-fit",
    alert_settings: AlertSettings | None = None,
    clock: Callable[[], dt.datetime] | None = None,
    sandboxed: bool = True,
    job_seconds: float = DEFAULT_JOB_SECONDS,
    pod_pids_limit: int = DEFAULT_POD_PIDS,
) -> Platform:
    """The platform on ``data_dir``; ``runtime`` is how pods run (see ``RUNTIMES``);
    ``driver_gates`` are the NVIDIA driver's feature gates (``MPSSupport``, ...);
    ``placement`` the scheduler's node order (``allot.allocator.placement``). The process
    runtime confines every container in a bubblewrap sandbox unless ``sandboxed`` is False
    (``SandboxUnavailable`` where bwrap is missing). ``job_seconds`` is how long a
    simulated Job pod runs before it succeeds; ``pod_pids_limit`` the most processes a
    pod of the process runtime may run (0: no limit)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r} (known: {', '.join(RUNTIMES)})")
    sandbox = Sandbox.find(hidden=[data_dir]) if runtime == "process" and sandboxed else None
    registry = Registry(data_dir, clock=clock) if clock else Registry(data_dir)
    server = ApiServer(registry)
    device_nodes = DeviceNodes(mig_ids=nvml.mig_instance_ids) if runtime == "process" else None
    pods = _runtime(registry, server, runtime, sandbox, job_seconds, pod_pids_limit, device_nodes)
    sharing = SharingApplier(
        data_dir / "mps",
        (lambda uuid: uuid in device_nodes.gpus()) if device_nodes else lambda uuid: False,
        sandbox.bwrap if sandbox else None,
    )
    server.shutdown_hooks.append(_released(sharing))
    context = ControllerContext(HOST_CLUSTER, registry.store, registry.handlers, registry.clock)
    dispatcher = Dispatcher()
    StoreSource(registry.store, dispatcher)  # committed writes, handed over after the commit
    directory = TenantDirectory()
    # the host's pods end by the node agent, a tenant's once the sync saw their twins go
    registry.handlers.graceful_pods_in = lambda c: c == HOST_CLUSTER or directory.is_tenant(c)
    index = _dra_index(context, registry.admission.compiler)
    entitlements = Entitlements(context.client)
    registry.assemble(
        [
            *registry.mutating_plugins(),  # pods carry their priority into the guard's twin
            # tenants' writes, before any other
            TenantGuard(registry.handlers, directory, registry.retained_bytes),
            *registry.standard_plugins(),
            RevokedClaimsAdmission(entitlements),
        ]
    )
    server.log_source = _tenant_logs(directory)
    clients = _clients(context, dispatcher)
    sync = TenantSync(clients(HOST_CLUSTER), clients, directory, index)
    registry.quota.pending = lambda cluster, namespace, creating: [
        (by_kind(kind), twin) for kind, twin in sync.pending_twins(cluster, namespace, creating)
    ]
    queueing = QueueingController(context, directory, index)
    ops = Operations(
        registry,
        context,
        directory,
        sync,
        alert_settings or AlertSettings(),
        index,
        queueing.state.summary,
    )
    server.host_endpoints.update(ops.endpoints())
    server.pages.extend(dashboard_routes(registry, ops))
    scheduler = Scheduler(
        context,
        placement,
        tenant_memory_limit(directory),
        ops.metrics.allocator_seconds.observe,
        entitlements,
        index,
    )
    manager = ControllerManager(
        [
            TenantController(registry, context, directory),
            sync,
            queueing,
            QuotaStatus(context),
            ClaimController(context, pods.holds),
            scheduler,
            NodeAgent(
                context,
                DevicePreparer(data_dir / "cdi", sharing),
                pods,
                driver_gates,
                names.origin_of,
            ),
            PodGarbageCollector(context),
            ComputeDomainController(
                ClusterContexts(context, "compute-domain-controller", directory.is_tenant)
            ),
            EventRetention(context),
            ops.recorder,
            KubernetesService(
                ClusterContexts(context, "kube-apiserver", directory.is_tenant),
                lambda: urlsplit(registry.url).port if registry.url else None,
            ),
            *_workload_controllers(context, directory),
        ],
        observe=ops.metrics.observe_reconcile,
    )
    manager.subscribe(dispatcher)
    _start_with_server(server, manager, ops)
    return Platform(registry, server, manager, ops, scheduler, queueing)


def _workload_controllers(
    context: ControllerContext, directory: TenantDirectory
) -> list[Controller]:
    """kube-controller-manager's workload controllers (apps/v1, batch/v1,
    ReplicationControllers, the default ServiceAccounts, PodDisruptionBudget status,
    Endpoints and EndpointSlices, volume binding and provisioning) and the
    apiextensions controllers' CRD status, one instance each for the host and every tenant
    cluster; in a tenant their writes are admitted as the tenant's ``<name>`` service account."""

    def contexts(name: str) -> ClusterContexts:
        return ClusterContexts(context, name, directory.is_tenant)

    return [
        ServiceAccounts(contexts(MANAGER_ACCOUNTS)),
        DeploymentController(contexts("deployment-controller")),
        ReplicaSetController(contexts("replicaset-controller")),
        ReplicaSetController(contexts("replication-controller"), REPLICATION_CONTROLLER),
        DaemonSetController(contexts("daemon-set-controller")),
        PersistentVolumeController(contexts("persistent-volume-binder"), directory.is_tenant),
        EphemeralVolumeController(contexts("ephemeral-volume-controller")),
        StatefulSetController(contexts("statefulset-controller")),
        JobController(contexts("job-controller")),
        CronJobController(contexts("cronjob-controller")),
        TtlAfterFinishedController(contexts("ttl-after-finished-controller")),
        DisruptionController(contexts("disruption-controller")),
        EndpointsController(contexts("endpoint-controller")),
        EndpointSliceController(contexts("endpointslice-controller")),
        CrdStatusController(contexts("apiextensions-controllers")),
        ClusterRoleAggregation(contexts(AGGREGATION_MANAGER)),
    ]


def _dra_index(context: ControllerContext, compiler: SelectorCompiler) -> DraIndex:
    """The host's DRA index, filled from the store and then kept in step with it as an
    indexer (:meth:`~allot.registry.inprocess.InProcessClient.add_indexer`), so it has
    taken every write before any controller is handed one. It shares the admission's
    compiler (which the class warnings' lint uses too): one SelectorCompiler per
    platform."""
    index = DraIndex(HOST_CLUSTER, compiler)
    index.refresh(
        context.list("ResourceSlice"), context.list("DeviceClass"), context.list("ResourceClaim")
    )
    context.client.add_indexer("dra-index", index.observe, DRA_RESOURCES)
    return index


def _runtime(
    registry: Registry,
    server: ApiServer,
    runtime: str,
    sandbox: Sandbox | None,
    job_seconds: float = DEFAULT_JOB_SECONDS,
    pod_pids_limit: int = DEFAULT_POD_PIDS,
    device_nodes: DeviceNodes | None = None,
) -> Runtime:
    """How the node agent runs pods: simulated, or as (sandboxed) local processes."""
    logs = registry.logs_dir / HOST_CLUSTER
    if runtime != "process":
        return SimulatedRuntime(logs, job_seconds)
    processes = ProcessRuntime(
        logs,
        registry.data_dir / "pods" / HOST_CLUSTER,
        sandbox,
        tenant_namespace=lambda namespace: names.tenant_of_namespace(namespace) is not None,
        device_nodes=device_nodes,
        limits=ContainerLimits(pod_pids=pod_pids_limit),
    )
    server.shutdown_hooks.append(processes.stop_all)
    return processes


def _released(sharing: SharingApplier) -> Callable[[], Awaitable[None]]:
    """The shutdown hook that stops every MPS daemon the platform started."""

    async def release() -> None:
        await asyncio.to_thread(sharing.release_all)

    return release


def _start_with_server(api: ApiServer, manager: ControllerManager, ops: Operations) -> None:
    tasks: list[asyncio.Task[None]] = []

    async def start() -> None:
        manager.start()
        tasks.append(asyncio.create_task(ops.alerts.run(), name="alerts"))

    async def stop() -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await manager.stop()
        ops.close()

    api.startup_hooks.append(start)
    api.shutdown_hooks.append(stop)


def _clients(
    context: ControllerContext, dispatcher: Dispatcher
) -> Callable[[str], InProcessClient]:
    """A cluster by name in process, for the controllers on the client protocol (the
    platform's one dispatcher carries every cluster's changes)."""
    return lambda cluster: InProcessClient(
        cluster, context.store, context.handlers, context.clock, dispatcher=dispatcher
    )


def _tenant_logs(directory: TenantDirectory) -> Callable[[str, str, str], tuple[str, str, str]]:
    """A tenant pod's logs are its host twin's."""

    def source(cluster: str, namespace: str, name: str) -> tuple[str, str, str]:
        if not directory.is_tenant(cluster):
            return cluster, namespace, name
        return HOST_CLUSTER, names.host_namespace(cluster), names.host_name(name, namespace)

    return source


def tenant_memory_limit(directory: TenantDirectory) -> Callable[[str], tuple[str, Quantity] | None]:
    """The GPU-memory quota of the tenant that owns a host namespace (none in fair-sharing
    mode: GPU memory is then a share the admission controller counts, not a hard limit)."""

    def limit(namespace: str) -> tuple[str, Quantity] | None:
        tenant = names.tenant_of_namespace(namespace)
        entry = directory.get(tenant) if tenant else None
        quota = entry.tenant.spec.quota if entry else None
        if entry is None or quota is None or quota.gpu_memory is None:
            return None
        if entry.tenant.spec.sharing is not None:
            return None
        return f"tenant {entry.name!r}", quota.gpu_memory

    return limit
