"""``core/v1`` kinds the platform needs: Pod, Node, Namespace, Event, ConfigMap, Service,
Endpoints, ServiceAccount, Secret, ReplicationController, and the pod template the workload
kinds embed.

Node and node selection are defined in :mod:`allot.api.core_v1_nodes` and re-exported here:
the allocator and ``allot simulate`` import that small module alone (start-up, issue 15).

The Pod is typed where DRA and scheduling read it (``spec.resourceClaims``, container
``resources.claims``, ``nodeName``, node selection, tolerations, ``status.resourceClaimStatuses``
and the extended-resource claim status). Deeply nested parts that allot only carries
(volumes, probes, security contexts, affinity terms other than node affinity) are kept as
JSON objects under their real names, so ordinary pod manifests decode while unknown
top-level fields are still rejected. The conformance ledger lists which parts are opaque.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from allot.api.base import ApiModel, MicroTime, SortedMap, Time
from allot.api.core_v1_nodes import Node as Node
from allot.api.core_v1_nodes import NodeAddress as NodeAddress
from allot.api.core_v1_nodes import NodeCondition as NodeCondition
from allot.api.core_v1_nodes import NodeList as NodeList
from allot.api.core_v1_nodes import NodeSelector as NodeSelector
from allot.api.core_v1_nodes import NodeSelectorRequirement as NodeSelectorRequirement
from allot.api.core_v1_nodes import NodeSelectorTerm as NodeSelectorTerm
from allot.api.core_v1_nodes import NodeSpec as NodeSpec
from allot.api.core_v1_nodes import NodeStatus as NodeStatus
from allot.api.core_v1_nodes import NodeSystemInfo as NodeSystemInfo
from allot.api.core_v1_nodes import Taint as Taint
from allot.api.meta import Condition, ListMeta, ObjectMeta
from allot.api.quantity import Quantity

JsonObject = dict[str, Any]
IntOrString = int | str
"""``intstr.IntOrString``: a number or a string such as ``25%``."""


# ------------------------------------------------------------------ node selection
class PreferredSchedulingTerm(ApiModel):
    weight: int | None = None
    preference: NodeSelectorTerm | None = None


class NodeAffinity(ApiModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        None
    )


class Affinity(ApiModel):
    node_affinity: NodeAffinity | None = None
    pod_affinity: JsonObject | None = None
    pod_anti_affinity: JsonObject | None = None


class Toleration(ApiModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


# ----------------------------------------------------------------------- containers
class ContainerResourceClaim(ApiModel):
    """``core/v1.ResourceClaim``: a container's use of a pod-level claim."""

    name: str | None = None
    request: str | None = None


class ResourceRequirements(ApiModel):
    limits: SortedMap[Quantity] | None = None
    requests: SortedMap[Quantity] | None = None
    claims: list[ContainerResourceClaim] | None = None


class EnvVar(ApiModel):
    name: str | None = None
    value: str | None = None
    value_from: JsonObject | None = None


class ContainerPort(ApiModel):
    name: str | None = None
    host_port: int | None = None
    container_port: int | None = None
    protocol: str | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")


class Container(ApiModel):
    name: str | None = None
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    working_dir: str | None = None
    ports: list[ContainerPort] | None = None
    env_from: list[JsonObject] | None = None
    env: list[EnvVar] | None = None
    resources: ResourceRequirements | None = None
    resize_policy: list[JsonObject] | None = None
    restart_policy: str | None = None
    restart_policy_rules: list[JsonObject] | None = None
    volume_mounts: list[JsonObject] | None = None
    volume_devices: list[JsonObject] | None = None
    liveness_probe: JsonObject | None = None
    readiness_probe: JsonObject | None = None
    startup_probe: JsonObject | None = None
    lifecycle: JsonObject | None = None
    termination_message_path: str | None = None
    termination_message_policy: str | None = None
    image_pull_policy: str | None = None
    security_context: JsonObject | None = None
    stdin: bool | None = None
    stdin_once: bool | None = None
    tty: bool | None = None


class PodResourceClaim(ApiModel):
    name: str | None = None
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodSchedulingGate(ApiModel):
    """A gate that holds the pod back from scheduling until someone removes it."""

    name: str | None = None


class PodSpec(ApiModel):
    volumes: list[JsonObject] | None = None
    init_containers: list[Container] | None = None
    containers: list[Container] | None = None
    ephemeral_containers: list[JsonObject] | None = None
    restart_policy: str | None = None
    termination_grace_period_seconds: int | None = None
    active_deadline_seconds: int | None = None
    dns_policy: str | None = None
    node_selector: SortedMap[str] | None = None
    service_account_name: str | None = None
    service_account: str | None = None
    automount_service_account_token: bool | None = None
    node_name: str | None = None
    host_network: bool | None = None
    host_pid: bool | None = Field(default=None, alias="hostPID")
    host_ipc: bool | None = Field(default=None, alias="hostIPC")
    share_process_namespace: bool | None = None
    security_context: JsonObject | None = None
    image_pull_secrets: list[JsonObject] | None = None
    hostname: str | None = None
    subdomain: str | None = None
    affinity: Affinity | None = None
    scheduler_name: str | None = None
    tolerations: list[Toleration] | None = None
    host_aliases: list[JsonObject] | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    dns_config: JsonObject | None = None
    readiness_gates: list[JsonObject] | None = None
    runtime_class_name: str | None = None
    enable_service_links: bool | None = None
    preemption_policy: str | None = None
    overhead: SortedMap[Quantity] | None = None
    topology_spread_constraints: list[JsonObject] | None = None
    set_hostname_as_fqdn: bool | None = Field(default=None, alias="setHostnameAsFQDN")
    os: JsonObject | None = None
    host_users: bool | None = None
    scheduling_gates: list[PodSchedulingGate] | None = None
    resource_claims: list[PodResourceClaim] | None = None
    resources: ResourceRequirements | None = None


class PodCondition(ApiModel):
    type: str | None = None
    observed_generation: int | None = None
    status: str | None = None
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class ContainerStateWaiting(ApiModel):
    reason: str | None = None
    message: str | None = None


class ContainerStateRunning(ApiModel):
    started_at: Time | None = None


class ContainerStateTerminated(ApiModel):
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    message: str | None = None
    started_at: Time | None = None
    finished_at: Time | None = None
    container_id: str | None = Field(default=None, alias="containerID")


class ContainerState(ApiModel):
    waiting: ContainerStateWaiting | None = None
    running: ContainerStateRunning | None = None
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(ApiModel):
    name: str | None = None
    state: ContainerState | None = None
    last_state: ContainerState | None = None
    ready: bool | None = None
    restart_count: int | None = None
    image: str | None = None
    image_id: str | None = Field(default=None, alias="imageID")
    container_id: str | None = Field(default=None, alias="containerID")
    started: bool | None = None
    allocated_resources: SortedMap[Quantity] | None = None
    resources: ResourceRequirements | None = None
    allocated_resources_status: list[JsonObject] | None = None


class PodResourceClaimStatus(ApiModel):
    name: str | None = None
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(ApiModel):
    container_name: str | None = None
    resource_name: str | None = None
    request_name: str | None = None


class PodExtendedResourceClaimStatus(ApiModel):
    request_mappings: list[ContainerExtendedResourceRequest] | None = None
    resource_claim_name: str | None = None


class PodIP(ApiModel):
    ip: str | None = None


class PodStatus(ApiModel):
    observed_generation: int | None = None
    phase: str | None = None
    conditions: list[PodCondition] | None = None
    message: str | None = None
    reason: str | None = None
    nominated_node_name: str | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    host_ips: list[PodIP] | None = Field(default=None, alias="hostIPs")
    pod_ip: str | None = Field(default=None, alias="podIP")
    pod_ips: list[PodIP] | None = Field(default=None, alias="podIPs")
    start_time: Time | None = None
    init_container_statuses: list[ContainerStatus] | None = None
    container_statuses: list[ContainerStatus] | None = None
    qos_class: str | None = Field(default=None, alias="qosClass")
    ephemeral_container_statuses: list[ContainerStatus] | None = None
    resize: str | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] | None = None
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["Pod"] = "Pod"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus | None = None


class PodTemplateSpec(ApiModel):
    """The pod a workload (Deployment, Job, ...) creates: metadata and a pod spec."""

    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None


# ------------------------------------------------------------ ReplicationController
class ReplicationControllerSpec(ApiModel):
    """A ReplicaSet's spec before label selectors: ``selector`` is a plain label map."""

    replicas: int | None = None
    min_ready_seconds: int | None = None
    selector: SortedMap[str] | None = None
    template: PodTemplateSpec | None = None


class ReplicationControllerCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    last_transition_time: Time | None = None
    reason: str | None = None
    message: str | None = None


class ReplicationControllerStatus(ApiModel):
    replicas: int | None = None
    fully_labeled_replicas: int | None = None
    ready_replicas: int | None = None
    available_replicas: int | None = None
    observed_generation: int | None = None
    conditions: list[ReplicationControllerCondition] | None = None


class ReplicationController(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["ReplicationController"] = "ReplicationController"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ReplicationControllerSpec = Field(default_factory=ReplicationControllerSpec)
    status: ReplicationControllerStatus | None = None


# ------------------------------------------------------------------- Namespace etc.
class NamespaceSpec(ApiModel):
    finalizers: list[str] | None = None


class NamespaceStatus(ApiModel):
    phase: str | None = None
    conditions: list[JsonObject] | None = None


class Namespace(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["Namespace"] = "Namespace"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NamespaceSpec | None = None
    status: NamespaceStatus | None = None


class ObjectReference(ApiModel):
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    api_version: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class EventSource(ApiModel):
    component: str | None = None
    host: str | None = None


class Event(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["Event"] = "Event"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    involved_object: ObjectReference = Field(default_factory=ObjectReference)
    reason: str | None = None
    message: str | None = None
    source: EventSource | None = None
    first_timestamp: Time | None = None
    last_timestamp: Time | None = None
    count: int | None = None
    type: str | None = None
    event_time: MicroTime | None = None
    series: JsonObject | None = None
    action: str | None = None
    related: ObjectReference | None = None
    reporting_component: str | None = None
    reporting_instance: str | None = None


class ConfigMap(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["ConfigMap"] = "ConfigMap"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    immutable: bool | None = None
    data: SortedMap[str] | None = None
    binary_data: SortedMap[str] | None = None


class ScopedResourceSelectorRequirement(ApiModel):
    scope_name: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class ScopeSelector(ApiModel):
    match_expressions: list[ScopedResourceSelectorRequirement] | None = None


class ResourceQuotaSpec(ApiModel):
    hard: SortedMap[Quantity] | None = None
    scopes: list[str] | None = None
    scope_selector: ScopeSelector | None = None


class ResourceQuotaStatus(ApiModel):
    hard: SortedMap[Quantity] | None = None
    used: SortedMap[Quantity] | None = None


class ResourceQuota(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["ResourceQuota"] = "ResourceQuota"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceQuotaSpec | None = None
    status: ResourceQuotaStatus | None = None


class PodList(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["PodList"] = "PodList"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Pod] = Field(default_factory=list)


# ----------------------------------------------------------------------------- Service
class ServicePort(ApiModel):
    name: str | None = None
    protocol: str | None = None
    app_protocol: str | None = None
    port: int | None = None
    target_port: IntOrString | None = None
    node_port: int | None = None


class ClientIPConfig(ApiModel):
    timeout_seconds: int | None = None


class SessionAffinityConfig(ApiModel):
    client_ip: ClientIPConfig | None = Field(default=None, alias="clientIP")


class ServiceSpec(ApiModel):
    ports: list[ServicePort] | None = None
    selector: SortedMap[str] | None = None
    cluster_ip: str | None = Field(default=None, alias="clusterIP")
    cluster_ips: list[str] | None = Field(default=None, alias="clusterIPs")
    type: str | None = None
    external_ips: list[str] | None = Field(default=None, alias="externalIPs")
    session_affinity: str | None = None
    load_balancer_ip: str | None = Field(default=None, alias="loadBalancerIP")
    load_balancer_source_ranges: list[str] | None = None
    external_name: str | None = None
    external_traffic_policy: str | None = None
    health_check_node_port: int | None = None
    publish_not_ready_addresses: bool | None = None
    session_affinity_config: SessionAffinityConfig | None = None
    ip_families: list[str] | None = None
    ip_family_policy: str | None = None
    allocate_load_balancer_node_ports: bool | None = None
    load_balancer_class: str | None = None
    internal_traffic_policy: str | None = None
    traffic_distribution: str | None = None


class PortStatus(ApiModel):
    port: int | None = None
    protocol: str | None = None
    error: str | None = None


class LoadBalancerIngress(ApiModel):
    ip: str | None = None
    hostname: str | None = None
    ip_mode: str | None = None
    ports: list[PortStatus] | None = None


class LoadBalancerStatus(ApiModel):
    ingress: list[LoadBalancerIngress] | None = None


class ServiceStatus(ApiModel):
    load_balancer: LoadBalancerStatus | None = None
    conditions: list[Condition] | None = None


class Service(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["Service"] = "Service"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ServiceSpec = Field(default_factory=ServiceSpec)
    status: ServiceStatus | None = None


# ------------------------------------------------------------------------- Endpoints
class EndpointAddress(ApiModel):
    ip: str | None = None
    hostname: str | None = None
    node_name: str | None = None
    target_ref: ObjectReference | None = None


class EndpointPort(ApiModel):
    name: str | None = None
    port: int | None = None
    protocol: str | None = None
    app_protocol: str | None = None


class EndpointSubset(ApiModel):
    addresses: list[EndpointAddress] | None = None
    not_ready_addresses: list[EndpointAddress] | None = None
    ports: list[EndpointPort] | None = None


class Endpoints(ApiModel):
    """What a Service's selector finds: written by the endpoints controller
    (:mod:`allot.controllers.endpoints`), deprecated upstream in favour of EndpointSlice
    but still what ``kubectl describe svc`` shows."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["Endpoints"] = "Endpoints"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    subsets: list[EndpointSubset] | None = None


# ------------------------------------------------------------- ServiceAccount, Secret
class LocalObjectReference(ApiModel):
    name: str | None = None


class ServiceAccount(ApiModel):
    api_version: Literal["v1"] = "v1"
    kind: Literal["ServiceAccount"] = "ServiceAccount"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    secrets: list[ObjectReference] | None = None
    image_pull_secrets: list[LocalObjectReference] | None = None
    automount_service_account_token: bool | None = None


class Secret(ApiModel):
    """``data`` values are base64 text on the wire (Go's ``[]byte``); ``stringData`` is
    write-only: merged into ``data`` when the object is written."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["Secret"] = "Secret"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    immutable: bool | None = None
    data: SortedMap[str] | None = None
    string_data: SortedMap[str] | None = None
    type: str | None = None


_BASE64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def base64_error(text: str) -> str | None:
    """Why Go's standard base64 decoder refuses ``text`` (a Secret's ``data`` value), in
    its words (``illegal base64 data at input byte 4``); None when it decodes."""
    body = text.rstrip("=")
    padding = len(text) - len(body)
    for index, char in enumerate(body):
        if char not in _BASE64_ALPHABET:
            return f"illegal base64 data at input byte {index}"
    if padding and len(body) % 4 in (0, 1):  # padding where no quantum ends
        return f"illegal base64 data at input byte {len(body)}"
    if padding > 2 or len(text) % 4:  # a quantum cut short
        start = len(text) - len(text) % 4
        return f"illegal base64 data at input byte {start if not padding else len(text)}"
    return None
