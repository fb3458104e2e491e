"""``allot tenant create|list|connect|delete``: tenants of a running embedded platform.

Each verb talks to the platform that ``allot up`` serves from ``--data-dir`` (default
``.allot``) through the host cluster's kubeconfig and the one client interface
(:mod:`allot.kube`). ``create NAME [-f values.yaml]`` takes a vCluster values file
unchanged (or a Tenant document), plus ``--quota KEY=VALUE`` and ``--gpu-memory``, and
waits until the tenant's cluster is served. ``connect NAME`` prints how to use the
tenant's kubeconfig, or runs ``-- COMMAND`` (or ``--shell``) with ``KUBECONFIG`` set.
``delete NAME`` removes the tenant and everything it owned on the host, releasing its
devices.

``create`` prints the server's warnings (an entitled class that matches no device, or takes
MIG partitions as whole GPUs) as ``Warning:`` lines on stderr, as kubectl prints them;
they do not change the exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from allot.api.quantity import Quantity
from allot.cli.up import DEFAULT_DATA_DIR, platform_client
from allot.kube.client import Client
from allot.kube.errors import KubeError, KubeNotFound
from allot.tenancy.values import ValuesError, tenant_document

API_VERSION = "allot.dev/v1alpha1"
Obj = dict[str, Any]


def register(subparsers: Any) -> None:
    tenant = subparsers.add_parser("tenant", help="create, list, connect to and delete tenants")
    verbs = tenant.add_subparsers(dest="verb", metavar="VERB", required=True)
    create = verbs.add_parser("create", help="create a tenant (vCluster values accepted)")
    create.add_argument("name")
    create.add_argument("-f", "--values", type=Path, help="vCluster values file or Tenant YAML")
    create.add_argument("--quota", action="append", default=[], metavar="KEY=VALUE")
    create.add_argument("--gpu-memory", help="most GPU memory the tenant may hold, e.g. 80Gi")
    create.add_argument("--timeout", type=float, default=30.0)
    create.set_defaults(run=run_create)
    listing = verbs.add_parser("list", help="list tenants")
    listing.add_argument("-o", "--output", choices=("table", "json"), default="table")
    listing.set_defaults(run=run_list)
    connect = verbs.add_parser("connect", help="use a tenant's kubeconfig")
    connect.add_argument("name")
    connect.add_argument("--print", action="store_true", help="print the kubeconfig")
    connect.add_argument("--shell", action="store_true", help="start $SHELL with it")
    connect.epilog = "allot tenant connect NAME -- COMMAND [ARGS...] runs COMMAND with it"
    connect.set_defaults(run=run_connect)
    delete = verbs.add_parser("delete", help="delete a tenant and all it owned on the host")
    delete.add_argument("name")
    delete.add_argument("--timeout", type=float, default=30.0)
    delete.set_defaults(run=run_delete)
    for parser in (create, listing, connect, delete):
        parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)


def run_create(args: argparse.Namespace) -> int:
    try:
        document = _read_values(args.values) if args.values else {}
        tenant, warnings = tenant_document(args.name, document)
        _add_quotas(tenant, args.quota, args.gpu_memory)
    except (ValuesError, OSError, yaml.YAMLError) as err:
        print(f"error: {args.values or 'tenant'}: {err}", file=sys.stderr)
        return 1
    for warning in warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    try:
        client = platform_client(args.data_dir)
        client.create(tenant)
        for warning in client.warnings:  # the server's, e.g. about the entitled classes
            print(f"Warning: {warning}", file=sys.stderr)
        ready = _wait_ready(client, args.name, args.timeout)
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"tenant.allot.dev/{args.name} created")
    status = ready.get("status") or {}
    classes = ", ".join(status.get("entitledDeviceClasses") or []) or "<none>"
    print(f"  host namespace: {status.get('namespace')}   entitled classes: {classes}")
    for condition in status.get("conditions") or []:
        if condition.get("status") == "False":
            print(f"Warning: {condition.get('message')}", file=sys.stderr)
    print(f"  kubeconfig: {args.data_dir / 'kubeconfigs' / (args.name + '.yaml')}")
    return 0


def _read_values(path: Path) -> Obj:
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise ValuesError("the values file must hold exactly one YAML mapping")
    document: Obj = documents[0]
    return document


def _add_quotas(tenant: Obj, quotas: list[str], gpu_memory: str | None) -> None:
    quota = tenant.setdefault("spec", {}).setdefault("quota", {})
    for item in quotas:
        key, separator, value = item.partition("=")
        if not separator or not key:
            raise ValuesError(f"--quota {item}: expected KEY=VALUE")
        _check_quantity(f"--quota {item}", value)
        quota.setdefault("hard", {})[key] = value
    if gpu_memory is not None:
        _check_quantity("--gpu-memory", gpu_memory)
        quota["gpuMemory"] = gpu_memory
    if not quota:
        tenant["spec"].pop("quota")


def _check_quantity(what: str, value: str) -> None:
    try:
        Quantity.parse(value)
    except ValueError as err:
        raise ValuesError(f"{what}: {err}") from None


def _wait_ready(client: Client, name: str, timeout: float) -> Obj:
    deadline = time.monotonic() + timeout
    while True:
        tenant = client.get(API_VERSION, "Tenant", name)
        if (tenant.get("status") or {}).get("phase") == "Ready":
            return tenant
        if time.monotonic() > deadline:
            raise KubeError(f"tenant {name} was not ready after {timeout:.0f}s")
        time.sleep(0.1)


def run_list(args: argparse.Namespace) -> int:
    try:
        tenants = platform_client(args.data_dir).list(API_VERSION, "Tenant")
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(tenants, indent=2))
        return 0
    rows = [("NAME", "PHASE", "NAMESPACE", "CLASSES", "SERVER")]
    for tenant in tenants:
        status = tenant.get("status") or {}
        rows.append(
            (
                tenant["metadata"]["name"],
                status.get("phase", "Pending"),
                status.get("namespace", ""),
                ",".join(status.get("entitledDeviceClasses") or []) or "<none>",
                status.get("server", ""),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    return 0


def run_connect(args: argparse.Namespace) -> int:
    path = args.data_dir / "kubeconfigs" / f"{args.name}.yaml"
    if args.name == "host" or not path.exists():
        print(
            f"error: no tenant {args.name!r} in {args.data_dir} (see `allot tenant list`)",
            file=sys.stderr,
        )
        return 1
    command = list(getattr(args, "passthrough", []))
    if args.shell:
        command = [os.environ.get("SHELL", "/bin/sh")]
    if not command:
        if args.print:
            print(path.read_text(), end="")
        else:
            print(f"export KUBECONFIG={path.resolve()}")
        return 0
    environment = {**os.environ, "KUBECONFIG": str(path.resolve())}
    try:
        return subprocess.run(command, env=environment, check=False).returncode
    except FileNotFoundError:
        print(f"error: {command[0]}: command not found", file=sys.stderr)
        return 127


def run_delete(args: argparse.Namespace) -> int:
    try:
        client = platform_client(args.data_dir)
        client.delete(API_VERSION, "Tenant", args.name)
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            try:
                client.get(API_VERSION, "Tenant", args.name)
            except KubeNotFound:
                print(f'tenant.allot.dev "{args.name}" deleted')
                return 0
            time.sleep(0.1)
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(
        f"error: tenant {args.name} was still being deleted after {args.timeout:.0f}s",
        file=sys.stderr,
    )
    return 1
