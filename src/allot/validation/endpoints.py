"""core/v1 Endpoints and discovery.k8s.io/v1 EndpointSlice validation, as upstream's
``ValidateEndpoints`` (pkg/apis/core/validation) and ``ValidateEndpointSlice``
(pkg/apis/discovery/validation), with their texts and field paths. **Deviation**: the
loopback rule of ``ValidateNonSpecialIP`` is not applied, because every pod of allot's
simulated runtime reports ``127.0.0.1`` and the controllers must be able to write it (the
conformance ledger says so). Called through :mod:`allot.registry.kinds.endpoints`."""

from __future__ import annotations

import ipaddress

from allot.api import core_v1 as corev1
from allot.api import discovery_v1 as discovery
from allot.validation import meta as metavalidation
from allot.validation import names
from allot.validation.field import (
    ErrorList,
    Path,
    duplicate,
    invalid,
    not_supported,
    required,
    too_many,
)
from allot.validation.workloads import immutable

PROTOCOLS = ["SCTP", "TCP", "UDP"]
MAX_TOPOLOGY_LABELS = 16
MAX_ADDRESSES = 100
MAX_PORTS = 100
MAX_ENDPOINTS = 1000
MAX_HINTS = 8
VALID_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


# ------------------------------------------------------------------------- Endpoints
def validate_endpoints(obj: corev1.Endpoints) -> ErrorList:
    errors: ErrorList = []
    for index, subset in enumerate(obj.subsets or []):
        path = Path("subsets").index(index)
        if not subset.addresses and not subset.not_ready_addresses:
            errors.append(required(path, "must specify `addresses` or `notReadyAddresses`"))
        for position, address in enumerate(subset.addresses or []):
            errors += _endpoint_address(address, path.child("addresses").index(position))
        for position, address in enumerate(subset.not_ready_addresses or []):
            errors += _endpoint_address(address, path.child("notReadyAddresses").index(position))
        ports = subset.ports or []
        for position, port in enumerate(ports):
            errors += _endpoint_port(port, len(ports) > 1, path.child("ports").index(position))
    return errors


def _endpoint_address(address: corev1.EndpointAddress, path: Path) -> ErrorList:
    ip = address.ip or ""
    errors: ErrorList = []
    if _parse(ip) is None:
        errors.append(invalid(path.child("ip"), ip, VALID_IP))
    if address.hostname:
        errors += metavalidation.validate_dns_label(address.hostname, path.child("hostname"))
    if address.node_name is not None:
        errors += [
            invalid(path.child("nodeName"), address.node_name, message)
            for message in names.is_dns1123_subdomain(address.node_name)
        ]
    return errors + non_special_ip(ip, path.child("ip"))


def _endpoint_port(port: corev1.EndpointPort, name_required: bool, path: Path) -> ErrorList:
    errors: ErrorList = []
    if name_required and not port.name:
        errors.append(required(path.child("name")))
    elif port.name:
        errors += metavalidation.validate_dns_label(port.name, path.child("name"))
    if port.port is None or not 1 <= port.port <= 65535:
        errors.append(
            invalid(path.child("port"), port.port or 0, "must be between 1 and 65535, inclusive")
        )
    errors += _protocol(port.protocol, path.child("protocol"))
    return errors + _app_protocol(port.app_protocol, path.child("appProtocol"))


def _protocol(protocol: str | None, path: Path) -> ErrorList:
    if not protocol:
        return [required(path)]
    if protocol not in PROTOCOLS:
        return [not_supported(path, protocol, PROTOCOLS)]
    return []


def _parse(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def non_special_ip(text: str, path: Path) -> ErrorList:
    """``ValidateNonSpecialIP`` without its loopback rule (see the module's docstring)."""
    ip = _parse(text)
    if ip is None:
        return [invalid(path, text, "must be a valid IP address")]
    errors: ErrorList = []
    if ip.is_unspecified:
        errors.append(invalid(path, text, f"may not be unspecified ({text})"))
    if ip.is_link_local:
        errors.append(
            invalid(path, text, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")
        )
    if ip in _LINK_LOCAL_MULTICAST_V4 or ip in _LINK_LOCAL_MULTICAST_V6:
        errors.append(
            invalid(
                path,
                text,
                "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
            )
        )
    return errors


_LINK_LOCAL_MULTICAST_V4 = ipaddress.ip_network("224.0.0.0/24")
_LINK_LOCAL_MULTICAST_V6 = ipaddress.ip_network("ff02::/16")


# --------------------------------------------------------------------- EndpointSlice
def validate_endpoint_slice(obj: discovery.EndpointSlice) -> ErrorList:
    address_type = obj.address_type or ""
    errors: ErrorList = []
    if not address_type:
        errors.append(required(Path("addressType")))
    elif address_type not in discovery.ADDRESS_TYPES:
        errors.append(not_supported(Path("addressType"), address_type, discovery.ADDRESS_TYPES))
    errors += _slice_endpoints(obj.endpoints or [], address_type)
    return errors + _slice_ports(obj.ports or [])


def validate_endpoint_slice_update(
    new: discovery.EndpointSlice, old: discovery.EndpointSlice
) -> ErrorList:
    return immutable(new.address_type, old.address_type, Path("addressType"))


def _slice_endpoints(endpoints: list[discovery.Endpoint], address_type: str) -> ErrorList:
    path = Path("endpoints")
    if len(endpoints) > MAX_ENDPOINTS:
        return [too_many(path, len(endpoints), MAX_ENDPOINTS)]
    errors: ErrorList = []
    for index, endpoint in enumerate(endpoints):
        at = path.index(index)
        addresses = endpoint.addresses or []
        if not addresses:
            errors.append(required(at.child("addresses"), "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            errors.append(too_many(at.child("addresses"), len(addresses), MAX_ADDRESSES))
        for position, address in enumerate(addresses):
            errors += _slice_address(address, address_type, at.child("addresses").index(position))
        errors += _endpoint_details(endpoint, at)
    return errors


def _slice_address(address: str, address_type: str, path: Path) -> ErrorList:
    if address_type in ("IPv4", "IPv6"):
        ip = _parse(address)
        if ip is None or ip.version != int(address_type[-1]):
            return [invalid(path, address, f"must be a valid {address_type} address")]
        return non_special_ip(address, path)
    if address_type == "FQDN":
        return [invalid(path, address, m) for m in names.is_dns1123_subdomain(address)]
    return []


def _endpoint_details(endpoint: discovery.Endpoint, path: Path) -> ErrorList:
    errors: ErrorList = []
    topology = endpoint.deprecated_topology or {}
    if len(topology) > MAX_TOPOLOGY_LABELS:
        errors.append(
            too_many(path.child("deprecatedTopology"), len(topology), MAX_TOPOLOGY_LABELS)
        )
    errors += metavalidation.validate_labels(topology, path.child("deprecatedTopology"))
    if endpoint.node_name is not None:
        errors += [
            invalid(path.child("nodeName"), endpoint.node_name, message)
            for message in names.is_dns1123_subdomain(endpoint.node_name)
        ]
    if endpoint.hostname is not None:
        errors += metavalidation.validate_dns_label(endpoint.hostname, path.child("hostname"))
    if endpoint.hints is not None:
        errors += _hints(endpoint.hints, path.child("hints"))
    return errors


def _hints(hints: discovery.EndpointHints, path: Path) -> ErrorList:
    errors: ErrorList = []
    named: list[tuple[str, list[str]]] = [
        ("forZones", [zone.name or "" for zone in hints.for_zones or []]),
        ("forNodes", [node.name or "" for node in hints.for_nodes or []]),
    ]
    for field, entries in named:
        if len(entries) > MAX_HINTS:
            errors.append(too_many(path.child(field), len(entries), MAX_HINTS))
            continue
        seen: set[str] = set()
        for index, name in enumerate(entries):
            if name in seen:
                errors.append(duplicate(path.child(field).index(index), name))
            seen.add(name)
    return errors


def _slice_ports(ports: list[discovery.EndpointPort]) -> ErrorList:
    path = Path("ports")
    if len(ports) > MAX_PORTS:
        return [too_many(path, len(ports), MAX_PORTS)]
    errors: ErrorList = []
    seen: set[str] = set()
    for index, port in enumerate(ports):
        at = path.index(index)
        name = port.name or ""
        if name:
            errors += metavalidation.validate_dns_label(name, at.child("name"))
        if name in seen:
            errors.append(duplicate(at.child("name"), name))
        seen.add(name)
        errors += _protocol(port.protocol, at.child("protocol"))
        errors += _app_protocol(port.app_protocol, at.child("appProtocol"))
    return errors


def _app_protocol(value: str | None, path: Path) -> ErrorList:
    """An ``appProtocol``, when given, is a qualified name."""
    if value is None:
        return []
    return [invalid(path, value, message) for message in names.is_qualified_name(value)]
