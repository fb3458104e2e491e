"""A Service's cluster IP and node ports, allocated when it is created, as the API
server's service REST storage does before validating it.

Cluster IPs come from 10.96.0.0/12 (kube-apiserver's default
``--service-cluster-ip-range``); node ports from 30000-32767. Each allocation starts from
a hash of the Service's namespace and name and probes to the next free address, so a
cluster's IPs are deterministic for a given history and an address in use by another
Service of the cluster is never handed out again (an address is free once its Service is
gone: the allocation reads the live Services, there is no separate bitmap). A requested
address is honoured when free and in range, otherwise refused with upstream's text.
Called through the Service strategy's ``prepare_create``
(:mod:`allot.registry.kinds.services`)."""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable

from allot.types import Obj
from allot.validation.field import ErrorList, Path, invalid

SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/12")
NODE_PORTS = range(30000, 32768)
_RESERVED = {SERVICE_RANGE.network_address, SERVICE_RANGE.network_address + 1}
SPEC = Path("spec")


class AllocationError(Exception):
    def __init__(self, errors: ErrorList) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


def allocate(service: Obj, existing: Iterable[Obj]) -> None:
    """Fill a new Service's ``clusterIP``/``clusterIPs``, IP families and node ports (the
    wire object, before decoding); raises AllocationError for a requested address that is
    taken or out of range."""
    spec = service.get("spec")
    if not isinstance(spec, dict):
        return
    kind = spec.get("type") or "ClusterIP"
    if kind == "ExternalName":
        return
    others = [o for o in existing if o is not service]
    key = f"{service['metadata'].get('namespace', '')}/{service['metadata'].get('name', '')}"
    _allocate_ip(spec, key, others)
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("ipFamilies", ["IPv4"])
    wants_ports = kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False
    )
    if wants_ports:
        _allocate_node_ports(spec, key, others)


def _allocate_ip(spec: Obj, key: str, others: list[Obj]) -> None:
    listed = spec.get("clusterIPs")
    requested = spec.get("clusterIP") or (
        listed[0] if isinstance(listed, list) and listed else None
    )
    if not isinstance(requested, str | None) or not isinstance(listed, list | None):
        return  # a wrong type: the decoder names it
    if requested == "None":
        spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
        return
    used = {
        str((o.get("spec") or {}).get("clusterIP"))
        for o in others
        if (o.get("spec") or {}).get("clusterIP")
    }
    if requested:
        _check_requested(str(requested), used)
        address = str(requested)
    else:
        address = _free_address(key, used)
    spec["clusterIP"], spec["clusterIPs"] = address, [address]


def _check_requested(address: str, used: set[str]) -> None:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return  # validation names the malformed address
    path = SPEC.child("clusterIPs")
    if parsed not in SERVICE_RANGE:
        raise AllocationError(
            [
                invalid(
                    path,
                    [address],
                    f"failed to allocate IP {address}: the provided IP ({address}) is not in "
                    f"the valid range. The range of valid IPs is {SERVICE_RANGE}",
                )
            ]
        )
    if address in used:
        raise AllocationError(
            [
                invalid(
                    path,
                    [address],
                    f"failed to allocate IP {address}: provided IP is already allocated",
                )
            ]
        )


def _free_address(key: str, used: set[str]) -> str:
    size = SERVICE_RANGE.num_addresses
    start = _hash(key) % size
    for step in range(size):
        candidate = SERVICE_RANGE.network_address + (start + step) % size
        if candidate in _RESERVED or candidate == SERVICE_RANGE.broadcast_address:
            continue
        if str(candidate) not in used:
            return str(candidate)
    raise AllocationError(
        [invalid(SPEC.child("clusterIPs"), [], "failed to allocate IP: range is full")]
    )


def _allocate_node_ports(spec: Obj, key: str, others: list[Obj]) -> None:
    used = {
        port.get("nodePort")
        for other in others
        for port in (other.get("spec") or {}).get("ports") or []
        if isinstance(port, dict) and port.get("nodePort")
    }
    ports = spec.get("ports")
    for index, port in enumerate(ports if isinstance(ports, list) else []):
        if not isinstance(port, dict):
            continue
        if not isinstance(port.get("nodePort") or 0, int):
            continue  # a wrong type: the decoder names it
        if port.get("nodePort"):
            _check_node_port(port["nodePort"], index)
            if port["nodePort"] in used:
                raise AllocationError(
                    [
                        invalid(
                            SPEC.child("ports").index(index).child("nodePort"),
                            port["nodePort"],
                            "provided port is already allocated",
                        )
                    ]
                )
            used.add(port["nodePort"])
            continue
        start = _hash(f"{key}/{index}") % len(NODE_PORTS)
        for step in range(len(NODE_PORTS)):
            candidate = NODE_PORTS[(start + step) % len(NODE_PORTS)]
            if candidate not in used:
                port["nodePort"] = candidate
                used.add(candidate)
                break


def _check_node_port(value: object, index: int) -> None:
    if isinstance(value, int) and value not in NODE_PORTS:
        raise AllocationError(
            [
                invalid(
                    SPEC.child("ports").index(index).child("nodePort"),
                    value,
                    "provided port is not in the valid range. The range of valid ports is "
                    f"{NODE_PORTS.start}-{NODE_PORTS.stop - 1}",
                )
            ]
        )


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def keep_allocated(service: Obj, stored: Obj) -> None:
    """An update that leaves out the allocated values (``kubectl replace`` of the original
    manifest) keeps them: cluster IPs, IP families and the node port of each port, as
    upstream's ``patchAllocatedValues`` does, unless the type changes to ExternalName."""
    spec, before = service.get("spec"), stored.get("spec") or {}
    if not isinstance(spec, dict) or (spec.get("type") or "ClusterIP") == "ExternalName":
        return
    if not spec.get("clusterIP") and not spec.get("clusterIPs"):
        for key in ("clusterIP", "clusterIPs"):
            if key in before:
                spec[key] = before[key]
    for key in ("ipFamilies", "ipFamilyPolicy"):
        if key not in spec and key in before:
            spec[key] = before[key]
    if (spec.get("type") or "ClusterIP") == "ClusterIP":
        return
    old_ports = {
        (p.get("port"), p.get("protocol") or "TCP"): p.get("nodePort")
        for p in before.get("ports") or []
        if isinstance(p, dict)
    }
    ports = spec.get("ports")
    for port in ports if isinstance(ports, list) else []:
        if isinstance(port, dict) and not port.get("nodePort"):
            identity = (port.get("port"), port.get("protocol") or "TCP")
            if not all(isinstance(part, int | str) for part in identity):
                continue  # a wrong type: the decoder names it
            node_port = old_ports.get(identity)
            if node_port:
                port["nodePort"] = node_port
