"""rbac.authorization.k8s.io/v1 defaulting and validation, as upstream's
``SetDefaults_RoleBinding``/``SetDefaults_Subject`` and ``pkg/apis/rbac/validation``:
policy rules (verbs, resource rules or non-resource URLs), role references and subjects,
with upstream's texts and field paths. Names are checked by the kind's ``path`` name rule
(:mod:`allot.validation.objects`). Called through :mod:`allot.registry.kinds.rbac`."""

from __future__ import annotations

from typing import Any

from allot.api import rbac_v1 as rbac
from allot.validation import names
from allot.validation.field import ErrorList, Path, invalid, not_supported, required

ROLE_REF = Path("roleRef")
SUBJECT_KINDS = ["ServiceAccount", "User", "Group"]
_BOTH_KINDS_OF_RULE = "rules cannot apply to both regular resources and non-resource URLs"


def default_binding(obj: rbac.RoleBinding | rbac.ClusterRoleBinding) -> None:
    """A role reference's group defaults to RBAC's; a subject's to ``""`` for a service
    account and to RBAC's for a user or group."""
    if obj.role_ref is None:
        obj.role_ref = rbac.RoleRef()
    if not obj.role_ref.api_group:
        obj.role_ref.api_group = rbac.GROUP
    for subject in obj.subjects or []:
        if not subject.api_group and subject.kind in ("User", "Group"):
            subject.api_group = rbac.GROUP


def validate_role(obj: rbac.Role | rbac.ClusterRole) -> ErrorList:
    namespaced = isinstance(obj, rbac.Role)
    errors: ErrorList = []
    for index, rule in enumerate(obj.rules or []):
        errors += _validate_rule(rule, namespaced, Path("rules").index(index))
    return errors


def _validate_rule(rule: rbac.PolicyRule, namespaced: bool, path: Path) -> ErrorList:
    errors: ErrorList = []
    if not rule.verbs:
        errors.append(required(path.child("verbs"), "verbs must contain at least one value"))
    urls = rule.non_resource_urls or []
    if urls:
        at = path.child("nonResourceURLs")
        if namespaced:
            errors.append(invalid(at, urls, "namespaced rules cannot apply to non-resource URLs"))
        if rule.api_groups or rule.resources or rule.resource_names:
            errors.append(
                invalid(
                    at, urls, "rules cannot apply to both regular resources and non-resource URLs"
                )
            )
        return errors
    if not rule.api_groups:
        errors.append(
            required(path.child("apiGroups"), "resource rules must supply at least one api group")
        )
    if not rule.resources:
        errors.append(
            required(path.child("resources"), "resource rules must supply at least one resource")
        )
    if rule.resource_names and len(rule.resources or []) > 1:
        errors.append(
            required(
                path.child("resourceNames"), "resource names cannot apply to multiple resources"
            )
        )
    return errors


def validate_binding(obj: rbac.RoleBinding | rbac.ClusterRoleBinding) -> ErrorList:
    namespaced = isinstance(obj, rbac.RoleBinding)
    ref = obj.role_ref or rbac.RoleRef()
    errors: ErrorList = []
    if ref.api_group != rbac.GROUP:
        errors.append(not_supported(ROLE_REF.child("apiGroup"), ref.api_group or "", [rbac.GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if ref.kind not in kinds:
        errors.append(not_supported(ROLE_REF.child("kind"), ref.kind or "", kinds))
    if not ref.name:
        errors.append(required(ROLE_REF.child("name")))
    else:
        errors += [
            invalid(ROLE_REF.child("name"), ref.name, message)
            for message in names.is_valid_path_segment_name(ref.name)
        ]
    for index, subject in enumerate(obj.subjects or []):
        errors += _validate_subject(subject, namespaced, Path("subjects").index(index))
    return errors


def validate_binding_update(new: Any, old: Any) -> ErrorList:
    """A binding's ``roleRef`` is immutable (upstream: ``cannot change roleRef``)."""
    new_ref = (new.role_ref or rbac.RoleRef()).to_wire()
    if new_ref != (old.role_ref or rbac.RoleRef()).to_wire():
        return [invalid(ROLE_REF, new_ref, "cannot change roleRef")]
    return []


def _validate_subject(subject: rbac.Subject, namespaced: bool, path: Path) -> ErrorList:
    name, group = subject.name or "", subject.api_group or ""
    errors: ErrorList = []
    if not name:
        errors.append(required(path.child("name")))
    if subject.kind == "ServiceAccount":
        if name:
            errors += [
                invalid(path.child("name"), name, message)
                for message in names.is_dns1123_subdomain(name)
            ]
        if group:
            errors.append(not_supported(path.child("apiGroup"), group, [""]))
        if not namespaced and not subject.namespace:
            errors.append(required(path.child("namespace")))
    elif subject.kind in ("User", "Group"):
        if not name:
            noun = "user" if subject.kind == "User" else "group"
            errors.append(invalid(path.child("name"), name, f"{noun} name cannot be empty"))
        if group != rbac.GROUP:
            errors.append(not_supported(path.child("apiGroup"), group, [rbac.GROUP]))
    else:
        errors.append(not_supported(path.child("kind"), subject.kind or "", SUBJECT_KINDS))
    return errors
