"""The ConfigMaps and Secrets of a tenant that its pods use, copied to the host.

vCluster's default: a ConfigMap or Secret is synced to the host namespace only while a pod
references it (``sync.toHost.configMaps.all: false``), so the host's node agent finds what
a pod's ``envFrom``, ``configMapKeyRef``/``secretKeyRef``, volumes and image pull secrets
name, and reports ``CreateContainerConfigError`` with the kubelet's text when it is
missing. The twin is ``<name>.<namespace>`` in ``tenant-<tenant>`` (the pod twin's
references are rewritten to match, :func:`allot.tenancy.translate.to_host`) with the
tenant object's data; it follows the tenant object's changes, is made again when deleted
on the host, and goes when the object goes or no pod uses it any more. Nothing flows back:
the tenant object is never written. Called by :class:`allot.tenancy.sync.TenantSync`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable

from allot.client.errors import REFUSED, AlreadyExists, NotFound
from allot.client.protocol import Client
from allot.tenancy import names
from allot.tenancy.translate import (
    SOURCE_KINDS,
    pod_sources,
    same_content,
    tenant_object_name,
    to_host,
    with_host_keys,
)
from allot.types import Obj

MANAGER = "allot-syncer"
Report = Callable[[tuple[str, str, str, str], str | None], None]
"""(tenant, kind, namespace, name) and why its twin could not be written (None: it could)."""


def source_keys(tenant: str, pod: Obj) -> list[Hashable]:
    """The sync's keys for the ConfigMaps and Secrets a tenant pod names."""
    namespace = pod["metadata"].get("namespace", "")
    spec = pod.get("spec") or {}
    return [("source", tenant, kind, namespace, name) for kind, name in sorted(pod_sources(spec))]


def host_source_key(tenant: str, resource: str, twin: Obj) -> list[Hashable]:
    """The key of a host ConfigMap or Secret that is a tenant object's twin (none else)."""
    origin = tenant_object_name(twin)
    return [] if origin is None else [("source", tenant, SOURCE_KINDS[resource], *origin)]


class SourceSync:
    def __init__(self, host: Client, report: Report) -> None:
        self.host = host
        self.report = report

    def sync(
        self,
        tenant_ctx: Client,
        kind: str,
        namespace: str,
        name: str,
        *,
        used: bool = False,
    ) -> None:
        """Bring one ConfigMap's or Secret's host twin to what the tenant's pods need;
        ``used``: a pod being synced names it (no need to look through the namespace's
        pods, which a namespace of many pods would pay per pod)."""
        tenant = tenant_ctx.cluster
        try:
            twin_name = names.host_name(name, namespace)
        except names.NameTooLong:
            return
        host_ns = names.host_namespace(tenant)
        twin = self.host.peek(kind, host_ns, twin_name)
        if twin is not None and tenant_object_name(twin) != (namespace, name):
            return  # a host object of that name the sync did not make: not ours to touch
        obj = tenant_ctx.peek(kind, namespace, name)
        if obj is None or not (used or self._used(tenant_ctx, kind, namespace, name)):
            if twin is not None:
                with contextlib.suppress(NotFound):
                    self.host.delete(kind, host_ns, twin_name)
            self.report((tenant, kind, namespace, name), None)
            return
        desired = to_host(kind, obj, tenant)
        try:
            self._write(kind, twin, desired)
        except REFUSED as refused:
            self.report((tenant, kind, namespace, name), f"not synced to the host: {refused}")
            return
        self.report((tenant, kind, namespace, name), None)

    def _write(self, kind: str, twin: Obj | None, desired: Obj) -> None:
        metadata = desired["metadata"]
        if twin is None:
            with contextlib.suppress(AlreadyExists):
                self.host.create(desired, field_manager=MANAGER)
            return
        desired = with_host_keys(twin, desired)
        if same_content(kind, twin, desired):
            return
        if twin.get("immutable") and twin.get("data") != desired.get("data"):
            with contextlib.suppress(NotFound):  # as kubectl replace --force does for it
                self.host.delete(kind, metadata["namespace"], metadata["name"])
            self.host.create(desired, field_manager=MANAGER)
            return
        updated = {**desired, "metadata": {**twin["metadata"], **desired["metadata"]}}
        try:
            self.host.update(updated, field_manager=MANAGER)
        except NotFound:
            return

    @staticmethod
    def _used(tenant_ctx: Client, kind: str, namespace: str, name: str) -> bool:
        return any(
            (kind, name) in pod_sources(pod.get("spec") or {})
            for pod in tenant_ctx.list("Pod", namespace)
        )
