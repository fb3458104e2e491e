"""core/v1 Service, ServiceAccount and Secret: defaulting and validation as upstream's
``SetDefaults_Service``/``SetDefaults_Secret`` and ``ValidateService``/``ValidateSecret``
(pkg/apis/core), with their texts and field paths. A Service's cluster IP is allocated by
the registry (:mod:`allot.registry.clusterips`), not here. Called through the strategy
modules :mod:`allot.registry.kinds.services`, ``serviceaccounts`` and ``secrets``."""

from __future__ import annotations

import base64
import ipaddress
import json
import re

from allot.api import core_v1 as corev1
from allot.validation import meta as metavalidation
from allot.validation import names
from allot.validation.field import (
    ErrorList,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)
from allot.validation.workloads import immutable

SPEC = Path("spec")
SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
SESSION_AFFINITIES = ["ClientIP", "None"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
TRAFFIC_POLICIES = ["Cluster", "Local"]
IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
DEFAULT_AFFINITY_TIMEOUT = 10800
SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
MAX_SECRET_BYTES = 1024 * 1024


# ------------------------------------------------------------------------ defaulting
def default_service(obj: corev1.Service) -> None:
    """``SetDefaults_Service``: type ClusterIP, session affinity None, ports TCP with the
    target port the port, traffic policies Cluster."""
    spec = obj.spec
    spec.type = spec.type or "ClusterIP"
    spec.session_affinity = spec.session_affinity or "None"
    if spec.session_affinity == "ClientIP":
        config = spec.session_affinity_config or corev1.SessionAffinityConfig()
        client = config.client_ip or corev1.ClientIPConfig()
        if client.timeout_seconds is None:
            client.timeout_seconds = DEFAULT_AFFINITY_TIMEOUT
        config.client_ip = client
        spec.session_affinity_config = config
    for port in spec.ports or []:
        port.protocol = port.protocol or "TCP"
        if port.target_port in (None, 0, ""):
            port.target_port = port.port
    if spec.type in ("NodePort", "LoadBalancer") and not spec.external_traffic_policy:
        spec.external_traffic_policy = "Cluster"
    if spec.type != "ExternalName" and spec.internal_traffic_policy is None:
        spec.internal_traffic_policy = "Cluster"
    if spec.type == "LoadBalancer" and spec.allocate_load_balancer_node_ports is None:
        spec.allocate_load_balancer_node_ports = True


def default_secret(obj: corev1.Secret) -> None:
    """``SetDefaults_Secret`` (type Opaque) and the v1 conversion of ``stringData``: its
    entries are written into ``data`` (winning over a same key there) and it is dropped."""
    obj.type = obj.type or "Opaque"
    if obj.string_data:
        data = dict(obj.data or {})
        for key, value in obj.string_data.items():
            data[key] = base64.b64encode(value.encode()).decode()
        obj.data = data
    obj.string_data = None


# --------------------------------------------------------------------------- Service
def validate_service(obj: corev1.Service) -> ErrorList:
    spec = obj.spec
    errors: ErrorList = []
    kind = spec.type or ""
    headless = spec.cluster_ip == "None"
    if not spec.ports and not headless and kind != "ExternalName":
        errors.append(required(SPEC.child("ports")))
    if kind not in SERVICE_TYPES:
        errors.append(not_supported(SPEC.child("type"), kind, SERVICE_TYPES))
    if kind == "ExternalName":
        errors += _validate_external_name(spec)
    errors += _validate_ports(spec)
    errors += _validate_cluster_ips(spec)
    if spec.session_affinity not in SESSION_AFFINITIES:
        errors.append(
            not_supported(
                SPEC.child("sessionAffinity"), spec.session_affinity or "", SESSION_AFFINITIES
            )
        )
    if spec.selector:
        errors += metavalidation.validate_labels(spec.selector, SPEC.child("selector"))
    for name, value in (
        ("externalTrafficPolicy", spec.external_traffic_policy),
        ("internalTrafficPolicy", spec.internal_traffic_policy),
    ):
        if value is not None and value not in TRAFFIC_POLICIES:
            errors.append(not_supported(SPEC.child(name), value, TRAFFIC_POLICIES))
    if spec.ip_family_policy is not None and spec.ip_family_policy not in IP_FAMILY_POLICIES:
        errors.append(
            not_supported(SPEC.child("ipFamilyPolicy"), spec.ip_family_policy, IP_FAMILY_POLICIES)
        )
    for index, family in enumerate(spec.ip_families or []):
        if family not in ("IPv4", "IPv6"):
            errors.append(
                not_supported(SPEC.child("ipFamilies").index(index), family, ["IPv4", "IPv6"])
            )
    return errors


def _validate_external_name(spec: corev1.ServiceSpec) -> ErrorList:
    errors: ErrorList = []
    if spec.cluster_ip:
        errors.append(
            forbidden(SPEC.child("clusterIPs"), "may not be set for ExternalName services")
        )
    name = (spec.external_name or "").rstrip(".")
    if not name:
        errors.append(required(SPEC.child("externalName")))
    else:
        errors += [
            invalid(SPEC.child("externalName"), spec.external_name, message)
            for message in names.is_dns1123_subdomain(name)
        ]
    return errors


def _validate_ports(spec: corev1.ServiceSpec) -> ErrorList:
    errors: ErrorList = []
    ports = spec.ports or []
    seen_names: set[str] = set()
    seen_ports: set[tuple[int | None, str | None]] = set()
    for index, port in enumerate(ports):
        path = SPEC.child("ports").index(index)
        if len(ports) > 1 and not port.name:
            errors.append(required(path.child("name")))
        elif port.name:
            errors += [
                invalid(path.child("name"), port.name, m) for m in names.is_dns1123_label(port.name)
            ]
            if port.name in seen_names:
                errors.append(duplicate(path.child("name"), port.name))
            seen_names.add(port.name)
        errors += _port_number(port.port, path.child("port"))
        if not port.protocol:
            errors.append(required(path.child("protocol")))
        elif port.protocol not in PROTOCOLS:
            errors.append(not_supported(path.child("protocol"), port.protocol, PROTOCOLS))
        errors += _validate_target_port(port.target_port, path.child("targetPort"))
        if port.node_port and spec.type == "ClusterIP":
            errors.append(
                forbidden(path.child("nodePort"), "may not be used when `type` is 'ClusterIP'")
            )
        elif port.node_port is not None:
            errors += _port_number(port.node_port, path.child("nodePort"))
        key = (port.port, port.protocol)
        if key in seen_ports:
            errors.append(duplicate(path, {"port": port.port, "protocol": port.protocol}))
        seen_ports.add(key)
    return errors


def _port_number(value: int | None, path: Path) -> ErrorList:
    return [invalid(path, value or 0, m) for m in names.is_valid_port_num(value or 0)]


def _validate_target_port(value: int | str | None, path: Path) -> ErrorList:
    if isinstance(value, int):
        return _port_number(value, path)
    if value is None:
        return []
    return [invalid(path, value, message) for message in names.is_valid_port_name(value)]


def _validate_cluster_ips(spec: corev1.ServiceSpec) -> ErrorList:
    errors: ErrorList = []
    for index, address in enumerate(
        spec.cluster_ips or ([spec.cluster_ip] if spec.cluster_ip else [])
    ):
        if address == "None" or not address:
            continue
        try:
            ipaddress.ip_address(address)
        except ValueError:
            errors.append(
                invalid(
                    SPEC.child("clusterIPs").index(index),
                    address,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )
            )
    if spec.cluster_ips and spec.cluster_ip and spec.cluster_ips[0] != spec.cluster_ip:
        errors.append(
            invalid(
                SPEC.child("clusterIPs"),
                spec.cluster_ips,
                "element [0] must match clusterIP",
            )
        )
    return errors


def validate_service_update(new: corev1.Service, old: corev1.Service) -> ErrorList:
    """The cluster IP may not change once set (unless to or from ExternalName)."""
    if "ExternalName" in (new.spec.type, old.spec.type):
        return []
    before, after = old.spec.cluster_ip, new.spec.cluster_ip
    if before and after != before:
        return [invalid(SPEC.child("clusterIPs").index(0), after or "", "may not change once set")]
    return []


# ---------------------------------------------------------------------- ServiceAccount
def validate_service_account(obj: corev1.ServiceAccount) -> ErrorList:
    return []


# ---------------------------------------------------------------------------- Secret
_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.key", "tls.crt"),
}


def validate_secret(obj: corev1.Secret) -> ErrorList:
    data = obj.data or {}
    path = Path("data")
    errors: ErrorList = []
    total = 0
    for key, value in data.items():
        if not SECRET_KEY.match(key):
            errors.append(
                invalid(
                    path.key(key),
                    key,
                    "a valid config key must consist of alphanumeric characters, '-', '_' or "
                    "'.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                    "validation is '[-._a-zA-Z0-9]+')",
                )
            )
        total += len(_decoded(value))
    if total > MAX_SECRET_BYTES:
        errors.append(too_long(path, MAX_SECRET_BYTES))
    errors += _validate_secret_type(obj, data, path)
    return errors


def _decoded(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        return value.encode()


def _validate_secret_type(obj: corev1.Secret, data: dict[str, str], path: Path) -> ErrorList:
    kind = obj.type or "Opaque"
    errors: ErrorList = []
    if kind == "kubernetes.io/service-account-token":
        annotations = obj.metadata.annotations or {}
        if not annotations.get("kubernetes.io/service-account.name"):
            errors.append(
                required(
                    Path("metadata").child("annotations").key("kubernetes.io/service-account.name")
                )
            )
    elif kind == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
        errors += [required(path.key("username")), required(path.key("password"))]
    for key in _REQUIRED_KEYS.get(kind, ()):
        if key not in data:
            errors.append(required(path.key(key)))
    for key in (".dockercfg", ".dockerconfigjson"):
        if kind.endswith(key.lstrip(".")) and key in data:
            try:
                json.loads(_decoded(data[key]))
            except ValueError as err:
                errors.append(invalid(path.key(key), "<secret contents redacted>", str(err)))
    return errors


def validate_secret_update(new: corev1.Secret, old: corev1.Secret) -> ErrorList:
    errors = immutable(new.type or "Opaque", old.type or "Opaque", Path("type"))
    if old.immutable:
        if not new.immutable:
            errors.append(
                forbidden(Path("immutable"), "field is immutable when `immutable` is set")
            )
        if (new.data or {}) != (old.data or {}):
            errors.append(forbidden(Path("data"), "field is immutable when `immutable` is set"))
    return errors
