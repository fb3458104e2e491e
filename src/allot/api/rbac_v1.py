"""``rbac.authorization.k8s.io/v1`` kinds: Role, RoleBinding, ClusterRole,
ClusterRoleBinding.

Every field Kubernetes 1.36 defines for them, so the roles and bindings of ordinary Helm
charts decode strictly (unknown fields still refused). allot stores and serves them but
does not authorize requests by them (one token per cluster with every right; the
conformance ledger says so), and a ClusterRole's ``aggregationRule`` is stored, not
aggregated. Served by :mod:`allot.registry.kinds.rbac`, validated by
:mod:`allot.validation.rbac`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel
from allot.api.meta import LabelSelector, ObjectMeta

GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{GROUP}/v1"


class PolicyRule(ApiModel):
    verbs: list[str] | None = None
    api_groups: list[str] | None = None
    resources: list[str] | None = None
    resource_names: list[str] | None = None
    non_resource_urls: list[str] | None = Field(default=None, alias="nonResourceURLs")


class AggregationRule(ApiModel):
    cluster_role_selectors: list[LabelSelector] | None = None


class Subject(ApiModel):
    kind: str | None = None
    api_group: str | None = None
    name: str | None = None
    namespace: str | None = None


class RoleRef(ApiModel):
    api_group: str | None = None
    kind: str | None = None
    name: str | None = None


class Role(ApiModel):
    api_version: Literal["rbac.authorization.k8s.io/v1"] = "rbac.authorization.k8s.io/v1"
    kind: Literal["Role"] = "Role"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    rules: list[PolicyRule] | None = None


class ClusterRole(ApiModel):
    api_version: Literal["rbac.authorization.k8s.io/v1"] = "rbac.authorization.k8s.io/v1"
    kind: Literal["ClusterRole"] = "ClusterRole"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    rules: list[PolicyRule] | None = None
    aggregation_rule: AggregationRule | None = None


class RoleBinding(ApiModel):
    api_version: Literal["rbac.authorization.k8s.io/v1"] = "rbac.authorization.k8s.io/v1"
    kind: Literal["RoleBinding"] = "RoleBinding"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    subjects: list[Subject] | None = None
    role_ref: RoleRef | None = None


class ClusterRoleBinding(ApiModel):
    api_version: Literal["rbac.authorization.k8s.io/v1"] = "rbac.authorization.k8s.io/v1"
    kind: Literal["ClusterRoleBinding"] = "ClusterRoleBinding"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    subjects: list[Subject] | None = None
    role_ref: RoleRef | None = None
