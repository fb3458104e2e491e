"""``admissionregistration.k8s.io/v1`` ValidatingAdmissionPolicy and its binding.

Entitlement on the host is enforced with these standard objects, so that what the embedded
platform runs is exactly what ``allot render`` will write for a real 1.36 cluster. Every
field of the 1.36 API is modelled; the evaluation lives in :mod:`allot.registry.policies`
and the CEL environment in :mod:`allot.cel.policy`. Used by the kinds table, validation,
the API server and the tenant controller.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel
from allot.api.meta import Condition, LabelSelector, ListMeta, ObjectMeta


class ParamKind(ApiModel):
    api_version: str | None = None
    kind: str | None = None


class NamedRuleWithOperations(ApiModel):
    resource_names: list[str] | None = None
    operations: list[str] | None = None
    api_groups: list[str] | None = None
    api_versions: list[str] | None = None
    resources: list[str] | None = None
    scope: str | None = None


class MatchResources(ApiModel):
    namespace_selector: LabelSelector | None = None
    object_selector: LabelSelector | None = None
    resource_rules: list[NamedRuleWithOperations] | None = None
    exclude_resource_rules: list[NamedRuleWithOperations] | None = None
    match_policy: str | None = None


class Validation(ApiModel):
    expression: str | None = None
    message: str | None = None
    reason: str | None = None
    message_expression: str | None = None


class AuditAnnotation(ApiModel):
    key: str | None = None
    value_expression: str | None = None


class MatchCondition(ApiModel):
    name: str | None = None
    expression: str | None = None


class Variable(ApiModel):
    name: str | None = None
    expression: str | None = None


class ValidatingAdmissionPolicySpec(ApiModel):
    param_kind: ParamKind | None = None
    match_constraints: MatchResources | None = None
    validations: list[Validation] | None = None
    failure_policy: str | None = None
    audit_annotations: list[AuditAnnotation] | None = None
    match_conditions: list[MatchCondition] | None = None
    variables: list[Variable] | None = None


class ExpressionWarning(ApiModel):
    field_ref: str | None = None
    warning: str | None = None


class TypeChecking(ApiModel):
    expression_warnings: list[ExpressionWarning] | None = None


class ValidatingAdmissionPolicyStatus(ApiModel):
    observed_generation: int | None = None
    type_checking: TypeChecking | None = None
    conditions: list[Condition] | None = None


class ValidatingAdmissionPolicy(ApiModel):
    api_version: Literal["admissionregistration.k8s.io/v1"] = "admissionregistration.k8s.io/v1"
    kind: Literal["ValidatingAdmissionPolicy"] = "ValidatingAdmissionPolicy"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ValidatingAdmissionPolicySpec = Field(default_factory=ValidatingAdmissionPolicySpec)
    status: ValidatingAdmissionPolicyStatus | None = None


class ParamRef(ApiModel):
    name: str | None = None
    namespace: str | None = None
    selector: LabelSelector | None = None
    parameter_not_found_action: str | None = None


class ValidatingAdmissionPolicyBindingSpec(ApiModel):
    policy_name: str | None = None
    param_ref: ParamRef | None = None
    match_resources: MatchResources | None = None
    validation_actions: list[str] | None = None


class ValidatingAdmissionPolicyBinding(ApiModel):
    api_version: Literal["admissionregistration.k8s.io/v1"] = "admissionregistration.k8s.io/v1"
    kind: Literal["ValidatingAdmissionPolicyBinding"] = "ValidatingAdmissionPolicyBinding"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ValidatingAdmissionPolicyBindingSpec = Field(
        default_factory=ValidatingAdmissionPolicyBindingSpec
    )


class ValidatingAdmissionPolicyList(ApiModel):
    api_version: Literal["admissionregistration.k8s.io/v1"] = "admissionregistration.k8s.io/v1"
    kind: Literal["ValidatingAdmissionPolicyList"] = "ValidatingAdmissionPolicyList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[ValidatingAdmissionPolicy] = Field(default_factory=list)
