"""The clusterrole-aggregation controller: aggregated ClusterRoles hold their sources' rules.

As kube-controller-manager's controller, any change to a ClusterRole queues every
ClusterRole with an ``aggregationRule`` in that cluster, and each gets the rules of the
ClusterRoles its ``clusterRoleSelectors`` match (:mod:`allot.registry.rbac.aggregation`),
written only when they differ. So a ClusterRole labelled
``rbac.authorization.k8s.io/aggregate-to-edit: "true"`` extends ``edit`` and ``admin`` in
every cluster, the host and each tenant's. Built by :mod:`allot.platform`.
"""

from __future__ import annotations

from collections.abc import Hashable

from allot.controllers.workloads import ClusterContexts, WorkloadKey
from allot.registry.rbac.aggregation import aggregated_rules
from allot.store import WatchEvent

CLUSTER_ROLES = "clusterroles.rbac.authorization.k8s.io"
KIND = "ClusterRole"
MANAGER = "clusterrole-aggregation-controller"


class ClusterRoleAggregation:
    name = "clusterrole-aggregation"
    watches = frozenset({CLUSTER_ROLES})  # the resources keys_for answers for

    def __init__(self, contexts: ClusterContexts) -> None:
        self.contexts = contexts

    def keys_for(self, event: WatchEvent) -> list[Hashable]:
        if event.resource != CLUSTER_ROLES or not self.contexts.serves(event.cluster):
            return []
        return [
            WorkloadKey(event.cluster, "", role["metadata"]["name"])
            for role in self.contexts(event.cluster).scan(KIND)
            if role.get("aggregationRule")
        ]

    def initial_keys(self) -> list[Hashable]:
        return self.contexts.keys(KIND, lambda role: bool(role.get("aggregationRule")))

    def reconcile(self, key: Hashable) -> None:
        assert isinstance(key, WorkloadKey)
        found = self.contexts.read(key, KIND)
        if found is None:
            return
        context, role = found
        rules = aggregated_rules(role, context.scan(KIND))
        if rules is None or rules == (role.get("rules") or []):
            return
        role["rules"] = rules
        context.update(KIND, role, MANAGER)
