"""Tenant (allot.dev/v1alpha1): a team's entitlement and virtual cluster."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import tenancy
from allot.validation.objects import KindRules


def _tenant_cells(obj: Obj, now: dt.datetime) -> list[Any]:
    status = obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        status.get("phase", "Pending"),
        status.get("namespace", ""),
        ",".join(status.get("entitledDeviceClasses") or []) or "<none>",
        age(obj, now),
    ]


STRATEGIES = (
    KindStrategy(
        "Tenant",
        "tenant",
        short_names=("tn",),
        categories=("allot",),
        subresources=("status",),
        rules=KindRules(validate=lambda obj, context: tenancy.validate_tenant(obj)),
        table=Table(
            [
                NAME,
                column("Phase", "Whether the tenant's virtual cluster is ready."),
                column("Namespace", "The tenant's namespace on the host."),
                column("Classes", "The host DeviceClasses the tenant is entitled to."),
                AGE,
            ],
            _tenant_cells,
        ),
    ),
)
