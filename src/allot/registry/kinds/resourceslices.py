"""ResourceSlice: the devices a driver publishes for a pool."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.validation import slices
from allot.validation.objects import KindRules

STRATEGIES = (
    KindStrategy(
        "ResourceSlice",
        "resourceslice",
        returns_deleted_object=True,  # upstream storage: ReturnDeletedObject
        rules=KindRules(
            validate=lambda obj, context: slices.validate_slice_spec(obj.spec, context.features),
            validate_update=lambda new, old, context: slices.validate_slice_update(
                new.spec, old.spec
            ),
        ),
        table=Table(
            [
                NAME,
                column("Node", "The node which provides the devices."),
                column("Driver", "The name of the driver."),
                column("Pool", "The name of the pool."),
                AGE,
            ],
            lambda o, n: [
                o["metadata"]["name"],
                (o.get("spec") or {}).get("nodeName", ""),
                (o.get("spec") or {}).get("driver", ""),
                ((o.get("spec") or {}).get("pool") or {}).get("name", ""),
                age(o, n),
            ],
        ),
    ),
)
