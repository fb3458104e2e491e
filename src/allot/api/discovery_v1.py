"""``discovery.k8s.io/v1`` EndpointSlice, with every field Kubernetes 1.36 defines.

Written by the endpointslice controller (:mod:`allot.controllers.endpoints`) for every
Service with a selector, and accepted from clients as upstream accepts them. Served by
:mod:`allot.registry.kinds.endpoints`, validated by :mod:`allot.validation.endpoints`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from allot.api.base import ApiModel, SortedMap
from allot.api.core_v1 import ObjectReference
from allot.api.meta import ObjectMeta

ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]


class EndpointConditions(ApiModel):
    ready: bool | None = None
    serving: bool | None = None
    terminating: bool | None = None


class ForZone(ApiModel):
    name: str | None = None


class ForNode(ApiModel):
    name: str | None = None


class EndpointHints(ApiModel):
    for_zones: list[ForZone] | None = None
    for_nodes: list[ForNode] | None = None


class Endpoint(ApiModel):
    addresses: list[str] | None = None
    conditions: EndpointConditions | None = None
    hostname: str | None = None
    target_ref: ObjectReference | None = None
    deprecated_topology: SortedMap[str] | None = None
    node_name: str | None = None
    zone: str | None = None
    hints: EndpointHints | None = None


class EndpointPort(ApiModel):
    name: str | None = None
    protocol: str | None = None
    port: int | None = None
    app_protocol: str | None = None


class EndpointSlice(ApiModel):
    api_version: Literal["discovery.k8s.io/v1"] = "discovery.k8s.io/v1"
    kind: Literal["EndpointSlice"] = "EndpointSlice"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    address_type: str | None = None
    endpoints: list[Endpoint] | None = None
    ports: list[EndpointPort] | None = None
