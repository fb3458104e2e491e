"""Errors of the object store, one class per Kubernetes status reason.

Class tree::

    StoreError
    ├── NotFound        404: the object (or its namespace) does not exist
    ├── AlreadyExists   409: create of an existing name
    ├── Conflict        409: stale resourceVersion (optimistic concurrency)
    ├── Expired         410: a watch asked for history the store no longer keeps
    ├── BadRequest      400: an impossible request (namespace mismatch, bad selector...)
    ├── NamespaceTerminating  403: a create in a namespace being deleted
    ├── TooLarge        413: an object whose stored form is over the request limit
    └── Unwritable      500: SQLite could not write (I/O error, read-only file); nothing kept
        └── DiskFull    500: the disk (or the database's page limit) is full; nothing kept

Only ``allot.statuses`` turns them into ``metav1.Status``; messages are upstream's texts,
except for ``Unwritable``, where upstream's text names etcd (``etcdserver: mvcc: database
space exceeded``) and allot's names what happened instead.
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


class Unwritable(StoreError):
    """SQLite refused a write or its commit: the transaction was rolled back, on disk and
    in the store's memory, and nothing it held is kept. ``detail`` is SQLite's text."""

    def __init__(self, detail: str, message: str = "") -> None:
        super().__init__(message or f"the platform's store cannot write: {detail}")
        self.detail = detail


class DiskFull(Unwritable):
    """SQLITE_FULL: the disk the data directory is on (or the database's page limit) is
    full."""

    def __init__(self, detail: str = "database or disk is full") -> None:
        super().__init__(detail, DISK_FULL_MESSAGE)


DISK_FULL_MESSAGE = "the platform's disk is full"


def unwritable(err: Exception) -> Unwritable:
    """The store error for a failed SQLite statement or commit (``sqlite3.Error``)."""
    name = getattr(err, "sqlite_errorname", "")
    if name == "SQLITE_FULL" or "disk is full" in str(err):
        return DiskFull(str(err))
    return Unwritable(str(err))
