"""PodDisruptionBudget: serving details (short name ``pdb``, ``/status``), the status a
new budget starts with, validation and ``kubectl get pdb`` columns (NAME MIN AVAILABLE
MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE). The eviction subresource checks budgets
(:mod:`allot.registry.disruption`); the disruption controller writes their status
(:mod:`allot.controllers.disruption`)."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.types import Obj
from allot.validation import policy
from allot.validation.objects import KindRules

EMPTY_STATUS = {
    "currentHealthy": 0,
    "desiredHealthy": 0,
    "disruptionsAllowed": 0,
    "expectedPods": 0,
}
"""``PrepareForCreate`` resets the status; Go writes its non-omitempty counts as 0."""


def _empty_status(obj: Obj) -> None:
    obj["status"] = dict(EMPTY_STATUS)


def _bound(spec: Obj, name: str) -> str:
    value = spec.get(name)
    return "N/A" if value is None else str(value)


STRATEGIES = (
    KindStrategy(
        "PodDisruptionBudget",
        "poddisruptionbudget",
        short_names=("pdb",),
        subresources=("status",),
        rules=KindRules(
            validate=lambda obj, context: policy.validate_pod_disruption_budget(obj),
            validate_status=lambda new, old, context: policy.validate_pod_disruption_budget_status(
                new, old
            ),
        ),
        initial_status=_empty_status,
        table=Table(
            [
                NAME,
                column("Min Available", "The minimum number of pods that must be available."),
                column("Max Unavailable", "The maximum number of pods that may be unavailable."),
                column(
                    "Allowed Disruptions",
                    "Calculated number of pods that may be disrupted at this time.",
                    kind="integer",
                ),
                AGE,
            ],
            lambda o, n: [
                o["metadata"]["name"],
                _bound(o.get("spec") or {}, "minAvailable"),
                _bound(o.get("spec") or {}, "maxUnavailable"),
                (o.get("status") or {}).get("disruptionsAllowed", 0),
                age(o, n),
            ],
        ),
    ),
)
