"""What one tenant claim and one pod using it cost the embedded write path (issue 30,
item 4): stored writes, admissions and decodes of whole API objects, counted by
:mod:`allot.api.costs`.

The platform runs in this process on its own loop (no HTTP: the tenant's two creates go
straight to the handlers, as the API server hands them over), with one node of ten
devices of the benchmark's driver, one DeviceClass and one Tenant entitled to it. Step 1:
the tenant creates a claim, and the platform settles (its host twin made). Step 2: the
tenant creates a pod using it, and the platform settles (the pod Running in the tenant,
its claim allocated there). Each step's counts are printed with the ones measured before
issue 30 (main at 65b3598, same shape), and with ``ALLOT_BENCH_ITEMS=1`` per resource.
Events the retention controller deletes later (past 500 in a cluster) are not in these
counts.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from allot.api.costs import COSTS, itemised
from allot.controllers.context import ControllerContext
from allot.platform import Platform, build
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from bench.scheduler import DRIVER
from bench.tenancy import _claim, _pod

TENANT = "team-00"
BEFORE = {"claim": (3, 4, 5), "pod": (20, 22, 30)}
"""(writes, admissions, decodes) of each step at 65b3598, before issue 30."""
ITEMS = bool(os.environ.get("ALLOT_BENCH_ITEMS"))

Obj = dict[str, Any]


async def _settle(api: Platform, done: Any, timeout: float = 20.0) -> None:
    """Run the controllers until ``done()`` holds and nothing is written for 0.3 s."""
    deadline = time.monotonic() + timeout
    quiet_since, last = time.monotonic(), COSTS.writes
    while time.monotonic() < deadline:
        await api.controllers.idle(timeout=timeout)
        await asyncio.sleep(0.05)
        if COSTS.writes != last:
            quiet_since, last = time.monotonic(), COSTS.writes
        elif done() and time.monotonic() - quiet_since > 0.3:
            return
    raise SystemExit("the platform did not settle")


def _prepare(api: Platform) -> None:
    host = ControllerContext("host", api.registry.store, api.registry.handlers, api.registry.clock)
    host.create(
        "DeviceClass",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "bench-gpu", "labels": {"tier": "bench"}},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
        },
        "bench",
    )
    node = host.create(
        "Node",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "bench-node-0"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
        "bench",
    )
    host.create(
        "ResourceSlice",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"bench-node-0-{DRIVER}"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node["metadata"]["name"],
                "pool": {"name": "bench-node-0", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"device-{d}"} for d in range(10)],
            },
        },
        "bench",
    )
    host.create(
        "Tenant",
        {
            "apiVersion": "allot.dev/v1alpha1",
            "kind": "Tenant",
            "metadata": {"name": TENANT},
            "spec": {"deviceClassSelector": {"matchLabels": {"tier": "bench"}}},
        },
        "bench",
    )


def _tenant_create(api: Platform, obj: Obj) -> None:
    """Create ``obj`` in the tenant's cluster as its own kubectl would."""
    resource = by_kind(obj["kind"])
    options = WriteOptions("kubectl-create", "Strict", False, user=f"system:allot:{TENANT}")
    target = Target(resource, "default", None, "")
    api.registry.handlers.create(TENANT, target, {**obj}, options)


def _peek(api: Platform, kind: str, name: str) -> Obj:
    found = api.registry.store.peek(TENANT, by_kind(kind).store, "default", name)
    return found or {}


def _report(step: str, counts: tuple[int, int, int], items: Counter[tuple[str, str]]) -> None:
    before = BEFORE[step]
    figures = ", ".join(
        f"{what} {now} (before {then})"
        for what, now, then in zip(("writes", "admissions", "decodes"), counts, before, strict=True)
    )
    print(f"  one tenant {step}: {figures}", flush=True)
    if ITEMS:
        for (what, name), count in sorted(items.items()):
            print(f"    {what:9} {name:45} {count}")


async def _measure(api: Platform) -> None:
    _prepare(api)

    def ready() -> bool:
        tenant = api.registry.store.peek("host", by_kind("Tenant").store, "", TENANT) or {}
        return (tenant.get("status") or {}).get("phase") == "Ready"

    await _settle(api, ready)
    for step, obj, done in (
        ("claim", _claim("c"), lambda: True),
        (
            "pod",
            _pod("p", "c"),
            lambda: (
                (_peek(api, "Pod", "p").get("status") or {}).get("phase") == "Running"
                and bool((_peek(api, "ResourceClaim", "c").get("status") or {}).get("allocation"))
            ),
        ),
    ):
        with itemised() as items:
            start = COSTS.snapshot()
            _tenant_create(api, obj)
            await _settle(api, done)
            end = COSTS.snapshot()
        _report(step, (end[0] - start[0], end[1] - start[1], end[2] - start[2]), items)


async def _run(data: Path) -> None:
    api = build(data)
    for hook in api.server.startup_hooks:
        await hook()
    try:
        await _measure(api)
    finally:
        for hook in api.server.shutdown_hooks:
            await hook()
        api.registry.close()


def main() -> None:
    print(
        "write costs (issue 30): stored writes, admissions and whole-object decodes of one "
        "tenant claim, then of one pod using it, each until the platform settles",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(_run(Path(directory) / "data"))


if __name__ == "__main__":
    main()
