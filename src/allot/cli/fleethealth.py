"""The driver's health check from the command line: ``allot fleet inject-xid``, local GPUs.

What the command does, its help and its words are the NVIDIA driver's
(:mod:`allot.driver.healthcheck`): ``allot fleet inject-xid NODE DEVICE XID`` plays an XID
on a simulated GPU through the platform on the data directory, or says why the driver
would not (its gate off). ``start_local_watch`` is ``allot up``'s part for a fleet with
this machine's GPUs: the driver's event loop, writing through the host cluster's client.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from allot.client.errors import ClientError
from allot.driver import healthcheck
from allot.driver.files import data_dir_driver_gates
from allot.driver.fleet import Fleet
from allot.driver.publisher import UnknownDevice
from allot.kube.errors import KubeError
from allot.kube.remote import RemoteClient


def register(fleet_commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from allot.cli.options import add_data_dir

    inject = fleet_commands.add_parser(
        healthcheck.INJECT,
        help=healthcheck.INJECT_HELP,
        description=healthcheck.INJECT_DESCRIPTION,
    )
    healthcheck.add_inject_arguments(inject)
    add_data_dir(inject)
    inject.set_defaults(run=run_inject_xid)


def run_inject_xid(args: argparse.Namespace) -> int:
    from allot.cli.up import platform_client

    refusal = healthcheck.gate_off(data_dir_driver_gates(args.data_dir), args.data_dir)
    if refusal is not None:
        print(f"error: {refusal}", file=sys.stderr)
        return 1
    try:
        client = platform_client(args.data_dir)
        try:
            print(healthcheck.inject(RemoteClient(client), args.node, args.device, args.xid))
        finally:
            client.close()
    except (KubeError, ClientError, UnknownDevice) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


def start_local_watch(
    kubeconfig: Path, fleet: Fleet, gates: dict[str, bool]
) -> threading.Event | None:  # pragma: no cover - needs a GPU
    """The driver's event loop for the fleet's local GPUs, when its gate is on: its stop."""
    from allot.cli.up import host_client

    return healthcheck.start_local_watch(lambda: host_client(kubeconfig), fleet, gates)
