"""networking.k8s.io/v1 defaulting and validation, as upstream's ``SetDefaults_*`` of
networking/v1 and ``pkg/apis/networking/validation``: Ingress rules, paths, backends and
TLS hosts, IngressClass controllers and parameters, NetworkPolicy ports, peers and policy
types, with upstream's texts and field paths. Names are checked by the kinds' name rules
(:mod:`allot.validation.objects`). Called through :mod:`allot.registry.kinds.networking`.
"""

from __future__ import annotations

import ipaddress

from allot.api import networking_v1 as net
from allot.api.core_v1_storage import TypedLocalObjectReference
from allot.api.meta import LabelSelector
from allot.validation import names
from allot.validation.field import (
    ErrorList,
    Path,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)
from allot.validation.meta import validate_kind_and_name
from allot.validation.workloads import immutable, validate_label_selector

SPEC = Path("spec")
PROTOCOLS = ["TCP", "UDP", "SCTP"]
INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
INVALID_PATH_SUFFIXES = ("/..", "/.")
MAX_CONTROLLER_LENGTH = 250


class GoNil:
    """A nil Go slice as a field error's bad value: printed ``null``, unquoted."""

    def __str__(self) -> str:
        return "null"


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------ Ingress
def validate_ingress(obj: net.Ingress) -> ErrorList:
    """``ValidateIngressCreate``/``ValidateIngressUpdate`` (the spec, and the class
    annotation agreeing with ``ingressClassName``)."""
    spec = obj.spec
    errors: ErrorList = []
    if not spec.rules and spec.default_backend is None:
        errors.append(
            invalid(
                SPEC,
                GoNil() if spec.rules is None else [],
                "either `defaultBackend` or `rules` must be specified",
            )
        )
    if spec.default_backend is not None:
        errors += _validate_backend(spec.default_backend, SPEC.child("defaultBackend"))
    for index, rule in enumerate(spec.rules or []):
        errors += _validate_rule(rule, SPEC.child("rules").index(index))
    for index, tls in enumerate(spec.tls or []):
        errors += _validate_tls(tls, SPEC.child("tls").index(index))
    if spec.ingress_class_name is not None:
        errors += [
            invalid(SPEC.child("ingressClassName"), spec.ingress_class_name, message)
            for message in names.is_dns1123_subdomain(spec.ingress_class_name)
        ]
    annotation = (obj.metadata.annotations or {}).get(net.CLASS_ANNOTATION)
    if annotation is not None and spec.ingress_class_name not in (None, annotation):
        errors.append(
            invalid(
                Path("annotations").child(net.CLASS_ANNOTATION),
                annotation,
                "must match `ingressClassName` when both are specified",
            )
        )
    return errors


def _host_errors(host: str) -> list[str]:
    if "*" in host:
        return names.is_wildcard_dns1123_subdomain(host)
    return names.is_dns1123_subdomain(host)


def _validate_rule(rule: net.IngressRule, path: Path) -> ErrorList:
    errors: ErrorList = []
    if rule.host:
        if _is_ip(rule.host):
            errors.append(
                invalid(path.child("host"), rule.host, "must be a DNS name, not an IP address")
            )
        errors += [invalid(path.child("host"), rule.host, m) for m in _host_errors(rule.host)]
    if rule.http is not None:
        http = path.child("http")
        if not rule.http.paths:
            errors.append(required(http.child("paths")))
        for index, each in enumerate(rule.http.paths or []):
            errors += _validate_path(each, http.child("paths").index(index))
    return errors


def _validate_path(each: net.HTTPIngressPath, path: Path) -> ErrorList:
    if each.path_type is None:
        return [required(path.child("pathType"), "pathType must be specified")]
    value, at = each.path or "", path.child("path")
    errors: ErrorList = []
    if each.path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errors.append(invalid(at, value, "must be an absolute path"))
        errors += [
            invalid(at, value, f"must not contain '{sequence}'")
            for sequence in INVALID_PATH_SEQUENCES
            if sequence in value
        ]
        errors += [
            invalid(at, value, f"cannot end with '{suffix}'")
            for suffix in INVALID_PATH_SUFFIXES
            if value.endswith(suffix)
        ]
    elif each.path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errors.append(invalid(at, value, "must be an absolute path"))
    else:
        errors.append(not_supported(path.child("pathType"), each.path_type, net.PATH_TYPES))
    return errors + _validate_backend(each.backend or net.IngressBackend(), path.child("backend"))


def _validate_backend(backend: net.IngressBackend, path: Path) -> ErrorList:
    if backend.resource is not None and backend.service is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if backend.resource is not None:
        return _validate_resource_reference(backend.resource, path.child("resource"))
    if backend.service is None:
        return [invalid(path, "", "resource or service backend is required")]
    service, name_path = backend.service, path.child("service", "name")
    errors: ErrorList = []
    if not service.name:
        errors.append(required(name_path))
    else:
        errors += [
            invalid(name_path, service.name, m) for m in names.is_dns1123_label(service.name)
        ]
    port = service.port or net.ServiceBackendPort()
    port_path = path.child("service", "port")
    if port.name and port.number:
        errors.append(invalid(path, "", "cannot set both port name & port number"))
    elif port.name:
        errors += [
            invalid(port_path.child("name"), port.name, m)
            for m in names.is_valid_port_name(port.name)
        ]
    elif port.number:
        errors += [
            invalid(port_path.child("number"), port.number, m)
            for m in names.is_valid_port_num(port.number)
        ]
    else:
        errors.append(required(path, "port name or number is required"))
    return errors


def _validate_resource_reference(ref: TypedLocalObjectReference, path: Path) -> ErrorList:
    errors: ErrorList = []
    if ref.api_group is not None:
        errors += [
            invalid(path.child("apiGroup"), ref.api_group, m)
            for m in names.is_dns1123_subdomain(ref.api_group)
        ]
    return errors + validate_kind_and_name(ref.kind, ref.name, path)


def _validate_tls(tls: net.IngressTLS, path: Path) -> ErrorList:
    errors: ErrorList = []
    for index, host in enumerate(tls.hosts or []):
        at = path.child("hosts").index(index)
        errors += [invalid(at, host, m) for m in _host_errors(host)]
    if tls.secret_name:
        errors += [
            invalid(path.child("secretName"), tls.secret_name, m)
            for m in names.is_dns1123_subdomain(tls.secret_name)
        ]
    return errors


def validate_ingress_status(new: net.Ingress, old: net.Ingress) -> ErrorList:
    """``ValidateIngressLoadBalancerStatus``: addresses are IPs, host names DNS names."""
    status = (new.status or net.IngressStatus()).load_balancer or net.IngressLoadBalancerStatus()
    path = Path("status").child("loadBalancer", "ingress")
    errors: ErrorList = []
    for index, point in enumerate(status.ingress or []):
        at = path.index(index)
        if point.ip and not _is_ip(point.ip):
            errors.append(
                invalid(
                    at.child("ip"),
                    point.ip,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )
            )
        if point.hostname:
            errors += [
                invalid(at.child("hostname"), point.hostname, m)
                for m in names.is_dns1123_subdomain(point.hostname)
            ]
            if _is_ip(point.hostname):
                errors.append(
                    invalid(
                        at.child("hostname"),
                        point.hostname,
                        "must be a DNS name, not an IP address",
                    )
                )
    return errors


# ------------------------------------------------------------------------- IngressClass
def default_ingress_class(obj: net.IngressClass) -> None:
    """``SetDefaults_IngressClass``: a parameters reference is cluster-scoped unless said."""
    parameters = obj.spec.parameters
    if parameters is not None and parameters.scope is None:
        parameters.scope = "Cluster"


def validate_ingress_class(obj: net.IngressClass) -> ErrorList:
    spec, path = obj.spec, SPEC.child("controller")
    errors: ErrorList = []
    if not spec.controller:
        errors.append(required(path))
    else:
        if len(spec.controller) > MAX_CONTROLLER_LENGTH:
            errors.append(too_long(path, MAX_CONTROLLER_LENGTH))
        errors += [
            invalid(path, spec.controller, m)
            for m in names.is_domain_prefixed_path(spec.controller)
        ]
    if spec.parameters is not None:
        errors += _validate_parameters(spec.parameters, SPEC.child("parameters"))
    return errors


def _validate_parameters(params: net.IngressClassParametersReference, path: Path) -> ErrorList:
    errors = _validate_resource_reference(
        TypedLocalObjectReference(api_group=params.api_group, kind=params.kind, name=params.name),
        path,
    )
    if params.scope is None:
        return [*errors, required(path.child("scope"))]
    if params.scope not in net.PARAMETER_SCOPES:
        return [*errors, not_supported(path.child("scope"), params.scope, net.PARAMETER_SCOPES)]
    if params.scope == "Namespace":
        if params.namespace is None:
            errors.append(
                required(path.child("namespace"), "`parameters.scope` is set to 'Namespace'")
            )
        else:
            errors += [
                invalid(path.child("namespace"), params.namespace, m)
                for m in names.is_dns1123_label(params.namespace)
            ]
    elif params.namespace is not None:
        errors.append(forbidden(path.child("namespace"), "`parameters.scope` is set to 'Cluster'"))
    return errors


def validate_ingress_class_update(new: net.IngressClass, old: net.IngressClass) -> ErrorList:
    """The controller is immutable."""
    return immutable(new.spec.controller, old.spec.controller, SPEC.child("controller"))


# ------------------------------------------------------------------------ NetworkPolicy
def default_network_policy(obj: net.NetworkPolicy) -> None:
    """``SetDefaults_NetworkPolicy``/``SetDefaults_NetworkPolicyPort``: ports are TCP;
    without ``policyTypes`` a policy is about ingress, and egress too when it has egress
    rules; the pod selector is always written (``{}`` selects every pod)."""
    spec = obj.spec
    if spec.pod_selector is None:
        spec.pod_selector = LabelSelector()
    rules: list[net.NetworkPolicyIngressRule | net.NetworkPolicyEgressRule] = [
        *(spec.ingress or []),
        *(spec.egress or []),
    ]
    for rule in rules:
        for port in rule.ports or []:
            if port.protocol is None:
                port.protocol = "TCP"
    if not spec.policy_types:
        spec.policy_types = ["Ingress", "Egress"] if spec.egress else ["Ingress"]


def validate_network_policy(obj: net.NetworkPolicy) -> ErrorList:
    spec = obj.spec
    errors = validate_label_selector(
        spec.pod_selector or LabelSelector(), SPEC.child("podSelector")
    )
    for index, ingress in enumerate(spec.ingress or []):
        at = SPEC.child("ingress").index(index)
        errors += _validate_rule_parts(ingress.ports, ingress.from_, at, "from")
    for index, egress in enumerate(spec.egress or []):
        at = SPEC.child("egress").index(index)
        errors += _validate_rule_parts(egress.ports, egress.to, at, "to")
    types = spec.policy_types or []
    if len(types) > len(net.POLICY_TYPES):
        errors.append(
            invalid(SPEC.child("policyTypes"), types, "may not specify more than two policyTypes")
        )
        return errors
    for index, kind in enumerate(types):
        if kind not in net.POLICY_TYPES:
            errors.append(
                not_supported(SPEC.child("policyTypes").index(index), kind, net.POLICY_TYPES)
            )
    return errors


def _validate_rule_parts(
    ports: list[net.NetworkPolicyPort] | None,
    peers: list[net.NetworkPolicyPeer] | None,
    path: Path,
    peers_name: str,
) -> ErrorList:
    errors: ErrorList = []
    for index, port in enumerate(ports or []):
        errors += _validate_port(port, path.child("ports").index(index))
    for index, peer in enumerate(peers or []):
        errors += _validate_peer(peer, path.child(peers_name).index(index))
    return errors


def _validate_port(port: net.NetworkPolicyPort, path: Path) -> ErrorList:
    errors: ErrorList = []
    if port.protocol is not None and port.protocol not in PROTOCOLS:
        errors.append(not_supported(path.child("protocol"), port.protocol, PROTOCOLS))
    end = port.end_port
    if isinstance(port.port, int):
        errors += [
            invalid(path.child("port"), port.port, m) for m in names.is_valid_port_num(port.port)
        ]
        if end is not None:
            if end < port.port:
                errors.append(
                    invalid(path.child("endPort"), end, "must be greater than or equal to `port`")
                )
            errors += [invalid(path.child("endPort"), end, m) for m in names.is_valid_port_num(end)]
    elif port.port is not None:
        if end is not None:
            errors.append(
                invalid(
                    path.child("endPort"), end, "may not be specified when `port` is non-numeric"
                )
            )
        errors += [
            invalid(path.child("port"), port.port, m) for m in names.is_valid_port_name(port.port)
        ]
    elif end is not None:
        errors.append(
            invalid(path.child("endPort"), end, "may not be specified when `port` is not specified")
        )
    return errors


def _validate_peer(peer: net.NetworkPolicyPeer, path: Path) -> ErrorList:
    errors: ErrorList = []
    count = 0
    for name, selector in (
        ("podSelector", peer.pod_selector),
        ("namespaceSelector", peer.namespace_selector),
    ):
        if selector is not None:
            count += 1
            errors += validate_label_selector(selector, path.child(name))
    if peer.ip_block is not None:
        count += 1
        errors += _validate_ip_block(peer.ip_block, path.child("ipBlock"))
    if count == 0:
        errors.append(required(path, "must specify a peer"))
    elif count > 1 and peer.ip_block is not None:
        errors.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return errors


def _cidr(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


_CIDR_TEXT = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def _validate_ip_block(block: net.IPBlock, path: Path) -> ErrorList:
    if not block.cidr:
        return [required(path.child("cidr"))]
    network = _cidr(block.cidr)
    if network is None or "/" not in block.cidr:
        return [invalid(path.child("cidr"), block.cidr, _CIDR_TEXT)]
    errors: ErrorList = []
    for index, text in enumerate(block.except_ or []):
        at = path.child("except").index(index)
        inner = _cidr(text)
        if inner is None or "/" not in text:
            errors.append(invalid(at, text, _CIDR_TEXT))
        elif inner.version != network.version or not (
            inner.network_address in network and network.prefixlen < inner.prefixlen
        ):
            errors.append(invalid(at, text, "must be a strict subset of `cidr`"))
    return errors
