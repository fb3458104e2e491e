"""ConfigMap: data keys counted in ``kubectl get``."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.validation import core
from allot.validation.objects import KindRules

STRATEGIES = (
    KindStrategy(
        "ConfigMap",
        "configmap",
        short_names=("cm",),
        rules=KindRules(validate=lambda obj, context: core.validate_config_map(obj)),
        table=Table(
            [NAME, column("Data", "Number of keys.", kind="integer"), AGE],
            lambda o, n: [
                o["metadata"]["name"],
                len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                age(o, n),
            ],
        ),
    ),
)
