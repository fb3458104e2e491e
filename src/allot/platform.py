"""The composition root of the embedded platform: API server, controllers, fleet.

``build`` assembles an :class:`ApiServer` with the host control plane (resourceclaim
controller, scheduler, simulated node agent) registered to start with the server; the CLI's
``allot up``, the demo and the end-to-end tests all go through here, so they run the same
platform.
"""

from __future__ import annotations

from pathlib import Path

from allot.apiserver.app import ApiServer
from allot.apiserver.security import HOST_CLUSTER
from allot.controllers.claims import ClaimController
from allot.controllers.context import ControllerContext
from allot.controllers.nodeagent import DevicePreparer, SimulatedNodeAgent
from allot.controllers.runtime import ControllerManager
from allot.controllers.scheduler import Scheduler


def build(data_dir: Path) -> ApiServer:
    api = ApiServer(data_dir)
    context = ControllerContext(HOST_CLUSTER, api.store, api.handlers, api.clock)
    manager = ControllerManager(
        [
            ClaimController(context),
            Scheduler(context),
            SimulatedNodeAgent(context, DevicePreparer(data_dir / "cdi")),
        ]
    )
    api.store.add_listener(manager.on_event)

    async def start() -> None:
        manager.start()

    api.startup_hooks.append(start)
    api.shutdown_hooks.append(manager.stop)
    api.controllers = manager
    return api
