"""``allot up`` and ``allot kubeconfig``: run the embedded platform, print kubeconfigs.

``allot up [--data-dir DIR] [--port N]`` serves the host cluster over HTTPS on loopback
in the foreground until Ctrl-C, after printing where each cluster's kubeconfig is;
``--engine kubernetes`` runs real Kubernetes 1.36 instead (:mod:`allot.cli.kubeup`), and
neither engine starts on a data directory the other made (:mod:`allot.kubeengine.datadir`).
Restarting on the same data directory keeps every object; a second ``allot up`` on a
directory that is being served is refused (``allot.apiserver.lock``). Everything is checked
before anything is written: flags, the fleet, NVML for local GPUs, the lock, the port.
``allot kubeconfig [CLUSTER]`` prints a cluster's kubeconfig (the server must have run once
on that data directory). ``platform_client`` is how every other command reaches the
platform, with one message when it is not running.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from allot.apiserver.lock import DataDirLocked, DataDirUnwritable, running
from allot.cli import fleethealth
from allot.cli.options import add_data_dir, quota_percent
from allot.client.errors import ClientError
from allot.controllers.limits import DEFAULT_POD_PIDS, ContainerLimits
from allot.controllers.runtimes import DEFAULT_JOB_SECONDS
from allot.controllers.sandbox import Sandbox, SandboxUnavailable
from allot.driver.files import data_dir_driver_gates, data_dir_fleet, save_driver_gates, save_fleet
from allot.driver.fleet import Fleet, FleetError
from allot.driver.gates import (
    PASSTHROUGH,
    PUBLISHING,
    check_fleet_gates,
    check_gates,
    check_shares_option,
    enabled,
)
from allot.driver.localgpus import LocalGpusUnavailable, check_available
from allot.driver.publisher import Publisher
from allot.kube.client import Client
from allot.kube.errors import KubeError
from allot.kube.remote import RemoteClient
from allot.kubeengine.datadir import (
    EMBEDDED,
    ENGINES,
    KUBERNETES,
    EngineMismatch,
    check_engine,
    engine_of,
)
from allot.ops.rules import AlertSettings
from allot.registry.clusters import HOST_CLUSTER, Tokens
from allot.registry.kubeconfigs import own_context
from allot.store.errors import Unwritable
from allot.vendors import gpu_drivers

DEFAULT_PORT = 6443
_GATED = next(f for f in gpu_drivers() if f.gates)  # whose gates --driver-feature-gates sets
PORT_ENV = "ALLOT_PORT"  # the default of --port, read when the command runs
KUBECONFIG_WAIT_SECONDS = 60.0
EMBEDDED_ONLY = (
    "runtime",
    "unsandboxed",
    "pod_pids_limit",
    "placement",
    "alert_pending_after",
    "alert_quota_percent",
)
"""``allot up``'s options that only the embedded engine takes (``--engine kubernetes``
refuses each one set to other than its default)."""


def register(subparsers: Any) -> None:
    up = subparsers.add_parser(
        "up",
        help="run the embedded platform (host cluster) on loopback",
        description="Serve the host cluster over HTTPS on 127.0.0.1 until Ctrl-C.",
    )
    add_data_dir(up)
    up.add_argument(
        "--port",
        type=port_number,
        default=None,
        help="HTTPS port (0: pick a free one; the banner and kubeconfigs show it; "
        f"default: ${PORT_ENV}, else {DEFAULT_PORT})",
    )
    up.add_argument("--host", default="127.0.0.1", help="a loopback address (127.0.0.1 or ::1)")
    up.add_argument(
        "--engine",
        choices=ENGINES,
        default=EMBEDDED,
        help="embedded: allot's own API server and control plane; kubernetes: real "
        "Kubernetes 1.36 (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, "
        "kwok for the nodes) from `make kube` or $ALLOT_KUBE_BIN",
    )
    up.add_argument(
        "--fleet",
        type=Path,
        default=None,
        help="fleet file (node pools and GPUs); default: the saved one, else seed 000's "
        "two A100 pools and a CPU node",
    )
    up.add_argument(
        "--runtime",
        choices=("simulated", "process"),
        default="simulated",
        help="how pods run: simulated (no processes; any image) or process (each "
        "container's command as a local process in a bubblewrap sandbox, with exactly its "
        "claimed devices)",
    )
    up.add_argument(
        "--unsandboxed",
        action="store_true",
        help="with --runtime process: run pods as plain processes of allot's user, with "
        "access to its files, tokens and every GPU (no isolation; for a machine without "
        "bubblewrap and a single trusted user)",
    )
    up.add_argument(
        "--pod-pids-limit",
        type=int,
        default=DEFAULT_POD_PIDS,
        metavar="N",
        help="with --runtime process: the most processes one pod may run, as the kubelet's "
        "podPidsLimit (0: no limit); the banner says how it is enforced here",
    )
    up.add_argument(
        "--simulated-job-seconds",
        type=float,
        default=DEFAULT_JOB_SECONDS,
        metavar="SECONDS",
        help="with --runtime simulated: how long a Job's pod (restartPolicy Never or "
        "OnFailure) runs before it succeeds (other pods run until stopped)",
    )
    up.add_argument(
        "--placement",
        choices=("first-fit", "pack"),
        default="first-fit",
        help="which feasible node a pod gets: first-fit (by name) or pack (fewest free "
        "devices first); `allot simulate --placement` makes the same choice",
    )
    up.add_argument(
        "--driver-feature-gates",
        default="",
        metavar="GATE=BOOL,...",
        help=f"the {_GATED.vendor} driver's feature gates ({', '.join(_GATED.gates)}), e.g. "
        "TimeSlicingSettings=true,MPSSupport=true (alpha gates off by default, as in the "
        f"driver; --engine kubernetes takes only {', '.join(sorted(PUBLISHING))})",
    )
    up.add_argument(
        "--alert-pending-after",
        default="5m",
        metavar="DURATION",
        help="raise an alert for a claim unallocated longer than this (90s, 5m, 1h)",
    )
    up.add_argument(
        "--alert-quota-percent",
        type=quota_percent,
        default=90,
        help="raise an alert when a tenant uses this share of a quota",
    )
    up.set_defaults(
        run=run_up,
        embedded_defaults={option: up.get_default(option) for option in EMBEDDED_ONLY},
    )
    fleet = subparsers.add_parser("fleet", help="change the simulated fleet")
    fleet_commands = fleet.add_subparsers(dest="fleet_command", metavar="COMMAND", required=True)
    scale = fleet_commands.add_parser("scale", help="set the number of nodes of a pool")
    scale.add_argument("pool", help="the pool's name in the fleet file")
    scale.add_argument("nodes", type=int, help="the number of nodes it should have")
    add_data_dir(scale)
    scale.set_defaults(run=run_fleet_scale)
    fleethealth.register(fleet_commands)
    kubeconfig = subparsers.add_parser("kubeconfig", help="print a cluster's kubeconfig")
    kubeconfig.add_argument(
        "cluster", nargs="?", default="host", help="host, or a tenant's name (default: host)"
    )
    shown = kubeconfig.add_mutually_exclusive_group()
    shown.add_argument(
        "--path", action="store_true", help="print the kubeconfig's path (export KUBECONFIG=...)"
    )
    shown.add_argument(
        "--token", action="store_true", help="print the cluster's bearer token (the dashboard's)"
    )
    kubeconfig.add_argument(
        "--wait",
        nargs="?",
        type=float,
        const=KUBECONFIG_WAIT_SECONDS,
        default=0.0,
        metavar="SECONDS",
        help="wait until the platform serves the cluster (after `allot up &`), at most "
        f"SECONDS (default without this flag: no wait; with it alone: "
        f"{KUBECONFIG_WAIT_SECONDS:.0f})",
    )
    add_data_dir(kubeconfig)
    kubeconfig.set_defaults(run=run_kubeconfig)


def port_number(text: str) -> int:
    """A TCP port, 0 to 65535 (``--port``'s type: argparse names the flag)."""
    if not text.strip().isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError("expected a port number from 0 to 65535")
    return int(text)


def default_port() -> int:
    """``$ALLOT_PORT``, else 6443; ValueError for a value that is not a port."""
    text = os.environ.get(PORT_ENV, "").strip()
    if not text:
        return DEFAULT_PORT
    try:
        return port_number(text)
    except argparse.ArgumentTypeError as err:
        raise ValueError(f"{PORT_ENV}={text!r}: {err}") from None


def parse_seconds(text: str) -> int:
    """``90s``, ``5m``, ``1h`` as seconds; ValueError names the flag."""
    units = {"s": 1, "m": 60, "h": 3600}
    number, unit = text[:-1], text[-1:]
    if unit not in units or not number.isdigit():
        raise ValueError(f"--alert-pending-after: {text!r} is not a duration like 90s, 5m or 1h")
    return int(number) * units[unit]


def _gates(text: str) -> dict[str, bool]:
    """``A=true,B=false`` as feature gates; ValueError names the bad entry."""
    gates = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = entry.partition("=")
        if value.lower() not in ("true", "false") or not name:
            raise ValueError(f"--driver-feature-gates: {entry!r} is not GATE=true or GATE=false")
        gates[name] = value.lower() == "true"
    check_gates(gates)
    return gates


def _check_sandbox(args: argparse.Namespace) -> None:
    """Refuse an unconfined process runtime unless asked for; say what pods run in."""
    if args.runtime != "process":
        return
    if args.unsandboxed:
        print(
            "warning: --unsandboxed: pods run as plain processes of this user, with access "
            "to the data directory's tokens and kubeconfigs and to every GPU of this machine; "
            + ContainerLimits.describe(pod_pids=args.pod_pids_limit, sandboxed=False),
            file=sys.stderr,
            flush=True,
        )
        return
    Sandbox.find(hidden=[args.data_dir])
    limits = ContainerLimits.describe(pod_pids=args.pod_pids_limit)
    print(f"pods run sandboxed (bubblewrap); {limits}", flush=True)


def run_up(args: argparse.Namespace) -> int:
    from allot.apiserver.app import ApiServer
    from allot.apiserver.server import Endpoint, check_loopback, serve
    from allot.platform import build as build_platform

    try:
        gates = _gates(args.driver_feature_gates)  # before anything is written
        settings = AlertSettings(
            pending_claim_seconds=parse_seconds(args.alert_pending_after),
            quota_usage_percent=args.alert_quota_percent,
        )
        check_loopback(args.host)
        if args.port is None:
            args.port = default_port()
        if args.unsandboxed and args.runtime != "process":
            raise ValueError("--unsandboxed applies to --runtime process only")
        fleet = data_dir_fleet(args.data_dir, args.fleet)
        check_fleet_gates(fleet, gates)
        check_shares_option(fleet.consumable_shares, gates)  # the plugin refuses to start so
        args.driver_gates = gates
        if args.engine == KUBERNETES:
            from allot.cli.kubeup import check_options

            check_options(args)
    except (FleetError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.engine == KUBERNETES:
        from allot.cli.kubeup import run_kubernetes

        return run_kubernetes(args, fleet)
    try:
        check_engine(args.data_dir, EMBEDDED)
    except EngineMismatch as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        if any(pool.local for pool in fleet.pools):
            check_available()
        _check_sandbox(args)
    except (LocalGpusUnavailable, SandboxUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1

    def announce(endpoint: Endpoint) -> None:
        print(f"allot API server on {endpoint.url} (data in {args.data_dir})")
        for cluster, path in endpoint.kubeconfigs.items():
            print(f"  cluster {cluster}: export KUBECONFIG={path.resolve()}")
        for note in endpoint.notes:
            print(f"  note: {note}")
        print(
            f"  dashboard: {endpoint.url}/ui (sign in with the host token: "
            f"allot kubeconfig --token --data-dir {args.data_dir})",
            flush=True,
        )

    def publish(endpoint: Endpoint) -> None:
        if publish_fleet(endpoint.kubeconfigs["host"], fleet, gates):
            fleethealth.start_local_watch(endpoint.kubeconfigs["host"], fleet, gates)

    def ready() -> None:
        print("Ctrl-C stops it.", flush=True)  # last: the platform is ready for kubectl

    def build() -> ApiServer:
        save_fleet(args.data_dir, fleet)
        save_driver_gates(args.data_dir, gates)
        return build_platform(
            args.data_dir,
            args.runtime,
            gates,
            args.placement,
            alert_settings=settings,
            sandboxed=not args.unsandboxed,
            job_seconds=args.simulated_job_seconds,
            pod_pids_limit=args.pod_pids_limit,
        ).server

    umask = os.umask(0o077)  # every file of the data directory is the owner's alone (0600)
    try:
        serve(args.data_dir, args.host, args.port, announce, publish, build=build, on_ready=ready)
    except KeyboardInterrupt:
        pass  # uvicorn has already shut down gracefully and re-raised the signal
    except (DataDirLocked, DataDirUnwritable, Unwritable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        reason = err.strerror or str(err)
        hint = " (choose another with --port, or --port 0 for a free one)"
        hint = hint if err.errno == errno.EADDRINUSE else ""
        print(f"error: cannot serve on {args.host}:{args.port}: {reason}{hint}", file=sys.stderr)
        return 1
    finally:
        os.umask(umask)
    print("allot API server stopped", flush=True)
    return 0


def host_client(kubeconfig: Path) -> Client:
    """A client of the host cluster from its kubeconfig, by the host's own context: the
    user may have made a tenant's context current in that file (``allot tenant connect``
    with ``$KUBECONFIG`` pointing at it)."""
    return Client.from_kubeconfig(kubeconfig, own_context(HOST_CLUSTER))


def publish_fleet(kubeconfig: Path, fleet: Fleet, gates: Mapping[str, bool] | None = None) -> bool:
    """Publish ``fleet`` into the host cluster (either engine's) as the driver with
    ``gates`` does, and say what changed."""
    try:
        client = host_client(kubeconfig)
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return False
    try:
        report = Publisher(RemoteClient(client)).reconcile(
            fleet, passthrough=enabled(gates or {}, PASSTHROUGH), progress=_progress
        )
    except (KubeError, ClientError, FleetError, LocalGpusUnavailable) as err:
        print(f"error: publishing the fleet failed: {err}", file=sys.stderr)
        return False
    finally:
        client.close()
    pools = ", ".join(
        f"{p.name} ({p.nodes} node{'s' if p.nodes != 1 else ''})" for p in fleet.pools
    )
    print(
        f"fleet: {pools}; {len(report.nodes_created)} node(s) added, "
        f"{len(report.nodes_removed)} removed; {report.slices + report.slices_kept} "
        f"slice(s) with {report.devices + report.devices_kept} device(s) published "
        f"({report.slices} new)",
        flush=True,
    )
    return True


class PlatformNotRunning(KubeError):
    """No ``allot up`` serves this data directory: said once, the same way by every command."""

    def __init__(self, data_dir: Path) -> None:
        engine = " --engine kubernetes" if engine_of(data_dir) == KUBERNETES else ""
        super().__init__(
            f"the platform in {data_dir} is not running (start it with: allot up{engine} "
            f"--data-dir {data_dir})"
        )


def platform_client(data_dir: Path) -> Client:
    """The client of the platform ``allot up`` serves from ``data_dir`` (its host cluster).

    The data directory's lock says whether it is served, without waiting on a connection."""
    kubeconfig = data_dir / "kubeconfigs" / "host.yaml"
    if running(data_dir) is None or not kubeconfig.exists():
        raise PlatformNotRunning(data_dir)
    return host_client(kubeconfig)


def _progress(done: int, total: int) -> None:
    """One line per tenth of a large fleet (more than 50 nodes)."""
    step = max(1, total // 10)
    if total > 50 and (done % step == 0 or done == total):
        print(f"publishing the fleet: {done}/{total} nodes", flush=True)


def run_fleet_scale(args: argparse.Namespace) -> int:
    try:
        fleet = data_dir_fleet(args.data_dir, None).scaled(args.pool, args.nodes)
    except FleetError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    save_fleet(args.data_dir, fleet)
    kubeconfig = args.data_dir / "kubeconfigs" / "host.yaml"
    if running(args.data_dir) is None:
        print(f"error: {PlatformNotRunning(args.data_dir)}", file=sys.stderr)
        print("the fleet file is saved; it is applied when the platform starts", file=sys.stderr)
        return 1
    if not publish_fleet(kubeconfig, fleet, data_dir_driver_gates(args.data_dir)):
        return 1
    return 0


def _served(data_dir: Path, path: Path) -> bool:
    """Whether a platform serves ``data_dir``, ready (its fleet published), and ``path`` is
    its kubeconfig of now (a restart on another port rewrites the file after it binds)."""
    holder = running(data_dir)
    if holder is None or not holder.ready or not path.exists():
        return False
    try:
        return holder.url in path.read_text()
    except OSError:
        return False


def run_kubeconfig(args: argparse.Namespace) -> int:
    path = args.data_dir / "kubeconfigs" / f"{args.cluster}.yaml"
    deadline = time.monotonic() + args.wait
    while not _served(args.data_dir, path) and time.monotonic() < deadline:
        time.sleep(0.1)
    if args.wait and not _served(args.data_dir, path):
        print(
            f"error: no platform served cluster {args.cluster!r} from {args.data_dir} within "
            f"{args.wait:g}s (start it with: allot up --data-dir {args.data_dir})",
            file=sys.stderr,
        )
        return 1
    tokens = Tokens(args.data_dir / "tokens.json")
    if args.cluster not in tokens.clusters() or not path.exists():
        known = sorted(c for c in tokens.clusters() if (path.parent / f"{c}.yaml").exists())
        if not known:
            hint = f"start the platform first: allot up --data-dir {args.data_dir}"
        else:
            hint = f"clusters: {', '.join(known)}; a tenant's comes with: allot tenant create"
        print(
            f"error: no kubeconfig for cluster {args.cluster!r} in {args.data_dir} ({hint})",
            file=sys.stderr,
        )
        return 1
    if args.path:
        print(path.resolve())
    elif args.token:
        print(tokens.ensure(args.cluster))
    else:
        sys.stdout.write(path.read_text())
    return 0
