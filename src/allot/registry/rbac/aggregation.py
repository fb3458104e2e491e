"""ClusterRole aggregation: an ``aggregationRule``'s rules gathered from labelled roles.

Upstream's clusterrole-aggregation controller computes, for a ClusterRole with an
``aggregationRule``, the rules of every other ClusterRole matching one of its
``clusterRoleSelectors``, in name order, without repeats. This is that computation; the
controller (:mod:`allot.controllers.clusterroleaggregation`) writes it and the bootstrap
fills the default roles with it when it creates them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from allot.api.meta import selector_matches


def aggregated_rules(
    role: Mapping[str, Any], cluster_roles: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]] | None:
    """The rules ``role`` should hold, or None when it aggregates nothing."""
    rule = role.get("aggregationRule")
    if not isinstance(rule, dict):
        return None
    selectors = [s for s in rule.get("clusterRoleSelectors") or [] if isinstance(s, dict)]
    name = role["metadata"]["name"]
    gathered: list[dict[str, Any]] = []
    for other in sorted(cluster_roles, key=lambda r: str(r["metadata"]["name"])):
        if other["metadata"]["name"] == name:
            continue
        labels = other["metadata"].get("labels") or {}
        if not any(selector_matches(selector, labels) for selector in selectors):
            continue
        for granted in other.get("rules") or []:
            if granted not in gathered:
                gathered.append(granted)
    return gathered
