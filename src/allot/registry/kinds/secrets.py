"""Secret: serving details, ``kubectl get secrets`` columns (NAME TYPE DATA AGE),
defaulting (``type: Opaque``, ``stringData`` merged into ``data``) and validation. Stored
as given: allot does not encrypt them at rest (the conformance ledger says so)."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.validation import services
from allot.validation.objects import KindRules

STRATEGIES = (
    KindStrategy(
        "Secret",
        "secret",
        rules=KindRules(
            defaults=services.default_secret,
            validate=lambda obj, context: services.validate_secret(obj),
            validate_update=lambda new, old, context: services.validate_secret_update(new, old),
        ),
        table=Table(
            [
                NAME,
                column("Type", "The type of the secret"),
                column("Data", "The number of entries in the secret", kind="integer"),
                AGE,
            ],
            lambda o, n: [
                o["metadata"]["name"],
                o.get("type") or "",
                len(o.get("data") or {}),
                age(o, n),
            ],
        ),
    ),
)
