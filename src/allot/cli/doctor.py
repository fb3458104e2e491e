"""``allot doctor (--kubeconfig PATH | --from-dump FILE) [-o json]``: reports pending claims
with their explanation, catalogue lint, entitlement violations and capacity
(:mod:`allot.cluster.doctor`): exit 0 when healthy, 1 with problems, 2 when it cannot tell.
Bad input is one clear line.

A module of its own, so that reading a dump imports neither the Kubernetes client nor the
renderer of ``allot render``/``allot apply`` (:mod:`allot.cli.cluster`); the client is
imported only for ``--kubeconfig``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from allot.api.errors import ApiError
from allot.cli.options import add_kubeconfig
from allot.cluster.doctor import diagnose, normalise, render_report
from allot.kube.errors import KubeError, KubeNotFound
from allot.manifests.documents import ManifestError, parse_machine_yaml


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="diagnose a cluster's DRA state (exit 0 healthy, 1 problems, 2 cannot tell)",
    )
    add_kubeconfig(parser)
    parser.add_argument(
        "--from-dump",
        type=Path,
        help="read a `kubectl get ... -A -o yaml` dump instead of a live cluster",
    )
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="report format"
    )
    parser.set_defaults(run=run_doctor)


LIVE_KINDS = [
    ("resource.k8s.io/v1", "DeviceClass", None),
    ("resource.k8s.io/v1", "ResourceSlice", None),
    ("resource.k8s.io/v1", "ResourceClaim", None),
    ("resource.k8s.io/v1", "ResourceClaimTemplate", None),
    ("v1", "Pod", None),
    ("v1", "Namespace", None),
    ("v1", "Node", None),
    ("v1", "ConfigMap", "allot-system"),
    ("allot.dev/v1alpha1", "Tenant", None),
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue", None),  # when Kueue is installed
    ("kueue.x-k8s.io/v1beta2", "Cohort", None),
]


def _live_objects(args: argparse.Namespace) -> list[Any]:
    from allot.cluster.apply import check_cluster, list_served  # the client: live clusters
    from allot.kube.client import Client

    client = Client.from_kubeconfig(args.kubeconfig, args.context)
    try:
        check_cluster(client)
        documents = []
        for api_version, kind, namespace in LIVE_KINDS:
            try:  # Kueue's kinds in v1beta1 where v1beta2 is not served
                served, items = list_served(client, api_version, kind, namespace)
            except KubeNotFound:
                continue  # a kind this cluster does not serve (Tenant without the CRD, no Kueue)
            documents += [{"apiVersion": served, "kind": kind, **item} for item in items]
        return documents
    finally:
        client.close()


def run_doctor(args: argparse.Namespace) -> int:
    if args.from_dump is not None and args.kubeconfig is not None:
        print("error: use either --kubeconfig or --from-dump, not both", file=sys.stderr)
        return 2
    try:
        if args.from_dump is not None:
            documents = parse_machine_yaml(args.from_dump.read_text(), str(args.from_dump))
            if not any(documents):
                print(
                    f'error: "{args.from_dump}" holds no objects (a dump is what '
                    "`kubectl get ... -A -o yaml` prints)",
                    file=sys.stderr,
                )
                return 2
        else:
            documents = _live_objects(args)
        objects, skipped = normalise(documents)
        report = diagnose(objects, dt.datetime.now(dt.UTC))
    except FileNotFoundError:
        print(f'error: the path "{args.from_dump}" does not exist', file=sys.stderr)
        return 2
    except OSError as err:
        print(f"error: {args.from_dump}: {err.strerror}", file=sys.stderr)
        return 2
    except ManifestError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (ApiError, ValueError) as err:
        print(f"error: the dump has an object allot cannot read: {err}", file=sys.stderr)
        return 2
    report.skipped = skipped
    if args.output == "json":
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(render_report(report))
    return 0 if report.problems == 0 else 1
