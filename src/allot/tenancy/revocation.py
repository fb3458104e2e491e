"""Revocation: a class that leaves a tenant's entitlement stops being usable at once.

The claims policy checks a claim when it is created; a claim created before its class left
the entitlement would otherwise still be allocated through it. Two checks read the
entitlement as the policies do (the tenant's params ConfigMap in ``allot-system``, the
tenant found by its host namespace's ``allot.dev/tenant`` label, no params meaning no
class):

* :class:`Entitlements` tells the scheduler, given a claim, why it may not be allocated or
  reserved now (``refusal``), and which events may change that (``changed``), so a pod
  parked on a revoked class is retried when the entitlement returns; and what a tenant may
  read of the explanation of its pod's unschedulable claims (``audience``: the devices of
  its entitled classes, its own claims; :func:`allot.tenancy.explain.tenant_audience`);
* :class:`RevokedClaimsAdmission` refuses, on the host, a pod created in a tenant namespace
  that references (by name or through a template) a claim naming such a class; the
  tenant guard's dry-run preflight turns that into the tenant's own refusal.

:class:`Entitlements` reads through the client protocol only, so it judges a real
cluster's claims as the embedded platform's; the admission plugin is the registry's.
Built and registered by :mod:`allot.platform`.
"""

from __future__ import annotations

from allot.allocator.explain import Audience
from allot.client.protocol import HOST_CLUSTER, Client, WatchEvent
from allot.dra import DraIndex
from allot.registry.admission import AdmissionDenied, AdmissionRequest, Operation
from allot.tenancy import entitlement, names
from allot.tenancy.explain import tenant_audience
from allot.types import Obj


class Entitlements:
    """The entitlement of the tenant that owns a host namespace, read from its params."""

    watched = frozenset({"namespaces", "configmaps"})  # what ``changed`` looks at

    def __init__(self, host: Client) -> None:
        """``host``: any client of the host (its reads only: the cached namespaces,
        params, claims and templates)."""
        self.host = host

    def of_namespace(self, namespace: str) -> tuple[str, list[str]] | None:
        """``(tenant, entitled classes)``, or None for a namespace of no tenant."""
        found = self.host.peek("Namespace", "", namespace)
        tenant = ((found or {}).get("metadata", {}).get("labels") or {}).get(names.TENANT_LABEL)
        if not tenant:
            return None
        params = self.host.peek(
            "ConfigMap", names.PLATFORM_NAMESPACE, entitlement.params_name(tenant)
        )
        return tenant, entitlement.entitled_in_params(params)

    def spec_refusal(self, namespace: str, shown: str, claim_spec: Obj) -> str:
        """Why a claim spec in ``namespace`` names a class outside the entitlement, or ""."""
        owner = self.of_namespace(namespace)
        if owner is None:
            return ""
        tenant, entitled = owner
        revoked = [c for c in entitlement.classes_named(claim_spec) if c not in entitled]
        if not revoked:
            return ""
        return f"{shown}: {entitlement.not_entitled(revoked, tenant, entitled)}"

    def refusal(self, claim: Obj) -> str:
        """Why ``claim`` may not be allocated or reserved now, or "" when it may."""
        metadata = claim["metadata"]
        shown = f'resourceclaim "{_tenant_name(metadata)}"'
        return self.spec_refusal(metadata.get("namespace", ""), shown, claim.get("spec") or {})

    def audience(self, namespace: str, index: DraIndex) -> Audience | None:
        """What the tenant owning ``namespace`` may read of an explanation (None: the
        namespace is the host's)."""
        owner = self.of_namespace(namespace)
        if owner is None:
            return None
        tenant, entitled = owner
        return tenant_audience(
            tenant, entitled, index, lambda ns, name: self.host.peek("ResourceClaim", ns, name)
        )

    @staticmethod
    def changed(event: WatchEvent) -> bool:
        """An event that may change some tenant's entitlement (its params or namespace)."""
        if event.cluster != HOST_CLUSTER:
            return False
        if event.resource == "namespaces":
            return True
        return (
            event.resource == "configmaps"
            and event.object["metadata"].get("namespace") == names.PLATFORM_NAMESPACE
        )


class RevokedClaimsAdmission:
    """Host admission: a tenant pod may not reference a claim of a revoked class."""

    def __init__(self, entitlements: Entitlements) -> None:
        self.entitlements = entitlements

    def admit(self, request: AdmissionRequest) -> list[str]:
        if (
            request.cluster != HOST_CLUSTER
            or request.resource.kind != "Pod"
            or request.operation is not Operation.CREATE
            or request.subresource
            or request.object is None
        ):
            return []
        if self.entitlements.of_namespace(request.namespace) is None:
            return []
        spec = request.object.to_wire().get("spec") or {}
        for reference in spec.get("resourceClaims") or []:
            problem = self._problem(request.namespace, reference)
            if problem:
                raise AdmissionDenied(request.resource, request.name, problem)
        return []

    def _problem(self, namespace: str, reference: Obj) -> str:
        host = self.entitlements.host
        if reference.get("resourceClaimName"):
            claim = host.peek("ResourceClaim", namespace, reference["resourceClaimName"])
            return self.entitlements.refusal(claim) if claim is not None else ""
        template_name = reference.get("resourceClaimTemplateName")
        template = host.peek("ResourceClaimTemplate", namespace, template_name or "")
        if template is None:
            return ""
        shown = f'resourceclaimtemplate "{_tenant_name(template["metadata"])}"'
        claim_spec = (template.get("spec") or {}).get("spec") or {}
        return self.entitlements.spec_refusal(namespace, shown, claim_spec)


def _tenant_name(metadata: Obj) -> str:
    """The name the tenant knows an object by (its own, for a twin), else the host's."""
    annotations = metadata.get("annotations") or {}
    return str(annotations.get(names.NAME_ANNOTATION) or metadata.get("name", ""))
