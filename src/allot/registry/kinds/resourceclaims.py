"""ResourceClaim: a request for devices; its spec is immutable and its status the scheduler's.

A create drops any status the client sent (upstream's ``PrepareForCreate``); ``/status``
writes are validated as ``ValidateResourceClaimStatusUpdate`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allot.api import resource_v1 as resourceapi
from allot.registry.kinds import KindStrategy, QuotaEvaluator, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import claims
from allot.validation.field import Path
from allot.validation.objects import KindRules

if TYPE_CHECKING:
    from allot.registry.quota import Charging, Usage


def _claim_state(obj: Obj) -> str:
    states = []
    if obj["metadata"].get("deletionTimestamp"):
        states.append("deleted")
    status = obj.get("status") or {}
    if not status.get("allocation"):
        if not states:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _drop_status(obj: Obj) -> None:
    obj.pop("status", None)


def _usage(obj: Obj, charging: Charging) -> Usage:
    from allot.registry import quota  # it reads the strategies: imported when charging

    return quota.claim_devices(obj, charging.extended, charging.owner_usage(obj))


QUOTA = QuotaEvaluator(
    usage=_usage,
    charges=lambda keys: any(k.endswith("/devices") or k.startswith("requests.") for k in keys),
)

STRATEGIES = (
    KindStrategy(
        "ResourceClaim",
        "resourceclaim",
        generation=False,
        returns_deleted_object=True,  # upstream storage: ReturnDeletedObject
        subresources=("status",),
        rules=KindRules(
            defaults=lambda obj: resourceapi.apply_claim_defaults(obj.spec),
            validate=lambda obj, context: claims.validate_claim_spec(
                obj.spec, Path("spec"), context, obj.metadata.namespace
            ),
            validate_status=claims.validate_claim_status,
            immutable_spec=True,
        ),
        initial_status=_drop_status,
        quota=QUOTA,
        table=Table(
            [
                NAME,
                column(
                    "State", "A summary of the current state (allocated, pending, reserved, etc.)."
                ),
                AGE,
            ],
            lambda o, n: [o["metadata"]["name"], _claim_state(o), age(o, n)],
        ),
    ),
)
