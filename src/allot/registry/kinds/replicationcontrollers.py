"""ReplicationController: serving details (short name ``rc``), a new controller's status,
``kubectl get rc`` columns (upstream's ``printReplicationController``), defaulting and
validation. The ReplicaSet controller runs them too (:mod:`allot.controllers.replicaset`)."""

from __future__ import annotations

from allot.registry.kinds import KindStrategy, Table
from allot.registry.kinds.columns import AGE, NAME, column
from allot.registry.kinds.daemonsets import format_labels
from allot.registry.kinds.replicasets import empty_replica_status, replica_cells
from allot.registry.kinds.workloadcolumns import (
    CONTAINERS,
    IMAGES,
    selector_column,
)
from allot.validation import apps
from allot.validation.objects import KindRules

STRATEGIES = (
    KindStrategy(
        "ReplicationController",
        "replicationcontroller",
        short_names=("rc",),
        categories=("all",),
        subresources=("status", "scale"),
        rules=KindRules(
            defaults=apps.default_replication_controller,
            validate=lambda obj, context: apps.validate_replication_controller(obj),
            validate_status=lambda new, old, context: apps.validate_replication_controller_status(
                new, old
            ),
        ),
        initial_status=empty_replica_status,
        table=Table(
            [
                NAME,
                column("Desired", "Replicas is the number of desired replicas.", kind="integer"),
                column(
                    "Current",
                    "Replicas is the most recently observed number of replicas.",
                    kind="integer",
                ),
                column(
                    "Ready",
                    "The number of ready replicas for this replication controller.",
                    kind="integer",
                ),
                AGE,
                CONTAINERS,
                IMAGES,
                selector_column(
                    "Selector is a label query over pods that should match the Replicas count."
                ),
            ],
            replica_cells(format_labels),
        ),
    ),
)
