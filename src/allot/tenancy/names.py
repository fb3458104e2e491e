"""How tenant objects are named on the host, and back.

A tenant's namespaced object ``<name>`` in its namespace ``<ns>`` lives on the host in the
namespace ``tenant-<tenant>`` under the name ``<name>.<ns>``. Namespace names are DNS
labels and never contain a dot, so splitting at the last dot recovers both parts: the
translation is injective (no two tenant objects share a host name) and reversible without
a lookup table, unlike a hash. The price is length: a tenant object whose host name would
pass 253 characters is refused when it is created. Host twins carry the platform's labels
and annotations under ``allot.dev/``, which tenants may not set. Pure; used by the guard,
the sync, the controller and the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allot.registry import HOST_CLUSTER
from allot.validation.tenancy import TENANT_NAMESPACE_PREFIX

PLATFORM_PREFIX = "allot.dev/"
TENANT_LABEL = "allot.dev/tenant"
TENANT_NAMESPACE_LABEL = "allot.dev/tenant-namespace"
NAME_ANNOTATION = "allot.dev/tenant-name"
UID_ANNOTATION = "allot.dev/tenant-uid"
HOST_NAME_ANNOTATION = "allot.dev/host-name"  # on a tenant claim: the generated host claim
HOST_UID_ANNOTATION = "allot.dev/host-uid"  # on a tenant object: the uid of its host twin
OWNER_ANNOTATION = "allot.dev/tenant-owner"  # on a twin: its tenant object's controller
PLATFORM_NAMESPACE = "allot-system"
GANG_KEY = "allot.dev/gang"  # a tenant's pods ask to be admitted together
PRIORITY_KEY = "allot.dev/priority"  # a tenant's workload priority in fair-sharing mode
TENANT_KEYS = frozenset({GANG_KEY, PRIORITY_KEY})
"""The ``allot.dev/`` keys tenants may set themselves: fair-sharing admission reads them."""
MAX_HOST_NAME = 253


class NameTooLong(ValueError):
    """The host name of a tenant object would exceed what Kubernetes allows."""


def origin_of(obj: Mapping[str, Any]) -> tuple[str, str]:
    """The (cluster, namespace) a host object stands for: a tenant twin's tenant and
    namespace (its sync labels), else the host's own namespace."""
    metadata = obj.get("metadata") or {}
    labels = metadata.get("labels") or {}
    if TENANT_LABEL in labels and TENANT_NAMESPACE_LABEL in labels:
        return str(labels[TENANT_LABEL]), str(labels[TENANT_NAMESPACE_LABEL])
    return HOST_CLUSTER, str(metadata.get("namespace") or "")


def host_namespace(tenant: str) -> str:
    return f"{TENANT_NAMESPACE_PREFIX}{tenant}"


def tenant_of_namespace(namespace: str) -> str | None:
    if namespace.startswith(TENANT_NAMESPACE_PREFIX):
        return namespace[len(TENANT_NAMESPACE_PREFIX) :]
    return None


def host_name(name: str, namespace: str) -> str:
    """``<name>.<namespace>``; raises NameTooLong past 253 characters."""
    translated = f"{name}.{namespace}"
    if len(translated) > MAX_HOST_NAME:
        raise NameTooLong(
            f"must be no more than {MAX_HOST_NAME - len(namespace) - 1} characters in "
            f"namespace {namespace!r}: the host name <name>.<namespace> may have at most "
            f"{MAX_HOST_NAME}"
        )
    return translated


def tenant_name(translated: str) -> tuple[str, str]:
    """The tenant ``(name, namespace)`` of a host name (the inverse of ``host_name``)."""
    name, separator, namespace = translated.rpartition(".")
    if not separator or not name or not namespace:
        raise ValueError(f"{translated!r} is not a translated tenant object name")
    return name, namespace


def reserved_keys(metadata: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(``labels`` or ``annotations``, key) of the ``allot.dev/`` keys in ``metadata``
    that only the platform sets (all but :data:`TENANT_KEYS`)."""
    return [
        (field, str(key))
        for field in ("labels", "annotations")
        for key in metadata.get(field) or {}
        if str(key).startswith(PLATFORM_PREFIX) and str(key) not in TENANT_KEYS
    ]
