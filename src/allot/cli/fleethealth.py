"""The driver's health check from the command line: simulated XIDs, and real GPUs' events.

``allot fleet inject-xid NODE DEVICE XID`` plays an NVML XID critical error on a simulated
GPU: the driver (gate ``NVMLDeviceHealthCheck``, as the platform on the data directory runs
it) republishes the node's slice with the device tainted ``gpu.nvidia.com/xid=<XID>``
(``NoSchedule``, or ``None`` for an XID it ignores; ``ADDITIONAL_XIDS_TO_IGNORE`` adds to
those), and says what it wrote. With the gate off the driver watches nothing, and the
command says so rather than tainting. Both engines: it writes through the API.

``start_local_watch`` is ``allot up``'s part for a fleet with this machine's GPUs and the
gate on: the NVML event loop of :mod:`allot.driver.nvmlhealth` in a daemon thread,
publishing each event's taint through the host cluster's client.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from pathlib import Path

from allot.client.errors import ClientError
from allot.driver import nvml
from allot.driver.files import data_dir_driver_gates
from allot.driver.fleet import Fleet, expand
from allot.driver.gates import HEALTH_CHECK, enabled
from allot.driver.health import IGNORE_ENV, XID, HealthEvent, xids_to_skip
from allot.driver.nvmlhealth import HealthMonitor, placements, watch
from allot.driver.publisher import Publisher, UnknownDevice
from allot.kube.errors import KubeError
from allot.kube.remote import RemoteClient

LOG = logging.getLogger("allot.driver.health")


def register(fleet_commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from allot.cli.options import add_data_dir

    inject = fleet_commands.add_parser(
        "inject-xid",
        help="play an NVML XID error on a simulated GPU (gate NVMLDeviceHealthCheck)",
        description="The driver's health check taints DEVICE on NODE with "
        "gpu.nvidia.com/xid=XID, as it does for a real GPU's XID critical error.",
    )
    inject.add_argument("node", help="the node's name (kubectl get nodes)")
    inject.add_argument("device", help="the device's name in the node's slice (gpu-0, ...)")
    inject.add_argument("xid", type=_xid, help="the XID number (79: GPU fallen off the bus)")
    add_data_dir(inject)
    inject.set_defaults(run=run_inject_xid)


def _xid(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"an XID is a whole number, not {text!r}")
    return int(text)


def run_inject_xid(args: argparse.Namespace) -> int:
    from allot.cli.up import platform_client

    if not enabled(data_dir_driver_gates(args.data_dir), HEALTH_CHECK):
        print(
            f"error: the driver's {HEALTH_CHECK} feature gate is off on {args.data_dir}: it "
            "watches no XIDs and publishes no device taints (start the platform with "
            f"--driver-feature-gates {HEALTH_CHECK}=true)",
            file=sys.stderr,
        )
        return 1
    event = HealthEvent(XID, (args.device,), args.xid)
    try:
        client = platform_client(args.data_dir)
        try:
            taint = Publisher(RemoteClient(client)).taint(args.node, event, _skipped())
        finally:
            client.close()
    except (KubeError, ClientError, UnknownDevice) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if taint is None:
        print(f"{args.node}/{args.device}: already tainted {_text(event, _skipped())}")
    else:
        print(f"{args.node}/{args.device}: tainted {_text(event, _skipped())}")
    return 0


def _skipped() -> frozenset[int]:
    return xids_to_skip(os.environ.get(IGNORE_ENV, ""))


def _text(event: HealthEvent, skipped: frozenset[int]) -> str:
    from allot.driver.health import taint_for

    taint = taint_for(event, skipped)
    return f"{taint['key']}={taint.get('value', '')}:{taint['effect']}"


def start_local_watch(
    kubeconfig: Path, fleet: Fleet, gates: dict[str, bool]
) -> threading.Event | None:  # pragma: no cover - needs a GPU
    """The NVML event loop for the fleet's local node, when the gate is on: its stop."""
    local = [
        spec for spec in expand(fleet) if spec.pool in {p.name for p in fleet.pools if p.local}
    ]
    if not enabled(gates, HEALTH_CHECK) or not local:
        return None
    import pynvml

    from allot.cli.up import host_client

    node = local[0]
    monitor = HealthMonitor(pynvml, placements(node.gpus, nvml.mig_instance_ids))
    stop = threading.Event()
    skipped = _skipped()

    def publish(event: HealthEvent) -> None:
        client = host_client(kubeconfig)
        try:
            Publisher(RemoteClient(client)).taint(node.name, event, skipped)
        except (KubeError, ClientError, UnknownDevice) as err:
            LOG.warning("health event %s for %s not published: %s", event.kind, node.name, err)
        finally:
            client.close()

    threading.Thread(
        target=watch, args=(monitor, publish, stop), name="nvml-health", daemon=True
    ).start()
    return stop
