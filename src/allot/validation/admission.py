"""Validation of ValidatingAdmissionPolicy, its binding and ResourceQuota (1.36 rules).

The checks that keep a broken policy out of the store: required fields, the supported
``failurePolicy``, ``validationActions`` and ``parameterNotFoundAction`` values, resource
rules, and every CEL expression compiled in the admission environment (with the policy's
variables in scope), failing as the API server does: ``spec.validations[0].expression:
Invalid value: "...": compilation failed: ...``. Called from :mod:`allot.validation.objects`.
"""

from __future__ import annotations

from allot.api import admission_v1 as admissionapi
from allot.api import core_v1 as corev1
from allot.api.meta import LabelSelector
from allot.api.quantity import Quantity
from allot.cel import CelError, CompileError, CompileErrorReason
from allot.cel.policy import PolicyCompiler
from allot.validation.field import (
    ErrorList,
    Path,
    internal,
    invalid,
    not_supported,
    required,
)

_COMPILER = PolicyCompiler()
FAILURE_POLICIES = ["Fail", "Ignore"]
VALIDATION_ACTIONS = ["Audit", "Deny", "Warn"]
NOT_FOUND_ACTIONS = ["Allow", "Deny"]
OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]


def default_policy(policy: admissionapi.ValidatingAdmissionPolicy) -> None:
    """``SetObjectDefaults_ValidatingAdmissionPolicy``: ``failurePolicy: Fail`` and the
    match defaults (:func:`_default_match`)."""
    if policy.spec.failure_policy is None:
        policy.spec.failure_policy = "Fail"
    _default_match(policy.spec.match_constraints)


def default_binding(binding: admissionapi.ValidatingAdmissionPolicyBinding) -> None:
    """``SetObjectDefaults_ValidatingAdmissionPolicyBinding``: the match defaults."""
    _default_match(binding.spec.match_resources)


def _default_match(match: admissionapi.MatchResources | None) -> None:
    """``SetDefaults_MatchResources`` and ``SetDefaults_Rule``: ``matchPolicy:
    Equivalent``, empty namespace and object selectors (everything), each rule's
    ``scope: "*"``, as a 1.36 API server stores them."""
    if match is None:
        return
    if match.match_policy is None:
        match.match_policy = "Equivalent"
    if match.namespace_selector is None:
        match.namespace_selector = LabelSelector()
    if match.object_selector is None:
        match.object_selector = LabelSelector()
    for rule in [*(match.resource_rules or []), *(match.exclude_resource_rules or [])]:
        if rule.scope is None:
            rule.scope = "*"


def validate_policy_spec(spec: admissionapi.ValidatingAdmissionPolicySpec) -> ErrorList:
    path = Path("spec")
    errors: ErrorList = []
    if spec.failure_policy is not None and spec.failure_policy not in FAILURE_POLICIES:
        errors.append(
            not_supported(path.child("failurePolicy"), spec.failure_policy, FAILURE_POLICIES)
        )
    if spec.match_constraints is None:
        errors.append(required(path.child("matchConstraints")))
    elif not spec.match_constraints.resource_rules:
        errors.append(required(path.child("matchConstraints", "resourceRules")))
    else:
        errors += _validate_rules(spec.match_constraints, path.child("matchConstraints"))
    if not spec.validations and not spec.audit_annotations:
        errors.append(
            required(
                path.child("validations"),
                "validations or auditAnnotations must contain at least one item",
            )
        )
    errors += _validate_expressions(spec, path)
    return errors


def _validate_rules(match: admissionapi.MatchResources, path: Path) -> ErrorList:
    errors: ErrorList = []
    for position, rule in enumerate(match.resource_rules or []):
        rule_path = path.child("resourceRules").index(position)
        for index, operation in enumerate(rule.operations or []):
            if operation not in OPERATIONS:
                errors.append(
                    not_supported(rule_path.child("operations").index(index), operation, OPERATIONS)
                )
        for field in ("operations", "api_groups", "api_versions", "resources"):
            if not getattr(rule, field):
                wire = {"api_groups": "apiGroups", "api_versions": "apiVersions"}.get(field, field)
                errors.append(required(rule_path.child(wire)))
    return errors


def _validate_expressions(
    spec: admissionapi.ValidatingAdmissionPolicySpec, path: Path
) -> ErrorList:
    errors: ErrorList = []
    for position, condition in enumerate(spec.match_conditions or []):
        errors += _compiled(
            condition.expression,
            (),
            path.child("matchConditions").index(position).child("expression"),
        )
    declared: list[str] = []
    for position, variable in enumerate(spec.variables or []):
        item = path.child("variables").index(position)
        if not variable.name:
            errors.append(required(item.child("name")))
        errors += _compiled(variable.expression, tuple(declared), item.child("expression"))
        declared.append(variable.name or "")
    for position, validation in enumerate(spec.validations or []):
        item = path.child("validations").index(position)
        errors += _compiled(validation.expression, tuple(declared), item.child("expression"))
        if validation.message_expression:
            errors += _compiled(
                validation.message_expression, tuple(declared), item.child("messageExpression")
            )
    return errors


def _compiled(expression: str | None, scope: tuple[str, ...], path: Path) -> ErrorList:
    if not expression:
        return [required(path)]
    try:
        _COMPILER.compile(expression, scope)
    except CompileError as err:
        if err.reason is CompileErrorReason.INTERNAL:
            return [internal(path, err.detail)]
        return [invalid(path, expression, err.detail)]
    except CelError as err:
        return [invalid(path, expression, str(err))]
    return []


def validate_binding_spec(spec: admissionapi.ValidatingAdmissionPolicyBindingSpec) -> ErrorList:
    path = Path("spec")
    errors: ErrorList = []
    if not spec.policy_name:
        errors.append(required(path.child("policyName")))
    actions = spec.validation_actions or []
    if not actions:
        errors.append(required(path.child("validationActions")))
    for position, action in enumerate(actions):
        if action not in VALIDATION_ACTIONS:
            errors.append(
                not_supported(
                    path.child("validationActions").index(position), action, VALIDATION_ACTIONS
                )
            )
    if "Deny" in actions and "Warn" in actions:
        errors.append(
            invalid(
                path.child("validationActions"),
                actions,
                "must not contain both Deny and Warn (repeating the same validation failure "
                "information in the API response and headers serves no purpose)",
            )
        )
    ref = spec.param_ref
    if ref is not None:
        missing = ref.parameter_not_found_action
        if missing is None:
            errors.append(required(path.child("paramRef", "parameterNotFoundAction")))
        elif missing not in NOT_FOUND_ACTIONS:
            errors.append(
                not_supported(
                    path.child("paramRef", "parameterNotFoundAction"), missing, NOT_FOUND_ACTIONS
                )
            )
        if ref.name and ref.selector is not None:
            errors.append(
                invalid(
                    path.child("paramRef", "name"),
                    ref.name,
                    "name and selector are mutually exclusive",
                )
            )
    return errors


def validate_quota(quota: corev1.ResourceQuota) -> ErrorList:
    errors: ErrorList = []
    hard = (quota.spec.hard if quota.spec else None) or {}
    for key, value in hard.items():
        if value.compare(Quantity(0)) < 0:
            errors.append(
                invalid(
                    Path("spec").child("hard").key(key),
                    str(value),
                    "must be greater than or equal to 0",
                )
            )
    return errors
