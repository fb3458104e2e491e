"""``allot render``, ``allot apply`` and ``allot controller``: the tools for real clusters.

``allot render [-f PLATFORM_FILE] [--out DIR]`` reads DeviceClasses and Tenants (default
``allot-platform.yaml``) and writes the files described in :mod:`allot.cluster.render`,
printing each path. ``allot apply --kubeconfig PATH [--context C] [--dry-run]`` renders the
same objects and applies them (:mod:`allot.cluster.apply`), printing one line per object.
Both render Kueue's objects in ``kueue.x-k8s.io/v1beta2`` unless ``--kueue-api v1beta1``
asks for the version Kueue 0.14 serves (:mod:`allot.cluster.kueue`).
Both print one ``Warning:`` line on stderr naming what the file asks that nothing rendered
enforces on a real cluster (:func:`allot.cluster.render.unenforced_warning`); ``apply``
also prints the API server's own warnings for each object, as kubectl does.
``allot controller`` runs the platform controllers against a cluster. ``allot doctor`` lives
in :mod:`allot.cli.doctor`, so reading a dump does not import the Kubernetes client. Bad
input is one clear line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from allot.cli.options import add_data_dir, add_kubeconfig
from allot.cluster import kueue
from allot.cluster.apply import ApplyError, Report, apply, check_cluster, plan
from allot.cluster.render import (
    Platform,
    PlatformFileError,
    objects_in_apply_order,
    read_platform,
    render,
    unenforced_warning,
    write,
)
from allot.kube.client import Client
from allot.kube.errors import KubeError
from allot.manifests.documents import ManifestError, read_yaml_file

DEFAULT_PLATFORM = Path("allot-platform.yaml")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("render", help="manifests for a real host cluster")
    parser.add_argument("-f", "--file", type=Path, default=DEFAULT_PLATFORM, help="platform file")
    parser.add_argument("--out", type=Path, default=Path("rendered"), help="output folder")
    add_kueue_api(parser)
    parser.set_defaults(run=run_render)
    register_apply(subparsers)
    register_controller(subparsers)


def add_kueue_api(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kueue-api",
        choices=kueue.VERSIONS,
        default=kueue.V1BETA2,
        help=(
            "version of Kueue's objects and Configuration: v1beta2 (default; Kueue "
            f"{kueue.FIRST_RELEASE[kueue.V1BETA2]} and later, where it first appeared) or "
            f"v1beta1 (for Kueue {kueue.FIRST_RELEASE[kueue.V1BETA1]}; deprecated from "
            "0.16, which warns on every object)"
        ),
    )


def load_platform(path: Path) -> Platform:
    """The platform file, parsed and checked; PlatformFileError says what is wrong."""
    try:
        documents = read_yaml_file(str(path))
    except ManifestError as err:
        raise PlatformFileError(str(err)) from None
    if not any(documents):  # applied with pruning, it would remove every tenant
        raise PlatformFileError(f'"{path}" holds no DeviceClass and no Tenant')
    return read_platform(documents, str(path))


def run_render(args: argparse.Namespace) -> int:
    try:
        platform = load_platform(args.file)
        files = render(platform, kueue_api=args.kueue_api)
    except PlatformFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    _warn_unenforced(platform)
    for path in write(files, args.out):
        print(path)
    return 0


def register_apply(subparsers: Any) -> None:
    parser = subparsers.add_parser("apply", help="apply the rendered objects to a cluster")
    parser.add_argument("-f", "--file", type=Path, default=DEFAULT_PLATFORM, help="platform file")
    add_kubeconfig(parser)
    add_kueue_api(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    parser.add_argument("--no-prune", action="store_true", help="keep objects no longer rendered")
    parser.add_argument(
        "--force-conflicts",
        action="store_true",
        help="take over fields another field manager owns (server-side apply --force)",
    )
    parser.set_defaults(run=run_apply)


def run_apply(args: argparse.Namespace) -> int:
    try:
        platform = load_platform(args.file)
        client = Client.from_kubeconfig(args.kubeconfig, args.context)
    except (PlatformFileError, KubeError) as err:  # unreadable platform file or kubeconfig
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        check_cluster(client)
        live_classes = client.list("resource.k8s.io/v1", "DeviceClass")
        rendered = render(platform, cluster_classes=live_classes, kueue_api=args.kueue_api)
        objects = objects_in_apply_order(rendered)
        _warn_unenforced(platform)
        if args.dry_run:
            report = plan(client, objects, prune=not args.no_prune)
        else:
            report = apply(client, objects, prune=not args.no_prune, force=args.force_conflicts)
    except ApplyError as err:
        _print_report(err.report, dry_run=args.dry_run)
        done = (
            "a dry run: nothing was changed"
            if args.dry_run
            else "the objects above were applied; nothing after"
        )
        print(f"error: {err} ({done})", file=sys.stderr)
        return 1
    except PlatformFileError as err:  # a Tenant sharing a class the cluster lacks
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        client.close()
    _print_report(report, dry_run=args.dry_run)
    return 0


def _warn_unenforced(platform: Platform) -> None:
    """What the platform file asks that the cluster will not enforce, on stderr."""
    warning = unenforced_warning(platform)
    if warning is not None:
        print(f"Warning: {warning}", file=sys.stderr)


def _print_report(report: Report, *, dry_run: bool) -> None:
    for action in report.actions:
        changes = action.verb in ("create", "configure", "prune")
        for warning in action.warnings:  # the API server's, as kubectl prints them
            print(f"Warning: {warning}", file=sys.stderr)
        print(action.line() + (" (dry run)" if dry_run and changes else ""))
        if dry_run and action.diff:
            print(action.diff)


def register_controller(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "controller", help="run the platform controllers against a real cluster"
    )
    add_kubeconfig(parser)
    add_data_dir(
        parser,
        "the controller's audit log (default: $ALLOT_DATA_DIR/controller, else "
        "~/.local/state/allot/controller)",
        subdir="controller",
    )
    parser.add_argument(
        "--interval", type=float, default=10.0, help="seconds between alert evaluations"
    )
    parser.add_argument(
        "--metrics-address", default="127.0.0.1", help="address /metrics is served on"
    )
    parser.add_argument("--metrics-port", type=int, default=9464, help="port /metrics is served on")
    parser.add_argument(
        "--alert-pending-after",
        default="5m",
        metavar="DURATION",
        help="raise an alert for a claim unallocated longer than this (90s, 5m, 1h)",
    )
    _register_election(parser)
    parser.set_defaults(run=run_controller)


def _register_election(parser: Any) -> None:
    """kube-controller-manager's leader-election flags, with client-go's defaults."""
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run only while holding the Lease, so that one replica of several is active",
    )
    for flag, default, meaning in (
        ("lease-duration", "15s", "how long others wait after the leader's last renewal"),
        ("renew-deadline", "10s", "how long the leader retries renewing before it stops"),
        ("retry-period", "2s", "how often candidates and the leader try the Lease"),
    ):
        parser.add_argument(
            f"--leader-elect-{flag}", default=default, metavar="DURATION", help=meaning
        )
    parser.add_argument(
        "--leader-elect-resource-namespace",
        default="allot-system",
        help="namespace of the Lease",
    )
    parser.add_argument(
        "--leader-elect-resource-name", default="allot-controller", help="name of the Lease"
    )
    parser.add_argument(
        "--leader-elect-identity",
        default="",
        help="this replica's holderIdentity (default: <hostname>_<random uuid>)",
    )


def run_controller(args: argparse.Namespace) -> int:
    import uvicorn

    from allot.cli.up import parse_seconds
    from allot.cluster.controller import ClusterController, metrics_app
    from allot.ops.rules import AlertSettings

    try:
        client = Client.from_kubeconfig(args.kubeconfig, args.context)
        check_cluster(client)
        settings = AlertSettings(
            pending_claim_seconds=parse_seconds(args.alert_pending_after),
            interval_seconds=args.interval,
        )
        controller = ClusterController(client, args.data_dir, settings, _election(args))
    except (KubeError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    election = controller.election
    print(
        f"allot controller: alerts every {args.interval:g}s; metrics on "
        f"http://{args.metrics_address}:{args.metrics_port}/metrics; audit in "
        f"{args.data_dir / 'audit.db'}; "
        + (
            f"leader election on Lease {election.namespace}/{election.name} as {election.identity}"
            if election
            else "no leader election"
        ),
        flush=True,
    )
    config = uvicorn.Config(
        metrics_app(controller, lambda: setattr(server, "should_exit", True)),
        host=args.metrics_address,
        port=args.metrics_port,
        log_level="warning",
    )
    server = uvicorn.Server(config)
    try:
        server.run()
    finally:
        client.close()
    if controller.failure is not None:
        print(f"error: {controller.failure}", file=sys.stderr)
        return 1
    return 0


def _election(args: argparse.Namespace) -> Any:
    """The replica's leader election from its flags (None with ``--no-leader-elect``)."""
    import socket
    import uuid

    from allot.cluster.controller import Election

    if not args.leader_elect:
        return None
    return Election(
        identity=args.leader_elect_identity or f"{socket.gethostname()}_{uuid.uuid4()}",
        namespace=args.leader_elect_resource_namespace,
        name=args.leader_elect_resource_name,
        lease_duration=_duration("--leader-elect-lease-duration", args.leader_elect_lease_duration),
        renew_deadline=_duration("--leader-elect-renew-deadline", args.leader_elect_renew_deadline),
        retry_period=_duration("--leader-elect-retry-period", args.leader_elect_retry_period),
    )


def _duration(flag: str, text: str) -> float:
    """A duration as kube's flags take them (``15s``, ``500ms``, ``1m``), in seconds."""
    for unit, seconds in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        number = text.removesuffix(unit)
        if number != text:
            try:
                value = float(number)
            except ValueError:
                break
            if value > 0:
                return value * seconds
            break
    raise ValueError(f"{flag}: {text!r} is not a duration like 15s, 500ms or 1m")
