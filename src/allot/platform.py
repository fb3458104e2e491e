"""The composition root of the embedded platform: API server, controllers, fleet.

``build`` assembles an :class:`ApiServer` with the host control plane (resourceclaim
controller, scheduler, node agent with a simulated or process runtime) registered to start
with the server; the CLI's ``allot up``, the demo and the end-to-end tests all go through
here, so they run the same platform.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from allot.apiserver.app import ApiServer
from allot.apiserver.security import HOST_CLUSTER
from allot.controllers.claims import ClaimController
from allot.controllers.context import ControllerContext
from allot.controllers.nodeagent import DevicePreparer, NodeAgent
from allot.controllers.runtime import ControllerManager
from allot.controllers.runtimes import ProcessRuntime, Runtime, SimulatedRuntime
from allot.controllers.scheduler import Scheduler

RUNTIMES = ("simulated", "process")


def build(
    data_dir: Path,
    runtime: str = "simulated",
    driver_gates: Mapping[str, bool] | None = None,
    placement: str = "first-fit",
) -> ApiServer:
    """The platform on ``data_dir``; ``runtime`` is how pods run (see ``RUNTIMES``);
    ``driver_gates`` are the NVIDIA driver's feature gates (``MPSSupport``, ...);
    ``placement`` the scheduler's node order (``allot.allocator.placement``)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r} (known: {', '.join(RUNTIMES)})")
    api = ApiServer(data_dir)
    pods: Runtime = SimulatedRuntime()
    if runtime == "process":
        processes = ProcessRuntime(api.logs_dir / HOST_CLUSTER, data_dir / "pods" / HOST_CLUSTER)
        api.shutdown_hooks.append(processes.stop_all)
        pods = processes
    context = ControllerContext(HOST_CLUSTER, api.store, api.handlers, api.clock)
    manager = ControllerManager(
        [
            ClaimController(context),
            Scheduler(context, placement),
            NodeAgent(context, DevicePreparer(data_dir / "cdi"), pods, driver_gates),
        ]
    )
    api.store.add_listener(manager.on_event)

    async def start() -> None:
        manager.start()

    api.startup_hooks.append(start)
    api.shutdown_hooks.append(manager.stop)
    api.controllers = manager
    return api
