"""``allot tenant create|list|connect|disconnect|delete``: tenants of a running platform.

Each verb talks to the platform that ``allot up`` serves from ``--data-dir`` (see
``allot.cli.options``) through the host cluster's kubeconfig and the one client interface
(:mod:`allot.kube`); on a data directory of ``allot up --engine kubernetes``, whose
tenants have control planes of their own, create, list and delete go through
:mod:`allot.cli.kubetenant` with the same flags and output. ``create NAME [-f
values.yaml]...`` takes vCluster values files unchanged (several are merged as Helm merges
them) or a Tenant document, plus ``--quota KEY=VALUE`` and ``--gpu-memory``, and waits
until the tenant's cluster is served.
``connect NAME [--context-namespace NS]`` merges a context for it into the user's
kubeconfig and switches to it (``disconnect`` switches back), as ``vcluster connect``
does; ``--print`` prints the tenant's kubeconfig instead, and ``-- COMMAND`` (or
``--shell``) runs a command with ``KUBECONFIG`` set to it. Both take vcluster's flags with
vcluster's meaning (``-n`` is the host namespace; ``--driver platform --project P
--cluster C --connect=false``): :mod:`allot.cli.vclusterflags`.
``delete NAME`` removes the tenant and everything it owned on the host, releasing its
devices.

``create`` prints the server's warnings (an entitled class that matches no device, or takes
MIG partitions as whole GPUs) as ``Warning:`` lines on stderr, as kubectl prints them;
they do not change the exit code.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from allot.api.quantity import Quantity
from allot.cli import kubeconfigs, kubetenant, vclusterflags
from allot.cli.options import add_data_dir
from allot.cli.output import Column, add_output, emit
from allot.cli.up import platform_client
from allot.kube.client import Client
from allot.kube.errors import KubeError, KubeNotFound
from allot.kubeengine.datadir import KUBERNETES, engine_of
from allot.manifests.documents import ManifestError, read_yaml_file
from allot.tenancy.values import ValuesError, merged, tenant_document
from allot.types import Obj

API_VERSION = "allot.dev/v1alpha1"
EMBEDDED_SECONDS = 30.0


def register(subparsers: Any) -> None:
    tenant = subparsers.add_parser("tenant", help="create, list, connect to and delete tenants")
    verbs = tenant.add_subparsers(dest="verb", metavar="VERB", required=True)
    create = verbs.add_parser("create", help="create a tenant (vCluster values accepted)")
    create.add_argument("name", help="the tenant (a DNS label)")
    create.add_argument(
        "-f",
        "--values",
        type=Path,
        action="append",
        default=[],
        help="vCluster values file (repeatable, merged as helm merges them) or Tenant YAML",
    )
    create.add_argument(
        "--quota",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a ResourceQuota key and limit, repeatable (e.g. "
        "gpu-whole.deviceclass.resource.k8s.io/devices=2)",
    )
    create.add_argument("--gpu-memory", help="most GPU memory the tenant may hold, e.g. 80Gi")
    create.add_argument(
        "--timeout",
        type=float,
        help="seconds to wait for the tenant to be ready (default 30; 180 on the kubernetes "
        "engine, which starts a kube-apiserver)",
    )
    vclusterflags.add_host_namespace(create)
    vclusterflags.add_create_flags(create)
    create.set_defaults(run=run_create)
    listing = verbs.add_parser("list", help="list tenants")
    add_output(listing)
    listing.set_defaults(run=run_list)
    connect = verbs.add_parser(
        "connect",
        help="switch kubectl to a tenant's cluster (as vcluster connect)",
        description="Merge a context for the tenant into your kubeconfig ($KUBECONFIG's first "
        "file, else ~/.kube/config) and switch to it; `allot tenant disconnect` switches back.",
    )
    connect.add_argument("name", help="the tenant")
    vclusterflags.add_host_namespace(connect)
    connect.add_argument(
        "--context-namespace",
        metavar="NS",
        help="the namespace the context uses in the tenant's cluster (default: default)",
    )
    connect.add_argument(
        "--print", action="store_true", help="only print the tenant's kubeconfig, change nothing"
    )
    connect.add_argument(
        "--shell", action="store_true", help="only start $SHELL with KUBECONFIG set to it"
    )
    connect.epilog = (
        "allot tenant connect NAME -- COMMAND [ARGS...] only runs COMMAND with the tenant's "
        "kubeconfig, changing nothing"
    )
    connect.set_defaults(run=run_connect)
    disconnect = verbs.add_parser(
        "disconnect", help="switch kubectl back to the context used before connect"
    )
    disconnect.set_defaults(run=run_disconnect)
    delete = verbs.add_parser("delete", help="delete a tenant and all it owned on the host")
    delete.add_argument("name", help="the tenant")
    delete.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for the deletion to finish"
    )
    delete.set_defaults(run=run_delete)
    for parser in (create, listing, connect, delete, disconnect):
        add_data_dir(parser)


def _real(args: argparse.Namespace) -> bool:
    """Whether the data directory is the kubernetes engine's (its tenants: kubetenant)."""
    return engine_of(args.data_dir) == KUBERNETES


def run_create(args: argparse.Namespace) -> int:
    refusal = vclusterflags.platform_flag_problem(args) or vclusterflags.namespace_problem(
        args.name, args.namespace, creating=True
    )
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    note = vclusterflags.ignored_note(args)
    if note:
        print(note, file=sys.stderr)
    try:
        tenant, warnings = _tenant_of(args)
    except ManifestError as err:  # names the file already
        print(f"error: {err}", file=sys.stderr)
        return 2
    except ValuesError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2  # bad usage or unreadable input
    for warning in warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    if _real(args):
        return _create_real(args, tenant)
    try:
        client = platform_client(args.data_dir)
        client.create(tenant)
        for warning in client.warnings:  # the server's, e.g. about the entitled classes
            print(f"Warning: {warning}", file=sys.stderr)
        timeout = EMBEDDED_SECONDS if args.timeout is None else args.timeout
        ready = _wait_ready(client, args.name, timeout)
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return _created(args, ready.get("status") or {})


def _create_real(args: argparse.Namespace, tenant: Obj) -> int:
    try:
        status = kubetenant.create(args.data_dir, tenant, args.timeout)
    except (kubetenant.RealTenantError, KubeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return _created(args, status)


def _created(args: argparse.Namespace, status: Obj) -> int:
    print(f"tenant.allot.dev/{args.name} created")
    classes = ", ".join(status.get("entitledDeviceClasses") or []) or "<none>"
    print(f"  host namespace: {status.get('namespace')}   entitled classes: {classes}")
    for condition in status.get("conditions") or []:
        if condition.get("status") == "False":
            print(f"Warning: {condition.get('message')}", file=sys.stderr)
    path = args.data_dir / "kubeconfigs" / (args.name + ".yaml")
    print(f"  kubeconfig: {path}")
    return _switch_context(args.name, args.data_dir, path, None) if args.connect else 0


def _tenant_of(args: argparse.Namespace) -> tuple[Obj, list[str]]:
    """The Tenant the files and flags define, and the values' warnings; a ValuesError's
    text names the file (or ``tenant`` for the flags alone)."""
    document = _read_values(args.values)
    where = ", ".join(map(str, args.values)) or "tenant"
    try:
        tenant, warnings = tenant_document(args.name, document)
        _add_quotas(tenant, args.quota, args.gpu_memory)
    except ValuesError as err:
        raise ValuesError(f"{where}: {err}") from None
    return tenant, warnings


def _read_values(paths: list[Path]) -> Obj:
    """The values files merged (vcluster's ``-f a -f b``), or the one Tenant document."""
    documents = [_read_one(path) for path in paths]
    if len(documents) > 1 and any(d.get("kind") == "Tenant" for d in documents):
        raise ValuesError(
            f"{', '.join(map(str, paths))}: a Tenant document cannot be merged with other "
            "files: give it alone"
        )
    return merged(documents)


def _read_one(path: Path) -> Obj:
    documents = [d for d in read_yaml_file(str(path)) if d is not None]
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise ValuesError(f"{path}: the values file must hold exactly one YAML mapping")
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
        tenants = (
            kubetenant.listed(args.data_dir)
            if _real(args)
            else platform_client(args.data_dir).list(API_VERSION, "Tenant")
        )
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    emit(args.output, tenants, TENANT_COLUMNS, "No tenants.")
    return 0


def _status(tenant: Obj) -> Obj:
    return dict(tenant.get("status") or {})


def _quota(tenant: Obj) -> Obj:
    return dict((tenant.get("spec") or {}).get("quota") or {})


TENANT_COLUMNS = [
    Column("NAME", lambda t: t["metadata"]["name"]),
    Column("PHASE", lambda t: _status(t).get("phase", "Pending")),
    Column("NAMESPACE", lambda t: _status(t).get("namespace", "")),
    Column(
        "CLASSES", lambda t: ",".join(_status(t).get("entitledDeviceClasses") or []) or "<none>"
    ),
    Column("SERVER", lambda t: _status(t).get("server", "")),
    Column(
        "QUOTA",
        lambda t: (
            ",".join(f"{k}={v}" for k, v in (_quota(t).get("hard") or {}).items()) or "<none>"
        ),
        wide=True,
    ),
    Column("GPU-MEMORY", lambda t: str(_quota(t).get("gpuMemory") or "<none>"), wide=True),
]


def run_connect(args: argparse.Namespace) -> int:
    path = args.data_dir / "kubeconfigs" / f"{args.name}.yaml"
    if args.name == "host" or not path.exists():
        print(
            f"error: no tenant {args.name!r} in {args.data_dir} (see `allot tenant list`)",
            file=sys.stderr,
        )
        return 1
    refusal = vclusterflags.namespace_problem(args.name, args.namespace)
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 1
    command = list(getattr(args, "passthrough", []))
    if args.shell:
        command = [os.environ.get("SHELL", "/bin/sh")]
    if args.print:
        print(path.read_text(), end="")
        return 0
    if command:
        environment = {**os.environ, "KUBECONFIG": str(path.resolve())}
        try:
            return subprocess.run(command, env=environment, check=False).returncode
        except FileNotFoundError:
            print(f"error: {command[0]}: command not found", file=sys.stderr)
            return 127
    return _switch_context(args.name, args.data_dir, path, args.context_namespace)


def _switch_context(tenant: str, data_dir: Path, path: Path, namespace: str | None) -> int:
    """Merge the tenant's context into the user's kubeconfig and make it current."""
    target = kubeconfigs.user_kubeconfig()
    name = kubeconfigs.context_name(tenant, data_dir)
    try:
        tenant_config = yaml.safe_load(path.read_text())
        previous = kubeconfigs.connect(target, name, tenant_config, namespace)
    except kubeconfigs.KubeconfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f'Switched to context "{name}" in {target}.')
    back = f' (context "{previous}")' if previous else ""
    print(f"Use `allot tenant disconnect` to return to the previous context{back}.")
    return 0


def run_disconnect(args: argparse.Namespace) -> int:
    target = kubeconfigs.user_kubeconfig()
    try:
        left, previous = kubeconfigs.disconnect(target)
    except kubeconfigs.KubeconfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    now = f'switched to context "{previous}"' if previous else "no current context now"
    print(f'Left context "{left}"; {now}.')
    return 0


def _forget_context(tenant: str, data_dir: Path) -> None:
    """Remove the deleted tenant's context from the user's kubeconfig, where ``allot tenant
    connect`` put it, and switch back if it was current (a context left behind answers
    ``Unauthorized`` to every kubectl call)."""
    target = kubeconfigs.user_kubeconfig()
    name = kubeconfigs.context_name(tenant, data_dir)
    try:
        removed, now = kubeconfigs.forget(target, name)
    except kubeconfigs.KubeconfigError as err:
        print(f"warning: the context {name!r} was not removed: {err}", file=sys.stderr)
        return
    if not removed:
        return
    switched = (
        ""
        if now is None
        else (f'; switched to context "{now}"' if now else "; no current context now")
    )
    print(f'Removed context "{name}" from {target}{switched}.')


def run_delete(args: argparse.Namespace) -> int:
    if _real(args):
        return _delete_real(args)
    try:
        client = platform_client(args.data_dir)
        client.delete(API_VERSION, "Tenant", args.name)
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            try:
                client.get(API_VERSION, "Tenant", args.name)
            except KubeNotFound:
                print(f'tenant.allot.dev "{args.name}" deleted')
                _forget_context(args.name, args.data_dir)
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


def _delete_real(args: argparse.Namespace) -> int:
    try:
        kubetenant.delete(args.data_dir, args.name, args.timeout)
    except (kubetenant.RealTenantError, KubeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f'tenant.allot.dev "{args.name}" deleted')
    _forget_context(args.name, args.data_dir)
    return 0
