"""``allot tenant create|list|delete`` on a data directory of ``allot up --engine kubernetes``.

The same verbs, flags, values files and output as on the embedded engine
(:mod:`allot.cli.tenant` reads the files and prints); what differs is who serves the
tenant: the running ``allot up`` starts its own kube-apiserver and kube-controller-manager
(:mod:`allot.kubeengine.tenants`), and this module records the request and waits for it.
Before anything is written the Tenant is judged by the rules the embedded API server
applies (:func:`allot.manifests.verdicts.judge`), then by what the real engine cannot do
(:func:`allot.validation.tenancy.validate_for_real_engine`), and its host namespace
``tenant-NAME`` must be free or already this tenant's: a host namespace of that name that
allot did not make for the tenant is refused, never adopted. Each refusal is one line in
Kubernetes' words. Called by :mod:`allot.cli.tenant`.
"""

from __future__ import annotations

import time
from pathlib import Path

from allot.api.kinds import kind_info
from allot.api.tenancy import Tenant
from allot.cli.up import platform_client
from allot.kube.errors import KubeNotFound
from allot.kubeengine import tenants
from allot.manifests.documents import Document
from allot.manifests.verdicts import Outcome, judge
from allot.statuses import invalid_message
from allot.tenancy.names import TENANT_LABEL, host_namespace
from allot.types import Obj
from allot.validation.tenancy import validate_for_real_engine

START_SECONDS = 180.0
"""How long ``create`` waits by default: a cold kube-apiserver takes tens of seconds."""


class RealTenantError(Exception):
    """A tenant request refused or failed; the message is the one line the user reads."""


def refusal(tenant: Obj) -> str:
    """Why the real engine refuses ``tenant`` ("" when it takes it)."""
    verdict = judge([Document("tenant", 0, tenant)])[0]
    if verdict.outcome is not Outcome.VALID:
        return verdict.status.message if verdict.status and verdict.status.message else ""
    model = verdict.obj
    assert isinstance(model, Tenant)
    errors = validate_for_real_engine(model)
    if errors:
        return invalid_message(kind_info(model), model.metadata.name or "", errors)
    return ""


def create(data_dir: Path, tenant: Obj, timeout: float | None) -> Obj:
    """Record the tenant for the running ``allot up`` and wait for it; its status."""
    name = tenant["metadata"]["name"]
    why = refusal(tenant)
    if why:
        raise RealTenantError(why)
    _check_namespace(data_dir, name)
    try:
        tenants.request_create(data_dir, tenant)
    except tenants.TenantRecordError as err:
        raise RealTenantError(str(err)) from None
    return _wait_ready(data_dir, name, START_SECONDS if timeout is None else timeout)


def _check_namespace(data_dir: Path, name: str) -> None:
    """The tenant's host namespace must be free or this tenant's (RealTenantError)."""
    client = platform_client(data_dir)
    namespace = host_namespace(name)
    try:
        found = client.get("v1", "Namespace", namespace)
    except KubeNotFound:
        return
    finally:
        client.close()
    labels = (found.get("metadata") or {}).get("labels") or {}
    if labels.get(TENANT_LABEL) != name:
        raise RealTenantError(
            f'namespaces "{namespace}" already exists on the host and is not tenant '
            f"{name}'s: allot keeps tenant {name} in host namespace {namespace} and never "
            f"adopts a namespace it did not make (choose another tenant name, or delete "
            f"namespace {namespace} on the host)"
        )
    if (found.get("metadata") or {}).get("deletionTimestamp"):
        raise RealTenantError(
            f'namespaces "{namespace}" of a deleted tenant {name} is still being deleted '
            "on the host; try again in a moment"
        )


def _wait_ready(data_dir: Path, name: str, timeout: float) -> Obj:
    deadline = time.monotonic() + timeout
    while True:
        status = (tenants.recorded(data_dir, name) or {}).get("status") or {}
        if status.get("phase") == tenants.READY:
            return dict(status)
        if status.get("phase") == tenants.UNHEALTHY:
            raise RealTenantError(f"tenant {name} failed to start: {_message(status)}")
        if time.monotonic() > deadline:
            raise RealTenantError(
                f"tenant {name} was not ready after {timeout:.0f}s (it goes on starting; "
                "see `allot tenant list`)"
            )
        time.sleep(0.2)


def _message(status: Obj) -> str:
    return "; ".join(str(c.get("message")) for c in status.get("conditions") or [])


def listed(data_dir: Path) -> list[Obj]:
    """Every tenant with its status, as ``allot tenant list`` prints them."""
    platform_client(data_dir).close()  # PlatformNotRunning: phases are stale without up
    found = [tenants.recorded(data_dir, name) for name in tenants.tenant_names(data_dir)]
    return [tenant for tenant in found if tenant is not None]


def delete(data_dir: Path, name: str, timeout: float) -> None:
    """Mark the tenant deleted and wait until ``allot up`` has removed it."""
    platform_client(data_dir).close()
    try:
        tenants.request_delete(data_dir, name)
    except tenants.TenantRecordError as err:
        raise RealTenantError(str(err)) from None
    deadline = time.monotonic() + timeout
    while tenants.recorded(data_dir, name) is not None:
        if time.monotonic() > deadline:
            raise RealTenantError(f"tenant {name} was still being deleted after {timeout:.0f}s")
        time.sleep(0.2)
