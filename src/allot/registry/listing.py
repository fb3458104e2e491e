"""Listing a collection: label and field selectors, ``limit`` and ``continue`` pages.

kube-apiserver lists from its watch cache in key order and hands out an opaque continue
token; allot's token is the offset of the next item in the same order (the store keeps
keys sorted), which a client treats as opaque just the same. ``delete collection`` selects
with the same rules. Called by :class:`allot.registry.handlers.Handlers` (list and delete
collection) and by :mod:`allot.apiserver.app`, which turns a query string into
:class:`ListOptions`.
"""

from __future__ import annotations

from dataclasses import dataclass

from allot.registry import selectors
from allot.registry.bodies import is_count
from allot.registry.errors import BadRequest
from allot.registry.requests import Target
from allot.store import Store
from allot.types import Obj


@dataclass(frozen=True)
class ListOptions:
    label_selector: str | None = None
    field_selector: str | None = None
    limit: str | None = None  # as the query gave it; not a count means "no limit"
    continue_token: str | None = None

    @property
    def filtered(self) -> bool:
        """Whether the list differs from the whole collection in key order."""
        return any((self.label_selector, self.field_selector, self.limit, self.continue_token))


@dataclass(frozen=True)
class ListPage:
    items: list[Obj]
    resource_version: int
    continue_token: str  # "" on the last page


def select(
    store: Store, cluster: str, target: Target, options: ListOptions
) -> tuple[list[Obj], int]:
    """The collection's objects that both selectors match, and the list's resourceVersion."""
    items, rv = store.list_objects(cluster, target.resource.store, target.namespace, shared=True)
    label = selectors.label_selector(options.label_selector)
    field = selectors.field_selector(options.field_selector, target.resource.store.key)
    return [o for o in items if label(o) and field(o)], rv


def page(store: Store, cluster: str, target: Target, options: ListOptions) -> ListPage:
    items, rv = select(store, cluster, target, options)
    start = 0
    token = options.continue_token
    if token:
        if not is_count(token):
            raise BadRequest("continue key is not valid: illegal base64 data")
        start = int(token)
    limit = options.limit
    if not limit or not is_count(limit) or int(limit) <= 0:
        return ListPage(items[start:], rv, "")
    end = start + int(limit)
    return ListPage(items[start:end], rv, str(end) if end < len(items) else "")
