"""The resources the API server serves, with what discovery and the handlers need.

Each :class:`ServedResource` joins the model's kind information with the serving details
its strategy module gives (:mod:`allot.registry.kinds`: singular name, short names,
categories, subresources, hence whether writes to the main resource keep ``status``) and
the store key. The registry is looked up by
group/version/plural from request paths. Called by the handlers, discovery and OpenAPI.
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


_CUSTOM: dict[tuple[str, str, str], ServedResource] = {}


def register_custom(resource: ServedResource) -> None:
    """Serve a CRD version (called by the API server's CRD registry)."""
    _CUSTOM[(resource.group, resource.version, resource.plural)] = resource


def unregister_custom(group: str, version: str, plural: str) -> None:
    _CUSTOM.pop((group, version, plural), None)


def all_resources(*, custom: bool = True) -> list[ServedResource]:
    return [*built_in_resources(), *(_CUSTOM.values() if custom else ())]


def lookup(group: str, version: str, plural: str) -> ServedResource | None:
    info = _INFO_BY_PATH.get((group, version, plural))
    return _built_in(info) if info is not None else _CUSTOM.get((group, version, plural))


def by_kind(kind: str) -> ServedResource:
    return _built_in(_INFO_BY_KIND[kind])


def group_versions(*, custom: bool = True) -> list[tuple[str, str]]:
    """Every (group, version) served, core first."""
    seen: list[tuple[str, str]] = []
    for resource in all_resources(custom=custom):
        if (resource.group, resource.version) not in seen:
            seen.append((resource.group, resource.version))
    return sorted(seen, key=lambda gv: (gv[0] != "", gv))


def in_group_version(group: str, version: str, *, custom: bool = True) -> list[ServedResource]:
    return [r for r in all_resources(custom=custom) if r.group == group and r.version == version]
