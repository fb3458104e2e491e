"""The NVIDIA driver's health check for a fleet: simulated XIDs, and real GPUs' events.

``allot fleet inject-xid NODE DEVICE XID`` (its command line in :mod:`allot.cli.fleethealth`,
which names no vendor) plays an NVML XID critical error on a simulated GPU through
:func:`inject`: the driver (gate ``NVMLDeviceHealthCheck``, as the platform on the data
directory runs it) republishes the node's slice with the device tainted
``gpu.nvidia.com/xid=<XID>`` (``NoSchedule``, or ``None`` for an XID it ignores;
``ADDITIONAL_XIDS_TO_IGNORE`` adds to those), and says what it wrote. With the gate off the
driver watches nothing: :func:`gate_off` says so rather than tainting. Both engines: it
writes through the API.

:func:`start_local_watch` is ``allot up``'s part for a fleet with this machine's GPUs and
the gate on: the NVML event loop of :mod:`allot.driver.nvmlhealth` in a daemon thread,
publishing each event's taint through a client of the host cluster.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from allot.client.errors import ClientError
from allot.client.protocol import Client
from allot.driver import nvml
from allot.driver.fleet import Fleet, expand
from allot.driver.gates import HEALTH_CHECK, enabled
from allot.driver.health import IGNORE_ENV, XID, HealthEvent, taint_for, xids_to_skip
from allot.driver.nvmlhealth import HealthMonitor, placements, watch
from allot.driver.publisher import Publisher, UnknownDevice
from allot.kube.client import Client as KubeClient
from allot.kube.errors import KubeError
from allot.kube.remote import RemoteClient

LOG = logging.getLogger("allot.driver.health")
INJECT = "inject-xid"
INJECT_HELP = f"play an NVML XID error on a simulated GPU (gate {HEALTH_CHECK})"
INJECT_DESCRIPTION = (
    "The driver's health check taints DEVICE on NODE with gpu.nvidia.com/xid=XID, as it "
    "does for a real GPU's XID critical error."
)


def add_inject_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("node", help="the node's name (kubectl get nodes)")
    parser.add_argument("device", help="the device's name in the node's slice (gpu-0, ...)")
    parser.add_argument("xid", type=_xid, help="the XID number (79: GPU fallen off the bus)")


def _xid(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"an XID is a whole number, not {text!r}")
    return int(text)


def gate_off(gates: Mapping[str, bool], data_dir: Path) -> str | None:
    """Why the driver on ``data_dir`` would not taint (its gate is off); None when it would."""
    if enabled(gates, HEALTH_CHECK):
        return None
    return (
        f"the driver's {HEALTH_CHECK} feature gate is off on {data_dir}: it watches no XIDs "
        f"and publishes no device taints (start the platform with --driver-feature-gates "
        f"{HEALTH_CHECK}=true)"
    )


def inject(client: Client, node: str, device: str, xid: int) -> str:
    """Taint ``device`` on ``node`` as the driver does for the XID; what it did, as a line.
    Raises ClientError, or UnknownDevice for a device the node's slices do not have."""
    event, skipped = HealthEvent(XID, (device,), xid), _skipped()
    taint = taint_for(event, skipped)
    text = f"{taint['key']}={taint.get('value', '')}:{taint['effect']}"
    if Publisher(client).taint(node, event, skipped) is None:
        return f"{node}/{device}: already tainted {text}"
    return f"{node}/{device}: tainted {text}"


def _skipped() -> frozenset[int]:
    return xids_to_skip(os.environ.get(IGNORE_ENV, ""))


def start_local_watch(
    connect: Callable[[], KubeClient], fleet: Fleet, gates: Mapping[str, bool]
) -> threading.Event | None:  # pragma: no cover - needs a GPU
    """The NVML event loop for the fleet's local node, when the gate is on: its stop.
    ``connect`` makes a client of the host cluster for each event's write."""
    local = [
        spec for spec in expand(fleet) if spec.pool in {p.name for p in fleet.pools if p.local}
    ]
    if not enabled(gates, HEALTH_CHECK) or not local:
        return None
    import pynvml

    node = local[0]
    monitor = HealthMonitor(pynvml, placements(node.gpus, nvml.mig_instance_ids))
    stop = threading.Event()
    skipped = _skipped()

    def publish(event: HealthEvent) -> None:
        client = connect()
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
