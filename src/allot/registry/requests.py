"""What a request is about: a served resource, a namespace, a name and a subresource.

``/api/v1/namespaces/ns/pods/p/log`` names resource pods, namespace ns, name p and
subresource log. The HTTP router (:mod:`allot.apiserver.app`) hands the path's parts to
:func:`resolve_target`, which handles the core and named groups, cluster-wide collections
of namespaced resources and the namespace object itself (``/api/v1/namespaces/ns``);
controllers build :class:`Target` values directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from allot.registry import resources
from allot.registry.resources import ServedResource


@dataclass(frozen=True)
class Target:
    resource: ServedResource
    namespace: str | None  # None: across all namespaces (or cluster-scoped)
    name: str | None
    subresource: str


def resolve_target(
    cluster: str,
    group: str,
    version: str,
    namespace: str | None,
    plural: str,
    name: str | None,
    subresource: str = "",
) -> Target | None:
    """What a routed REST path names, or None when it names nothing served.

    ``namespace`` comes from a ``namespaces/<ns>/<plural>`` path. Such a path whose plural
    is not a served kind is the namespace object's own subresource
    (``namespaces/<name>/finalize``), as kube-apiserver reads it. ``cluster``'s custom
    resources (its CRDs) are served besides the built-in ones."""
    if namespace is not None and resources.lookup(group, version, plural, cluster) is None:
        if name is not None:
            return None
        namespace, plural, name, subresource = None, "namespaces", namespace, plural
    resource = resources.lookup(group, version, plural, cluster)
    if resource is None:
        return None
    if subresource and subresource not in resource.subresources:
        return None
    if namespace is not None and not resource.namespaced:
        return None
    return Target(resource, namespace, name, subresource)
