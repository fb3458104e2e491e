"""Service: serving details, a new Service's status, ``kubectl get svc`` columns (upstream's
``printService``), defaulting (the cluster IP allocation is the registry's: see
:mod:`allot.registry.clusterips`) and validation. Services are stored and served only:
nothing routes traffic to them (the conformance ledger says so)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from allot.api.kinds import lookup
from allot.registry import clusterips
from allot.registry.kinds import KindStrategy, Preparation, Table
from allot.registry.kinds.columns import AGE, NAME, age, column
from allot.statuses import InvalidObjectError
from allot.types import Obj
from allot.validation import services
from allot.validation.objects import KindRules


def _external_ip(spec: Obj, status: Obj) -> str:
    kind = spec.get("type") or "ClusterIP"
    external = list(spec.get("externalIPs") or [])
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    if kind == "LoadBalancer":
        ingress = (status.get("loadBalancer") or {}).get("ingress") or []
        found = [i.get("ip") or i.get("hostname") or "" for i in ingress] + external
        addresses = ",".join(a for a in found if a)
        if not addresses:
            return "<pending>"
        return addresses if len(addresses) <= 16 else addresses[:13] + "..."
    return ",".join(external) if external else "<none>"


def _ports(spec: Obj) -> str:
    texts = []
    for port in spec.get("ports") or []:
        protocol = port.get("protocol") or "TCP"
        if port.get("nodePort"):
            texts.append(f"{port.get('port')}:{port['nodePort']}/{protocol}")
        else:
            texts.append(f"{port.get('port')}/{protocol}")
    return ",".join(texts) if texts else "<none>"


def _selector(spec: Obj) -> str:
    selector = spec.get("selector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"


def _cells(obj: Obj, now: dt.datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        spec.get("type") or "ClusterIP",
        spec.get("clusterIP") or "<none>",
        _external_ip(spec, status),
        _ports(spec),
        age(obj, now),
        _selector(spec),
    ]


def _allocate(obj: Obj, preparation: Preparation) -> None:
    """The cluster IP and node ports; a taken or out-of-range request is Invalid."""
    try:
        clusterips.allocate(obj, preparation.existing())
    except clusterips.AllocationError as err:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise InvalidObjectError(lookup("v1", "Service"), name, err.errors) from None


def _empty_status(obj: Obj) -> None:
    """``PrepareForCreate``: a client's status is dropped (``loadBalancer`` is always
    written)."""
    obj["status"] = {"loadBalancer": {}}


STRATEGIES = (
    KindStrategy(
        "Service",
        "service",
        generation=False,
        short_names=("svc",),
        returns_deleted_object=True,  # upstream services/storage: ReturnDeletedObject
        categories=("all",),
        subresources=("status",),
        rules=KindRules(
            defaults=services.default_service,
            validate=lambda obj, context: services.validate_service(obj),
            validate_update=lambda new, old, context: services.validate_service_update(new, old),
        ),
        initial_status=_empty_status,
        prepare_create=_allocate,
        prepare_update=clusterips.keep_allocated,
        table=Table(
            [
                NAME,
                column("Type", "type determines how the Service is exposed."),
                column("Cluster-IP", "clusterIP is the IP address of the service."),
                column(
                    "External-IP",
                    "externalIPs is a list of IP addresses for which nodes in the cluster "
                    "will also accept traffic for this service.",
                ),
                column("Port(s)", "The list of ports that are exposed by this service."),
                AGE,
                column(
                    "Selector",
                    "Route service traffic to pods with label keys and values matching this "
                    "selector.",
                    1,
                ),
            ],
            _cells,
        ),
    ),
)
