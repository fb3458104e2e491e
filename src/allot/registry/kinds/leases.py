"""Lease: serving details, validation and ``kubectl get leases`` columns (NAME HOLDER
AGE). Stored for operators' leader election; allot itself takes no leases."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.validation import coordination
from allot.validation.objects import KindRules

HOLDER = "holderIdentity contains the identity of the holder of a current lease."

STRATEGIES = (
    KindStrategy(
        "Lease",
        "lease",
        rules=KindRules(validate=lambda obj, context: coordination.validate_lease(obj)),
        table=Table(
            [
                NAME,
                column("Holder", HOLDER),
                AGE,
            ],
            lambda o, n: [
                o["metadata"]["name"],
                (o.get("spec") or {}).get("holderIdentity") or "",
                age(o, n),
            ],
        ),
    ),
)
