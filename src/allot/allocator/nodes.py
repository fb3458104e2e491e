"""Does a node match a ``NodeSelector``? (``k8s.io/component-helpers`` semantics.)

Terms are ORed, requirements inside a term ANDed; ``matchExpressions`` read node labels,
``matchFields`` support ``metadata.name``. Used for slice and device node selection.
"""

from __future__ import annotations

from allot.allocator.errors import AllocationError
from allot.api import core_v1_nodes as corev1


def node_selector_matches(selector: corev1.NodeSelector, node: corev1.Node) -> bool:
    labels = node.metadata.labels or {}
    fields = {"metadata.name": node.metadata.name or ""}
    for term in selector.node_selector_terms or []:
        if not term.match_expressions and not term.match_fields:
            continue  # an empty term matches nothing
        if all(_requirement_matches(r, labels) for r in term.match_expressions or []) and all(
            _requirement_matches(r, fields) for r in term.match_fields or []
        ):
            return True
    return False


def _requirement_matches(
    requirement: corev1.NodeSelectorRequirement, values: dict[str, str]
) -> bool:
    key = requirement.key or ""
    wanted = requirement.values or []
    present = key in values
    operator = requirement.operator
    if operator == "In":
        return present and values[key] in wanted
    if operator == "NotIn":
        return not present or values[key] not in wanted
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        if not present or len(wanted) != 1:
            return False
        try:
            have, limit = int(values[key]), int(wanted[0])
        except ValueError:
            return False
        return have > limit if operator == "Gt" else have < limit
    raise AllocationError(
        f'failed to parse node selector: "{operator}" is not a valid node selector operator'
    )
