"""Errors of the object store, one class per Kubernetes status reason.

Class tree::

    StoreError
    ├── NotFound        404: the object (or its namespace) does not exist
    ├── AlreadyExists   409: create of an existing name
    ├── Conflict        409: stale resourceVersion (optimistic concurrency)
    ├── Expired         410: a watch asked for history the store no longer keeps
    ├── BadRequest      400: an impossible request (namespace mismatch, bad selector...)
    ├── NamespaceTerminating  403: a create in a namespace being deleted
    └── TooLarge        413: an object whose stored form is over the request limit

Only ``allot.statuses`` turns them into ``metav1.Status``; messages are upstream's texts.
"""

from __future__ import annotations


class StoreError(Exception):
    """Root of the store errors; ``resource`` is ``plural.group`` or ``plural``."""

    def __init__(
        self, message: str, *, resource: str = "", name: str = "", group: str = "", plural: str = ""
    ) -> None:
        super().__init__(message)
        self.resource = resource
        self.name = name
        self.group = group
        self.plural = plural


class NotFound(StoreError):
    pass


class AlreadyExists(StoreError):
    pass


class Conflict(StoreError):
    pass


class Expired(StoreError):
    pass


class BadRequest(StoreError):
    pass


class TooLarge(StoreError):
    pass


class NamespaceTerminating(StoreError):
    """A create in a namespace being deleted, refused as upstream's NamespaceLifecycle
    admission refuses it (Forbidden, with a ``NamespaceTerminating`` cause)."""

    def __init__(self, namespace: str, **about: str) -> None:
        name = about.get("name", "")
        super().__init__(
            f'{about.get("resource", "")} "{name}" is forbidden: unable to create new content '
            f"in namespace {namespace} because it is being terminated",
            **about,
        )
        self.namespace = namespace
