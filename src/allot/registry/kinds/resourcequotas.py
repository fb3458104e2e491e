"""ResourceQuota: ``kubectl get quota`` shows used/hard per key."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import admission
from allot.validation.objects import KindRules


def _quota_usage(obj: Obj, limits: bool) -> str:
    """``key: used/hard`` pairs as kubectl prints them (REQUEST or LIMIT column)."""
    status = obj.get("status") or {}
    hard = status.get("hard") or (obj.get("spec") or {}).get("hard") or {}
    used = status.get("used") or {}
    parts = [
        f"{key}: {used.get(key, '0')}/{hard[key]}"
        for key in sorted(hard)
        if key.startswith("limits.") == limits
    ]
    return ", ".join(parts)


STRATEGIES = (
    KindStrategy(
        "ResourceQuota",
        "resourcequota",
        returns_deleted_object=True,  # upstream storage: ReturnDeletedObject
        short_names=("quota",),
        subresources=("status",),
        rules=KindRules(validate=lambda obj, context: admission.validate_quota(obj)),
        table=Table(
            [
                NAME,
                AGE,
                column("Request", "Request represents a minimum amount of cpu/memory."),
                column("Limit", "Limits control the maximum amount of cpu/memory."),
            ],
            lambda o, n: [
                o["metadata"]["name"],
                age(o, n),
                _quota_usage(o, False),
                _quota_usage(o, True),
            ],
        ),
    ),
)
