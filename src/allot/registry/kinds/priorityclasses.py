"""PriorityClass: serving details (short name ``pc``), defaulting, validation and ``kubectl
get pc`` columns (NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY). Pods are resolved
against them by the Priority admission plugin (:mod:`allot.registry.priority`)."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.validation import scheduling
from allot.validation.objects import KindRules

STRATEGIES = (
    KindStrategy(
        "PriorityClass",
        "priorityclass",
        short_names=("pc",),
        rules=KindRules(
            defaults=scheduling.default_priority_class,
            validate=lambda obj, context: scheduling.validate_priority_class(obj),
            validate_update=lambda new, old, context: scheduling.validate_priority_class_update(
                new, old
            ),
        ),
        table=Table(
            [
                NAME,
                column(
                    "Value",
                    "value represents the integer value of this priority class. This is the "
                    "actual priority that pods receive when they have the name of this class "
                    "in their pod spec.",
                    kind="integer",
                ),
                column(
                    "Global-Default",
                    "globalDefault specifies whether this PriorityClass should be considered "
                    "as the default priority for pods that do not have any priority class. "
                    "Only one PriorityClass can be marked as `globalDefault`. However, if "
                    "more than one PriorityClasses exists with their `globalDefault` field "
                    "set to true, the smallest value of such global default PriorityClasses "
                    "will be used as the default priority.",
                    kind="boolean",
                ),
                AGE,
                column(
                    "PreemptionPolicy",
                    "preemptionPolicy is the Policy for preempting pods with lower priority. "
                    "One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if "
                    "unset.",
                ),
            ],
            lambda o, n: [
                o["metadata"]["name"],
                o.get("value") or 0,
                bool(o.get("globalDefault")),
                age(o, n),
                o.get("preemptionPolicy") or "",
            ],
        ),
    ),
)
