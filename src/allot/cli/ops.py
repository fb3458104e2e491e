"""``allot alerts``, ``allot audit``, ``allot usage`` and ``allot top``: the operations view.

``alerts`` lists the firing Alert objects of a running platform. ``audit`` and ``usage``
read the append-only audit log in ``<data-dir>/audit.db`` directly (read-only), so they
work while the platform is stopped too: who had a device when, what a tenant held, and
device-hours and GPU-memory GiB-hours per tenant or class for chargeback, as a table, JSON
or CSV. ``top`` shows pools and tenants as a live terminal table until Ctrl-C.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from allot.cli.options import add_data_dir, positive_seconds
from allot.cli.output import Column, add_output, emit
from allot.cli.up import platform_client
from allot.kube.errors import KubeError
from allot.ops import audit
from allot.ops.capacity import memory_text
from allot.ops.durations import parse_since
from allot.ops.rules import AlertSettings, prometheus_rule
from allot.types import Obj

WIDE_ONLY = ("pod", "pool", "device_class", "namespace")  # audit columns shown with -o wide


def register(subparsers: Any) -> None:
    alerts = subparsers.add_parser("alerts", help="the alerts firing now")
    add_output(alerts)
    alerts.add_argument(
        "--prometheus-rule",
        action="store_true",
        help="print the alert rules as a PrometheusRule for a real cluster instead",
    )
    alerts.set_defaults(run=run_alerts)
    audit_parser = subparsers.add_parser("audit", help="who had which device when")
    audit_parser.add_argument("--tenant", help="only this tenant's devices (default: all)")
    audit_parser.add_argument(
        "--device", help="only this device: name, pool/name or driver/pool/name (default: all)"
    )
    audit_parser.add_argument("--since", help="30m, 2h, 7d or an RFC 3339 time (default: all)")
    add_output(audit_parser, extra=("csv",))
    audit_parser.set_defaults(run=run_audit)
    usage = subparsers.add_parser("usage", help="device-hours and GPU-memory-hours")
    usage.add_argument("--since", help="30m, 2h, 7d or an RFC 3339 time (default: all)")
    usage.add_argument(
        "--by", choices=("tenant", "class"), default="tenant", help="group by tenant or class"
    )
    add_output(usage, extra=("csv",))
    usage.set_defaults(run=run_usage)
    top = subparsers.add_parser("top", help="live capacity per pool and tenant")
    top.add_argument(
        "--interval", type=positive_seconds, default=2.0, help="seconds between refreshes"
    )
    top.add_argument("--once", action="store_true", help="print once and exit")
    top.set_defaults(run=run_top)
    for parser in (alerts, audit_parser, usage, top):
        add_data_dir(parser)


def run_alerts(args: argparse.Namespace) -> int:
    if args.prometheus_rule:
        print(yaml.safe_dump(prometheus_rule(AlertSettings()), sort_keys=False), end="")
        return 0
    try:
        alerts = platform_client(args.data_dir).list("allot.dev/v1alpha1", "Alert")
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    emit(args.output, alerts, ALERT_COLUMNS, "No alerts are firing.")
    return 0


def _spec(alert: Obj) -> Obj:
    return dict(alert.get("spec") or {})


def _subject(alert: Obj) -> str:
    subject = _spec(alert).get("subject") or {}
    where = "/".join(p for p in (subject.get("namespace"), subject.get("name")) if p)
    return f"{subject.get('kind', '')}/{where}".strip("/") or "-"


ALERT_COLUMNS = [
    Column("RULE", lambda a: _spec(a).get("rule", "")),
    Column("SEVERITY", lambda a: _spec(a).get("severity", "")),
    Column("TENANT", lambda a: _spec(a).get("tenant") or "-"),
    Column("SINCE", lambda a: (a.get("status") or {}).get("activeSince", "")),
    Column("MESSAGE", lambda a: _spec(a).get("message", "")),
    Column("NAME", lambda a: a["metadata"]["name"], wide=True),
    Column("SUBJECT", _subject, wide=True),
]


def _log(data_dir: Path) -> audit.AuditLog:
    path = data_dir / "audit.db"
    if not path.exists():
        raise FileNotFoundError(f"no audit log in {data_dir} (it is written by `allot up`)")
    return audit.AuditLog(path, read_only=True)


class _Refused(Exception):
    """A one-line error and the exit code it deserves."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _since_and_log(args: argparse.Namespace, now: dt.datetime) -> tuple[Any, audit.AuditLog]:
    """``--since`` (bad: exit 2) and the audit log (missing: exit 1), in that order."""
    try:
        since = parse_since(args.since, now) if args.since else None
    except ValueError as err:
        raise _Refused(f"--since {err}", 2) from None
    try:
        return since, _log(args.data_dir)
    except FileNotFoundError as err:
        raise _Refused(str(err), 1) from None


def run_audit(args: argparse.Namespace) -> int:
    try:
        since, log = _since_and_log(args, _now())
    except _Refused as err:
        print(f"error: {err}", file=sys.stderr)
        return err.code
    entries = audit.query(log.entries(), tenant=args.tenant, device=args.device, since=since)
    log.close()
    rows = [{**e.__dict__, "tenant": e.tenant or audit.HOST_TENANT} for e in entries]
    columns = ["time", "action", "tenant", "tenant_namespace", "claim", "pod", "node", "pool",
               "device", "device_class", "memory", "namespace"]  # fmt: skip
    _emit(args.output, rows, columns, {"memory": lambda v: memory_text(int(v))})
    return 0


def run_usage(args: argparse.Namespace) -> int:
    now = _now()
    try:
        since, log = _since_and_log(args, now)
    except _Refused as err:
        print(f"error: {err}", file=sys.stderr)
        return err.code
    since = since or dt.datetime.min.replace(tzinfo=dt.UTC)
    rows = audit.usage(log.entries(), since=since, until=now, by=audit.GROUPINGS[args.by])
    log.close()
    documents = [r.document(args.by) for r in rows]
    _emit(args.output, documents, [args.by, "device_hours", "gpu_memory_gib_hours"], {})
    return 0


def _emit(output: str, rows: list[Obj], columns: list[str], shown: dict[str, Any]) -> None:
    """Audit and usage rows: CSV for spreadsheets, else the shared printer."""
    if output == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        print(buffer.getvalue(), end="")
        return
    emit(output, rows, [_column(c, shown, c in WIDE_ONLY) for c in columns], "No entries.")


def _column(name: str, shown: dict[str, Any], wide: bool) -> Column:
    show = shown.get(name, str)
    return Column(name.upper().replace("_", "-"), lambda row: str(show(row[name])), wide)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def run_top(args: argparse.Namespace) -> int:
    try:
        client = platform_client(args.data_dir)
        document = client.get_path("/allot/v1/capacity")
        if args.once or not sys.stdout.isatty():  # to a pipe or file: frame after frame
            console = Console(width=160)
            while True:
                console.print(_top_view(document))
                sys.stdout.flush()
                if args.once:
                    return 0
                time.sleep(args.interval)
                document = client.get_path("/allot/v1/capacity")
        with Live(_top_view(document), refresh_per_second=4, screen=False) as live:
            while True:
                time.sleep(args.interval)
                live.update(_top_view(client.get_path("/allot/v1/capacity")))
    except KubeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0


def _top_view(document: Obj) -> Group:
    pools = Table("NODE", "POOL", "DRIVER", "DEVICES", "ALLOCATED", "FREE", "UNAVAILABLE",
                  "CLASSES", title=f"Pools ({document['time']})", title_justify="left")  # fmt: skip
    for row in document["pools"]:
        counts = [str(row.get(k, "-")) for k in ("devices", "allocated", "free", "unavailable")]
        pools.add_row(row["node"], row["pool"], row["driver"], *counts, ", ".join(row["classes"]))
    tenants = Table("TENANT", "ALLOCATED", "PENDING", "GPU MEMORY", "QUOTA",
                    title="Tenants", title_justify="left")  # fmt: skip
    for row in document["tenants"]:
        limit = f" of {row['gpuMemoryLimit']}" if row["gpuMemoryLimit"] else ""
        quota = ", ".join(f"{q['resource']} {q['used']}/{q['hard']}" for q in row["quota"])
        tenants.add_row(row["name"], str(row["allocated"]), str(row["pending"]),
                        row["gpuMemory"] + limit, quota or "-")  # fmt: skip
    alerts = [f"[bold]{a['rule']}[/bold]: {a['message']}" for a in document["alerts"]]
    return Group(pools, *_allocatable_tables(document.get("allocatable") or {}), tenants,
                 *_sharing_tables(document.get("sharing") or {}),
                 *(alerts or ["No alerts are firing."]))  # fmt: skip


def _allocatable_tables(allocatable: Obj) -> list[Table]:
    """What can still be allocated per class and per MIG profile (free devices of a
    partitionable GPU may exclude each other: ALLOCATABLE counts them one after the other)."""
    tables = []
    parts = (("classes", "class", "Capacity per class"),
             ("profiles", "profile", "Capacity per partition profile"))  # fmt: skip
    for part, key, title in parts:
        rows = allocatable.get(part) or []
        if not rows:
            continue
        table = Table(key.upper(), "DEVICES", "ALLOCATED", "FREE", "UNAVAILABLE", "ALLOCATABLE",
                      title=title, title_justify="left")  # fmt: skip
        for row in rows:
            table.add_row(row[key], *(str(row[k]) for k in _CAPACITY_COLUMNS))
        tables.append(table)
    return tables


_CAPACITY_COLUMNS = ("devices", "allocated", "free", "unavailable", "allocatable")


def _sharing_tables(sharing: Obj) -> list[Table]:
    """Fair sharing, when some tenant uses it: per tenant and resource, then idle cohorts."""
    if not sharing.get("tenants"):
        return []
    shares = Table("TENANT", "COHORT", "RESOURCE", "GUARANTEED", "USED", "BORROWED", "LENT",
                   "ADMITTED", "WAITING", "PREEMPTED", title="Fair sharing",
                   title_justify="left")  # fmt: skip
    previous = None
    for row in sharing["tenants"]:
        first = row["tenant"] != previous  # workload counts are the tenant's, shown once
        previous = row["tenant"]
        counts = [str(row[k]) if first else "" for k in ("admitted", "waiting", "preempted")]
        shares.add_row(row["tenant"] if first else "", (row["cohort"] or "-") if first else "",
                       row["resource"], row["guaranteed"], row["used"], row["borrowed"],
                       row["lent"], *counts)  # fmt: skip
    idle = Table("COHORT", "RESOURCE", "IDLE", title="Cohorts", title_justify="left")
    for row in sharing.get("cohorts") or []:
        idle.add_row(row["cohort"], row["resource"], row["idle"])
    return [shares, idle]
