"""Parsing a Kubernetes REST path into what it names.

``/api/v1/namespaces/ns/pods/p/log`` -> resource pods, namespace ns, name p, subresource
log. Handles the core and named groups, cluster-wide collections of namespaced resources,
and the namespace object itself (``/api/v1/namespaces/ns``). Called by the router.
"""

from __future__ import annotations

from dataclasses import dataclass

from allot.apiserver import resources
from allot.apiserver.resources import ServedResource


@dataclass(frozen=True)
class Target:
    resource: ServedResource
    namespace: str | None  # None: across all namespaces (or cluster-scoped)
    name: str | None
    subresource: str


def parse_resource_path(segments: list[str]) -> Target | None:
    """``segments`` starts after the cluster prefix (``["api", "v1", ...]``)."""
    if len(segments) >= 2 and segments[0] == "api":
        group, version, rest = "", segments[1], segments[2:]
    elif len(segments) >= 3 and segments[0] == "apis":
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    namespace: str | None = None
    if (
        len(rest) >= 3
        and rest[0] == "namespaces"
        and resources.lookup(group, version, rest[2]) is not None
    ):
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return None
    resource = resources.lookup(group, version, rest[0])
    if resource is None or len(rest) > 3:
        return None
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) == 3 else ""
    if subresource and subresource not in resource.subresources:
        return None
    if namespace is not None and not resource.namespaced:
        return None
    return Target(resource, namespace, name, subresource)
