"""DeviceClass: the catalogue entry a claim's request names (cluster-scoped, no status)."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy
from allot.validation import classes
from allot.validation.objects import KindRules

STRATEGIES = (
    KindStrategy(
        "DeviceClass",
        "deviceclass",
        returns_deleted_object=True,  # upstream storage: ReturnDeletedObject
        rules=KindRules(
            validate=lambda obj, context: classes.validate_class_spec(obj.spec, context),
            stored_selectors=True,
        ),
    ),
)
