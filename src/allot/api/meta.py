"""``meta/v1`` types shared by every kind: ObjectMeta, lists, conditions and Status.

``Status`` is how every error reaches a client (kubectl prints its ``reason`` and
``message``); ``ObjectMeta`` carries the identity and bookkeeping the store maintains.
Imported by all other API modules.
"""

# No ``from __future__ import annotations``: pydantic would compile every field's string
# annotation when the class is built; real ones cut a third of that (start-up, issue 15).

from typing import Any, Literal

from pydantic import Field

from allot.api.base import ApiModel, SortedMap, Time


class OwnerReference(ApiModel):
    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    uid: str | None = None
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ManagedFieldsEntry(ApiModel):
    manager: str | None = None
    operation: str | None = None
    api_version: str | None = None
    time: Time | None = None
    fields_type: str | None = None
    fields_v1: dict[str, Any] | None = Field(default=None, alias="fieldsV1")
    subresource: str | None = None


class ObjectMeta(ApiModel):
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    self_link: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: int | None = None
    labels: SortedMap[str] | None = None
    annotations: SortedMap[str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[ManagedFieldsEntry] | None = None


class ListMeta(ApiModel):
    self_link: str | None = None
    resource_version: str | None = None
    continue_: str | None = None
    remaining_item_count: int | None = None


class Condition(ApiModel):
    """``metav1.Condition`` (used by claim device status)."""

    type: str | None = None
    status: str | None = None
    observed_generation: int | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class StatusCause(ApiModel):
    reason: str | None = None
    message: str | None = None
    field: str | None = None


class StatusDetails(ApiModel):
    name: str | None = None
    group: str | None = None
    kind: str | None = None
    uid: str | None = None
    causes: list[StatusCause] | None = None
    retry_after_seconds: int | None = None


class Status(ApiModel):
    """``metav1.Status``: the body of every error response."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["Status"] = "Status"
    metadata: ListMeta = Field(default_factory=ListMeta)
    status: str | None = None
    message: str | None = None
    reason: str | None = None
    details: StatusDetails | None = None
    code: int | None = None


class LabelSelectorRequirement(ApiModel):
    key: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class LabelSelector(ApiModel):
    match_labels: SortedMap[str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str] | None) -> bool:
    """Whether a wire ``metav1.LabelSelector`` selects ``labels``.

    ``None`` selects nothing, as Kubernetes treats a nil selector; ``{}`` selects
    everything. ``matchLabels`` and ``matchExpressions`` are ANDed.
    """
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_requirement_holds(r, labels) for r in selector.get("matchExpressions") or [])


def _requirement_holds(requirement: dict[str, Any], labels: dict[str, str]) -> bool:
    key, operator = requirement.get("key", ""), requirement.get("operator")
    values = requirement.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False
