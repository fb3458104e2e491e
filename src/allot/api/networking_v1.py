"""``networking.k8s.io/v1`` Ingress, IngressClass and NetworkPolicy, with every field
Kubernetes 1.36 defines.

Served in every cluster so that the manifests of ordinary Helm charts apply; allot runs no
ingress controller and no network plugin, so Ingresses route nothing (their status stays
empty) and NetworkPolicies are stored, not enforced (the conformance ledger says so).
Served by :mod:`allot.registry.kinds.networking`, defaulted and validated by
:mod:`allot.validation.networking`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel
from allot.api.core_v1 import IntOrString
from allot.api.core_v1_storage import TypedLocalObjectReference
from allot.api.meta import LabelSelector, ObjectMeta

GROUP = "networking.k8s.io"
API_VERSION = f"{GROUP}/v1"
PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
PARAMETER_SCOPES = ["Cluster", "Namespace"]
POLICY_TYPES = ["Ingress", "Egress"]
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
CLASS_ANNOTATION = "kubernetes.io/ingress.class"


class ServiceBackendPort(ApiModel):
    name: str | None = None
    number: int | None = None


class IngressServiceBackend(ApiModel):
    name: str | None = None
    port: ServiceBackendPort | None = None


class IngressBackend(ApiModel):
    service: IngressServiceBackend | None = None
    resource: TypedLocalObjectReference | None = None


class HTTPIngressPath(ApiModel):
    path: str | None = None
    path_type: str | None = None
    backend: IngressBackend | None = None


class HTTPIngressRuleValue(ApiModel):
    paths: list[HTTPIngressPath] | None = None


class IngressRule(ApiModel):
    host: str | None = None
    http: HTTPIngressRuleValue | None = None


class IngressTLS(ApiModel):
    hosts: list[str] | None = None
    secret_name: str | None = None


class IngressSpec(ApiModel):
    ingress_class_name: str | None = None
    default_backend: IngressBackend | None = None
    tls: list[IngressTLS] | None = None
    rules: list[IngressRule] | None = None


class IngressPortStatus(ApiModel):
    port: int | None = None
    protocol: str | None = None
    error: str | None = None


class IngressLoadBalancerIngress(ApiModel):
    ip: str | None = None
    hostname: str | None = None
    ports: list[IngressPortStatus] | None = None


class IngressLoadBalancerStatus(ApiModel):
    ingress: list[IngressLoadBalancerIngress] | None = None


class IngressStatus(ApiModel):
    load_balancer: IngressLoadBalancerStatus | None = None


class Ingress(ApiModel):
    api_version: Literal["networking.k8s.io/v1"] = "networking.k8s.io/v1"
    kind: Literal["Ingress"] = "Ingress"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: IngressSpec = Field(default_factory=IngressSpec)
    status: IngressStatus | None = None


class IngressClassParametersReference(ApiModel):
    api_group: str | None = Field(default=None, alias="apiGroup")
    kind: str | None = None
    name: str | None = None
    scope: str | None = None
    namespace: str | None = None


class IngressClassSpec(ApiModel):
    controller: str | None = None
    parameters: IngressClassParametersReference | None = None


class IngressClass(ApiModel):
    api_version: Literal["networking.k8s.io/v1"] = "networking.k8s.io/v1"
    kind: Literal["IngressClass"] = "IngressClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: IngressClassSpec = Field(default_factory=IngressClassSpec)


class IPBlock(ApiModel):
    cidr: str | None = None
    except_: list[str] | None = Field(default=None, alias="except")


class NetworkPolicyPeer(ApiModel):
    pod_selector: LabelSelector | None = None
    namespace_selector: LabelSelector | None = None
    ip_block: IPBlock | None = None


class NetworkPolicyPort(ApiModel):
    protocol: str | None = None
    port: IntOrString | None = None
    end_port: int | None = None


class NetworkPolicyIngressRule(ApiModel):
    ports: list[NetworkPolicyPort] | None = None
    from_: list[NetworkPolicyPeer] | None = Field(default=None, alias="from")


class NetworkPolicyEgressRule(ApiModel):
    ports: list[NetworkPolicyPort] | None = None
    to: list[NetworkPolicyPeer] | None = None


class NetworkPolicySpec(ApiModel):
    pod_selector: LabelSelector | None = None
    ingress: list[NetworkPolicyIngressRule] | None = None
    egress: list[NetworkPolicyEgressRule] | None = None
    policy_types: list[str] | None = None


class NetworkPolicy(ApiModel):
    api_version: Literal["networking.k8s.io/v1"] = "networking.k8s.io/v1"
    kind: Literal["NetworkPolicy"] = "NetworkPolicy"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NetworkPolicySpec = Field(default_factory=NetworkPolicySpec)
