"""``allot render`` and ``allot apply``: a real host cluster's objects from a platform file.

``allot render [-f PLATFORM_FILE] [--out DIR]`` reads DeviceClasses and Tenants (default
``allot-platform.yaml``) and writes the files described in :mod:`allot.cluster.render`,
printing each path. ``allot apply --kubeconfig PATH [--context C] [--dry-run]`` renders the
same objects and applies them (:mod:`allot.cluster.apply`), printing one line per object.
Bad input is one clear line and exit 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from allot.cluster.apply import ApplyError, Report, apply, check_cluster, plan
from allot.cluster.render import (
    PlatformFileError,
    objects_in_apply_order,
    read_platform,
    render,
    write,
)
from allot.kube.client import Client
from allot.kube.errors import KubeError

DEFAULT_PLATFORM = Path("allot-platform.yaml")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("render", help="manifests for a real host cluster")
    parser.add_argument("-f", "--file", type=Path, default=DEFAULT_PLATFORM, help="platform file")
    parser.add_argument("--out", type=Path, default=Path("rendered"), help="output folder")
    parser.set_defaults(run=run_render)
    register_apply(subparsers)


def load_platform(path: Path) -> Any:
    """The platform file, parsed and checked; PlatformFileError says what is wrong."""
    try:
        documents = list(yaml.safe_load_all(path.read_text()))
    except OSError as err:
        raise PlatformFileError(f"{path}: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise PlatformFileError(f"{path}: not valid YAML: {err}") from None
    return read_platform(documents, str(path))


def run_render(args: argparse.Namespace) -> int:
    try:
        platform = load_platform(args.file)
    except PlatformFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for path in write(render(platform), args.out):
        print(path)
    return 0


def register_apply(subparsers: Any) -> None:
    parser = subparsers.add_parser("apply", help="apply the rendered objects to a cluster")
    parser.add_argument("-f", "--file", type=Path, default=DEFAULT_PLATFORM, help="platform file")
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--context")
    parser.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    parser.add_argument("--no-prune", action="store_true", help="keep objects no longer rendered")
    parser.add_argument("--force-conflicts", action="store_true")
    parser.set_defaults(run=run_apply)


def run_apply(args: argparse.Namespace) -> int:
    try:
        platform = load_platform(args.file)
        client = Client.from_kubeconfig(args.kubeconfig, args.context)
    except (PlatformFileError, KubeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        check_cluster(client)
        live_classes = client.list("resource.k8s.io/v1", "DeviceClass")
        objects = objects_in_apply_order(render(platform, cluster_classes=live_classes))
        if args.dry_run:
            report = plan(client, objects, prune=not args.no_prune)
        else:
            report = apply(client, objects, prune=not args.no_prune, force=args.force_conflicts)
    except ApplyError as err:
        _print_report(err.report, dry_run=False)
        print(f"error: {err} (the objects above were applied; nothing after)", file=sys.stderr)
        return 1
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        client.close()
    _print_report(report, dry_run=args.dry_run)
    return 0


def _print_report(report: Report, *, dry_run: bool) -> None:
    for action in report.actions:
        changes = action.verb in ("create", "configure", "prune")
        print(action.line() + (" (dry run)" if dry_run and changes else ""))
        if dry_run and action.diff:
            print(action.diff)
