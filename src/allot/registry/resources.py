"""The resources the API server serves, with what discovery and the handlers need.

Each :class:`ServedResource` joins the model's kind information with the serving details
its strategy module gives (:mod:`allot.registry.kinds`: singular name, short names,
categories, subresources, hence whether writes to the main resource keep ``status``) and
the store key. The registry is looked up by
group/version/plural from request paths. Built-in resources are served alike in every
cluster; custom ones (CRD versions) only in the cluster whose CRD made them, so every lookup
that can meet one names the cluster. Called by the handlers, discovery and OpenAPI.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from allot.api.kinds import KINDS, KindInfo
from allot.registry.kinds import strategy
from allot.store import Resource


@dataclass(frozen=True)
class ServedResource:
    info: KindInfo
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    columns: tuple[tuple[str, str, str], ...] = ()  # custom kinds: (name, type, jsonPath)
    custom: bool = False
    returns_deleted_object: bool = False  # see ``KindStrategy``

    @property
    def group(self) -> str:
        return self.info.group

    @property
    def version(self) -> str:
        return self.info.version

    @property
    def plural(self) -> str:
        return self.info.plural

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def namespaced(self) -> bool:
        return self.info.namespaced

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @cached_property
    def store(self) -> Resource:
        """The store's view of this resource (made once: every read and write asks)."""
        return Resource(self.group, self.plural, self.kind, self.namespaced)

    @property
    def api_version(self) -> str:
        return self.info.api_version

    @property
    def verbs(self) -> list[str]:
        if self.kind == "Namespace":  # upstream serves no deletecollection of namespaces
            return ["create", "delete", "get", "list", "patch", "update", "watch"]
        return ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _served(info: KindInfo) -> ServedResource:
    details = strategy(info.kind)
    return ServedResource(
        info,
        details.singular,
        details.short_names,
        details.categories,
        details.subresources,
        returns_deleted_object=details.returns_deleted_object,
    )


_INFO_BY_PATH = {(info.group, info.version, info.plural): info for info in KINDS}
_INFO_BY_KIND = {info.kind: info for info in KINDS}
_BUILT_IN_STORAGE = {(info.group, info.plural) for info in KINDS}
_BUILT_IN: dict[str, ServedResource] = {}
"""Built-in resources by kind, each made when first looked up: its strategy module (and so
its validators and model) is imported then, not with this module (start-up, issue 15)."""


def _built_in(info: KindInfo) -> ServedResource:
    served = _BUILT_IN.get(info.kind)
    if served is None:
        served = _BUILT_IN[info.kind] = _served(info)
    return served


def built_in_resources() -> list[ServedResource]:
    """Every built-in resource, in the order of :data:`allot.api.kinds.KINDS`."""
    return [_built_in(info) for info in KINDS]


_CUSTOM: dict[str, dict[tuple[str, str, str], ServedResource]] = {}
"""Custom resources (CRD versions) per cluster, by (group, version, plural): a cluster's
CRDs are its own, as a vCluster tenant's are (the host's are not a tenant's, nor one
tenant's another's)."""


def register_custom(cluster: str, resource: ServedResource) -> None:
    """Serve a CRD version in ``cluster`` (called by the API server's CRD registry)."""
    _CUSTOM.setdefault(cluster, {})[(resource.group, resource.version, resource.plural)] = resource


def unregister_custom(cluster: str, group: str, version: str, plural: str) -> None:
    served = _CUSTOM.get(cluster, {})
    served.pop((group, version, plural), None)
    if not served:
        _CUSTOM.pop(cluster, None)


def custom_resources(cluster: str) -> list[ServedResource]:
    """``cluster``'s custom resources, in the order their CRDs were registered."""
    return list(_CUSTOM.get(cluster, {}).values())


def custom_resource_clusters() -> list[str]:
    """The clusters serving at least one custom resource (a removed cluster never does)."""
    return sorted(_CUSTOM)


def all_resources(cluster: str | None) -> list[ServedResource]:
    """Every resource ``cluster`` serves: the built-in ones, then its custom ones (None:
    the built-in ones only)."""
    custom = custom_resources(cluster) if cluster is not None else []
    return [*built_in_resources(), *custom]


def lookup(group: str, version: str, plural: str, cluster: str | None) -> ServedResource | None:
    """A served resource by its path's parts: built-in, else ``cluster``'s custom one."""
    info = _INFO_BY_PATH.get((group, version, plural))
    if info is not None:
        return _built_in(info)
    return _CUSTOM.get(cluster, {}).get((group, version, plural)) if cluster is not None else None


def stored_as_built_in(group: str, plural: str) -> bool:
    """Whether objects of ``plural`` in ``group`` would share a built-in resource's storage
    (the store keys a resource by plural and group, whatever the version): a CRD such as
    ``deviceclasses.resource.k8s.io`` in another version may not serve them."""
    return (group, plural) in _BUILT_IN_STORAGE


def by_kind(kind: str) -> ServedResource:
    return _built_in(_INFO_BY_KIND[kind])


def group_versions(cluster: str | None) -> list[tuple[str, str]]:
    """Every (group, version) ``cluster`` serves, core first (None: the built-in ones)."""
    seen: list[tuple[str, str]] = []
    for resource in all_resources(cluster):
        if (resource.group, resource.version) not in seen:
            seen.append((resource.group, resource.version))
    return sorted(seen, key=lambda gv: (gv[0] != "", gv))


def in_group_version(group: str, version: str, cluster: str | None) -> list[ServedResource]:
    return [r for r in all_resources(cluster) if r.group == group and r.version == version]
