"""``allot up --engine kubernetes``: real Kubernetes 1.36 as the host cluster, in the foreground.

The same command as the embedded engine's ``allot up`` (:mod:`allot.cli.up`), the same
data directory layout for what a user touches (``kubeconfigs/host.yaml``, ``tokens.json``,
the saved fleet) and the same banner, but the cluster is :mod:`allot.kubeengine`'s: etcd,
kube-apiserver, kube-controller-manager, kube-scheduler and kwok, with allot's simulated
NVIDIA driver publishing the fleet through the API; each turn of its loop also keeps the
tenants' own control planes (:class:`allot.kubeengine.tenants.TenantPlanes`). Flags that
only the embedded engine has a meaning for are refused, by name. Ctrl-C (or SIGTERM)
stops every component, the tenants' first; a host component that exits meanwhile stops
the rest, and its log's last lines are shown.
``$ALLOT_KUBE_UNSAFE_NO_FSYNC=1`` runs etcd without fsync: for the test suite only (a
crash loses data), never for a directory whose cluster you keep.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from types import FrameType

from allot.apiserver.lock import DataDirLocked
from allot.cli.fleethealth import start_local_watch
from allot.cli.up import publish_fleet
from allot.driver.fleet import Fleet
from allot.driver.gates import PUBLISHING
from allot.kubeengine.binaries import (
    ETCD_VERSION,
    KUBERNETES_VERSION,
    KWOK_VERSION,
    BinariesError,
    bin_dir,
)
from allot.kubeengine.cluster import ComponentFailed, PortInUse, RealCluster, start
from allot.kubeengine.components import Layout, Options
from allot.kubeengine.datadir import EngineMismatch
from allot.kubeengine.tenants import TenantPlanes
from allot.kubeengine.tenantsync import RealTenantSync

UNSAFE_NO_FSYNC_ENV = "ALLOT_KUBE_UNSAFE_NO_FSYNC"
WATCH_SECONDS = 0.5


# The flags the embedded engine alone gives a meaning to, with their defaults.
def check_options(args: argparse.Namespace) -> None:
    """ValueError naming a flag the kubernetes engine does not take (``up``'s
    ``embedded_defaults``: each embedded-only option and its parser default)."""
    for attribute, default in args.embedded_defaults.items():
        if getattr(args, attribute) != default:
            flag = "--" + attribute.replace("_", "-")
            raise ValueError(
                f"{flag} applies to the embedded engine only (the kubernetes engine runs "
                "pods through kwok and places them with kube-scheduler)"
            )
    if args.host not in ("127.0.0.1", "localhost"):
        raise ValueError(f"the kubernetes engine serves on 127.0.0.1 only, not {args.host!r}")
    preparing = sorted(g for g, on in args.driver_gates.items() if on and g not in PUBLISHING)
    if preparing:
        raise ValueError(
            f"--driver-feature-gates {', '.join(preparing)}: the kubernetes engine takes only "
            f"{', '.join(sorted(PUBLISHING)[:-1])} and {sorted(PUBLISHING)[-1]} (its kwok "
            "nodes prepare no devices, so no driver config is applied there)"
        )


def _options(args: argparse.Namespace) -> Options:
    unsafe = os.environ.get(UNSAFE_NO_FSYNC_ENV, "") == "1"
    return Options(unsafe_no_fsync=unsafe, job_seconds=args.simulated_job_seconds)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run_kubernetes(args: argparse.Namespace, fleet: Fleet) -> int:
    previous = signal.signal(signal.SIGTERM, _interrupt)
    umask = os.umask(0o077)  # every file of the data directory is the owner's alone
    try:
        return _run(args, fleet)
    finally:
        os.umask(umask)
        signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace, fleet: Fleet) -> int:
    print(f"starting real Kubernetes {KUBERNETES_VERSION} from {bin_dir()}", flush=True)
    try:
        cluster = start(args.data_dir, args.host, args.port, _options(args))
    except (BinariesError, EngineMismatch, DataDirLocked, PortInUse, ComponentFailed) as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("stopped before the cluster was up", flush=True)
        return 0
    try:
        return _serve(args, cluster, fleet)
    except KeyboardInterrupt:
        return 0
    finally:
        cluster.stop()
        print("Kubernetes host cluster stopped", flush=True)


def _serve(args: argparse.Namespace, cluster: RealCluster, fleet: Fleet) -> int:
    _announce(args, cluster)
    from allot.driver.files import save_driver_gates, save_fleet

    save_fleet(args.data_dir, fleet)
    save_driver_gates(args.data_dir, args.driver_gates)
    if not publish_fleet(cluster.kubeconfig, fleet, args.driver_gates):
        return 1
    start_local_watch(cluster.kubeconfig, fleet, args.driver_gates)
    sync = RealTenantSync(cluster)
    sync.start()
    planes = TenantPlanes(cluster, sync)
    try:
        planes.reconcile()  # the recorded tenants start again, on their storage
        cluster.ready()
        print("Ctrl-C stops it.", flush=True)
        while True:
            try:
                cluster.check()
            except ComponentFailed as err:
                print(f"error: {err}", file=sys.stderr, flush=True)
                return 1
            planes.reconcile()
            time.sleep(WATCH_SECONDS)
    finally:
        sync.stop()
        planes.stop()  # before the host's etcd, which their kube-apiservers use


def _announce(args: argparse.Namespace, cluster: RealCluster) -> None:
    print(f"Kubernetes {KUBERNETES_VERSION} API server on {cluster.url} (data in {args.data_dir})")
    print(f"  cluster host: export KUBECONFIG={cluster.kubeconfig.resolve()}")
    for note in cluster.notes:
        print(f"  note: {note}")
    pids = ", ".join(f"{name} {pid}" for name, pid in cluster.pids().items())
    print(
        f"  engine: kubernetes (etcd {ETCD_VERSION}, kwok {KWOK_VERSION}); pids {pids}; "
        f"logs in {Layout(cluster.data_dir).logs}",
        flush=True,
    )
