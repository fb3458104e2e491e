"""A host API server (no HTTP) holding tenant legal-ai's namespace, its entitlement params
and one of the entitlement policies bound to it: the fixture of the policy tests that
evaluate the rendered objects directly (``test_tenant_claim_policy``,
``test_tenant_pod_policy``, ``test_vcluster_pod_policy``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from allot.registry.clusters import Registry
from allot.registry.handlers import WriteOptions
from allot.registry.requests import Target
from allot.registry.resources import by_kind
from allot.tenancy import entitlement
from allot.tenancy.names import PLATFORM_NAMESPACE

OPTIONS = WriteOptions(
    field_manager="test", field_validation="Strict", dry_run=False, user="system:allot:host"
)


def create(api: Registry, obj: dict[str, Any]) -> Any:
    """Create ``obj`` on the host as its admin."""
    resource = by_kind(obj["kind"])
    namespace = obj["metadata"].get("namespace") if resource.namespaced else None
    return api.handlers.create("host", Target(resource, namespace, None, ""), obj, OPTIONS)


def host_with_policy(
    directory: Path, classes: list[str], policy: dict[str, Any], policy_name: str
) -> Registry:
    """The host with legal-ai entitled to ``classes`` and ``policy`` bound to it."""
    server = Registry(directory)
    bind_to_legal_ai(server, classes, policy, policy_name)
    return server


def bind_to_legal_ai(
    server: Registry, classes: list[str], policy: dict[str, Any], policy_name: str
) -> None:
    """Tenant legal-ai's namespace and params on ``server``, and ``policy`` bound to it."""
    create(server, entitlement.namespace("legal-ai"))
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PLATFORM_NAMESPACE}}
    create(server, ns)
    create(server, entitlement.params("legal-ai", classes, []))
    create(server, policy)
    create(server, entitlement.binding("legal-ai", policy_name))
