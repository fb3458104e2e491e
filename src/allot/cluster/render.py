"""``allot render``: the manifests for a real host cluster, from a platform file.

A platform file holds the DeviceClass catalogue and the Tenants (``allot.dev/v1alpha1``),
as YAML documents. Rendering writes, in apply order and deterministically (the same input
gives byte-identical files, for GitOps):

* ``00-tenant-crd.yaml``: the Tenant CustomResourceDefinition (schema from the model);
* ``01-namespaces.yaml``: ``allot-system`` and each tenant's host namespace, labelled
  ``allot.dev/tenant`` (what the bindings select; install the tenant's vCluster there);
* ``02-deviceclasses.yaml``: the catalogue;
* ``03-entitlement-policies.yaml``: the two ValidatingAdmissionPolicies;
* ``10-tenant-<name>.yaml``: the Tenant, its params ConfigMap, bindings and ResourceQuota;
* ``20-prometheusrule.yaml``: the alert rules;
* ``30-kueue.yaml``: for fair-sharing tenants, Kueue's Cohorts, ResourceFlavor,
  WorkloadPriorityClasses, ClusterQueues and LocalQueues (:mod:`allot.cluster.kueue`);
* ``kueue/configuration.yaml``: the Kueue Configuration fragment mapping the shared
  DeviceClasses to resources (merged by hand into Kueue's own configuration);
* ``vcluster/<name>.yaml``: the tenant's vCluster values (filtered DeviceClass sync, claim
  and template sync).

Every object carries ``app.kubernetes.io/managed-by: allot`` so ``allot apply`` can prune
what it no longer renders. These are the same objects the embedded platform enforces
(:mod:`allot.tenancy.entitlement`). A Tenant sharing a class the catalogue (the file's, and
the cluster's for ``apply``) lacks or does not entitle it to is refused, as the API server
refuses it. What a Tenant asks that nothing rendered enforces on a real cluster
(:data:`UNENFORCED`, its GPU memory) is said in its file's header and in the warning both
commands print (:func:`unenforced_warning`). Pure but for :func:`write`; used by ``allot
render`` and ``allot apply``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from allot.api.kinds import decode, kind_info
from allot.api.resource_v1 import DeviceClass
from allot.api.tenancy import Tenant, TenantSpec, entitlement_selector, syncs
from allot.cluster import kueue
from allot.cluster.crd import alert_crd, tenant_crd
from allot.ops.rules import AlertSettings, prometheus_rule
from allot.statuses import invalid_message
from allot.tenancy import entitlement, names
from allot.types import Obj
from allot.validation.tenancy import validate_sharing_classes, validate_tenant

MANAGED_BY = dict(entitlement.MANAGED_BY)
OUTPUT_ORDER = (
    "CustomResourceDefinition",
    "Namespace",
    "DeviceClass",
    "ValidatingAdmissionPolicy",
    "ConfigMap",
    "ValidatingAdmissionPolicyBinding",
    "ResourceQuota",
    "Tenant",
    "PrometheusRule",
    *kueue.KUEUE_KINDS,
)


class _PlainDumper(yaml.SafeDumper):
    """Writes a value shared by two fields twice instead of as a YAML anchor and alias
    (``&id001``/``*id001``), which some GitOps tools and reviewers do not follow."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


class PlatformFileError(ValueError):
    """The platform file cannot be rendered; the message names the document."""


@dataclass(frozen=True)
class Platform:
    classes: list[DeviceClass]
    tenants: list[Tenant]


@dataclass(frozen=True)
class RenderedFile:
    path: str
    header: str
    objects: list[Obj]

    def text(self) -> str:
        comments = "".join(f"# {line}\n" if line else "#\n" for line in self.header.splitlines())
        body = "---\n".join(
            yaml.dump(o, Dumper=_PlainDumper, sort_keys=False) for o in self.objects
        )
        return comments + body


def read_platform(documents: Iterable[Any], source: str = "platform file") -> Platform:
    """DeviceClasses and Tenants from parsed YAML documents, decoded strictly."""
    classes, tenants = [], []
    for index, document in enumerate(d for d in documents if d is not None):
        try:
            model = decode(document)
        except Exception as err:
            raise PlatformFileError(f"{source}, document {index + 1}: {err}") from None
        if isinstance(model, DeviceClass):
            classes.append(model)
        elif isinstance(model, Tenant):
            tenants.append(model)
        else:
            raise PlatformFileError(
                f"{source}, document {index + 1}: {document.get('kind')} is not part of a "
                "platform file (DeviceClass and Tenant are)"
            )
    _check_unique(source, [c.metadata.name or "" for c in classes], "DeviceClass")
    _check_unique(source, [t.metadata.name or "" for t in tenants], "Tenant")
    return Platform(
        sorted(classes, key=lambda c: c.metadata.name or ""),
        sorted(tenants, key=lambda t: t.metadata.name or ""),
    )


def _check_unique(source: str, found: list[str], kind: str) -> None:
    duplicates = sorted({n for n in found if found.count(n) > 1})
    if duplicates:
        raise PlatformFileError(f"{source}: {kind} {duplicates[0]!r} is defined twice")


def render(
    platform: Platform,
    settings: AlertSettings | None = None,
    cluster_classes: list[Obj] | None = None,
    kueue_api: str = kueue.V1BETA2,
) -> list[RenderedFile]:
    """The files; ``cluster_classes`` (a live cluster's DeviceClasses, for ``apply``) join
    the catalogue when entitlements are computed, as the tenant controller computes them;
    Kueue's objects in ``kueue_api`` (:data:`allot.cluster.kueue.VERSIONS`).
    Raises PlatformFileError for a Tenant the API server would refuse."""
    check_shares(platform, cluster_classes)
    class_objects = [_managed(_clean(c.to_wire())) for c in platform.classes]
    rendered_names = {c["metadata"]["name"] for c in class_objects}
    known = class_objects + [
        c for c in cluster_classes or [] if c["metadata"]["name"] not in rendered_names
    ]
    files = [
        RenderedFile(
            "00-tenant-crd.yaml",
            "The Tenant kind (allot.dev/v1alpha1): one team's entitled DeviceClasses, quotas\n"
            "and vCluster sync settings; and the Alert kind allot controller keeps while an\n"
            "alert fires. Generated from allot's models.",
            [_managed(tenant_crd()), _managed(alert_crd())],
        ),
        RenderedFile(
            "01-namespaces.yaml",
            "allot-system holds the entitlement params; each tenant's host namespace carries\n"
            "the allot.dev/tenant label the policy bindings select. Install the tenant's\n"
            "vCluster into its namespace.",
            [_namespace(names.PLATFORM_NAMESPACE)]
            + [entitlement.namespace(t.metadata.name or "") for t in platform.tenants],
        ),
        RenderedFile(
            "02-deviceclasses.yaml",
            "The GPU catalogue: DeviceClasses with the labels tenants are entitled by.",
            class_objects,
        ),
        RenderedFile(
            "03-entitlement-policies.yaml",
            "Entitlement, enforced by the API server: claims, templates and pods in a tenant's\n"
            "namespace may only use its entitled DeviceClasses (every request and every\n"
            "firstAvailable alternative; no adminAccess; no extended-resource bypass), and its\n"
            "pods stay in their sandbox. vCluster's own control plane there (service account\n"
            "vc-<tenant>, labels app: vcluster and release: <tenant>) is not judged.",
            [entitlement.claims_policy(), entitlement.pods_policy()],
        ),
    ]
    files += [_tenant_file(t, known) for t in platform.tenants]
    files.append(
        RenderedFile(
            "20-prometheusrule.yaml",
            "Alert rules for the Prometheus Operator, on the metrics `allot controller` serves.",
            [_managed(prometheus_rule(settings or AlertSettings()))],
        )
    )
    files += _kueue_files(platform.tenants, kueue_api)
    files += [_vcluster_values(t) for t in platform.tenants]
    return files


def check_shares(platform: Platform, cluster_classes: list[Obj] | None = None) -> None:
    """Refuse Tenants sharing classes the catalogue lacks or does not entitle them to."""
    catalogue: dict[str, Any] = {
        c["metadata"]["name"]: c["metadata"].get("labels") for c in cluster_classes or []
    }
    catalogue |= {c.metadata.name or "": c.metadata.labels for c in platform.classes}
    for tenant in platform.tenants:
        errors = validate_tenant(tenant) or validate_sharing_classes(tenant, catalogue)
        if errors:
            info = kind_info(tenant)
            raise PlatformFileError(invalid_message(info, tenant.metadata.name or "", errors))


def _kueue_files(tenants: list[Tenant], version: str) -> list[RenderedFile]:
    objects = kueue.kueue_objects(tenants, version)
    if not objects:
        return []
    try:
        config = kueue.configuration(tenants, version)
    except kueue.KueueRenderError as err:
        raise PlatformFileError(str(err)) from None
    return [
        RenderedFile(
            "30-kueue.yaml",
            f"Fair sharing on Kueue ({kueue.api_version(version)}; install Kueue "
            f"{kueue.FIRST_RELEASE[version]} or later first):\n"
            "a ClusterQueue per sharing tenant (nominalQuota = guaranteed) in its cohort, a\n"
            "LocalQueue named default in its namespace, the default priorities as\n"
            "WorkloadPriorityClasses. gpuMemory shares have no Kueue equivalent and are not\n"
            "rendered. Needs the mappings of kueue/configuration.yaml.",
            objects,
        ),
        RenderedFile(
            "kueue/configuration.yaml",
            "GLOBAL: excludeResourcePrefixes (cpu, memory, ephemeral-storage) stops Kueue\n"
            "counting those resources for EVERY ClusterQueue of the cluster, not only allot's\n"
            "(needed: a ClusterQueue admits nothing asking for a resource it does not cover).\n"
            "Merge into Kueue's Configuration (ConfigMap kueue-system/kueue-manager-config,\n"
            "key controller_manager_config.yaml), then restart kueue-controller-manager:\n"
            "each shared DeviceClass counted as the resource its ClusterQueues name, with the\n"
            "feature gate the mappings need: KueueDRAIntegration (Kueue 0.18+). On Kueue 0.14\n"
            "to 0.17 name it DynamicResourceAllocation instead; if the Deployment passes\n"
            "--feature-gates, add the gate there and drop featureGates from this file.\n"
            "Tenants' workloads reach the host as plain pods (vCluster syncs pods, not Jobs):\n"
            "ADD pod to your integrations.frameworks (Kueue ships it commented out), keeping\n"
            "the frameworks you have; without it Kueue queues none of the tenants' pods.",
            [config],
        ),
    ]


def tenant_files(tenants: list[Tenant], classes: list[Obj]) -> list[RenderedFile]:
    """What the controller keeps applied for the Tenants of a cluster: their namespaces,
    the policies and each tenant's params, bindings and quota (not the catalogue)."""
    ordered = sorted(tenants, key=lambda t: t.metadata.name or "")
    return [
        RenderedFile(
            "01-namespaces.yaml",
            "",
            [_namespace(names.PLATFORM_NAMESPACE)]
            + [entitlement.namespace(t.metadata.name or "") for t in ordered],
        ),
        RenderedFile(
            "03-entitlement-policies.yaml",
            "",
            [entitlement.claims_policy(), entitlement.pods_policy()],
        ),
        *[_tenant_file(t, classes, with_tenant=False) for t in ordered],
    ]


def objects_in_apply_order(files: list[RenderedFile]) -> list[Obj]:
    """Every rendered object (not the vCluster values), dependencies first."""
    found = [o for f in files if f.path.endswith(".yaml") and "/" not in f.path for o in f.objects]
    return sorted(found, key=lambda o: OUTPUT_ORDER.index(o["kind"]))


def _tenant_file(tenant: Tenant, classes: list[Obj], *, with_tenant: bool = True) -> RenderedFile:
    name = tenant.metadata.name or ""
    entitled = entitlement.entitled_classes(tenant, classes)
    forbidden = entitlement.forbidden_extended_names(entitled, classes)
    objects = [
        entitlement.params(name, entitled, forbidden),
        entitlement.binding(name, entitlement.CLAIMS_POLICY),
        entitlement.binding(name, entitlement.PODS_POLICY),
    ]
    if with_tenant:  # the controller reads Tenants from the cluster: it does not write them
        document = {"metadata": {"name": name}, "spec": tenant.spec.to_wire()}
        objects.insert(
            0, _managed({"apiVersion": tenant.api_version, "kind": "Tenant", **document})
        )
    quota = entitlement.quota(tenant)
    if quota is not None:
        objects.append(quota)
    header = (
        f"Tenant {name}: entitled to {', '.join(entitled) or 'no DeviceClass'}.\n"
        "Its params (the entitled classes, kept current by `allot controller`), the policy\n"
        "bindings for its namespace and its ResourceQuota."
    )
    kept = unenforced_fields(tenant)
    if kept:
        header += (
            f"\nNOT enforced on a real cluster yet: {', '.join(kept)} (kept in the Tenant;\n"
            "nothing rendered counts GPU memory)."
        )
    return RenderedFile(f"10-tenant-{name}.yaml", header, objects)


UNENFORCED: dict[str, tuple[str, Callable[[TenantSpec], object]]] = {
    "spec.quota.gpuMemory": (
        "the GPU-memory quota",
        lambda spec: spec.quota.gpu_memory if spec.quota else None,
    ),
    "spec.sharing.gpuMemory": (
        "the GPU-memory share",
        lambda spec: spec.sharing.gpu_memory if spec.sharing else None,
    ),
}
"""What a Tenant may say that nothing rendered enforces on a real cluster (its meaning, and
how to read it): a ResourceQuota and Kueue count devices, not their memory. The embedded
platform enforces both (its scheduler the quota, its admission controller the share)."""


def unenforced_fields(tenant: Tenant) -> list[str]:
    """The fields of :data:`UNENFORCED` the tenant sets."""
    return [field for field, (_, read) in UNENFORCED.items() if read(tenant.spec) is not None]


def unenforced_warning(platform: Platform) -> str | None:
    """One line for ``allot render`` and ``allot apply``: per field of :data:`UNENFORCED`,
    the tenants that set it (None when none does)."""
    parts = []
    for field, (meaning, _) in UNENFORCED.items():
        tenants = [t.metadata.name or "" for t in platform.tenants if field in unenforced_fields(t)]
        if tenants:
            noun = "tenant" if len(tenants) == 1 else "tenants"
            parts.append(f"{meaning} ({field}) of {noun} {', '.join(tenants)}")
    if not parts:
        return None
    return (
        f"not enforced on a real cluster yet: {'; '.join(parts)}. Nothing rendered counts GPU "
        "memory (ResourceQuota and Kueue count devices); only the embedded platform enforces it"
    )


def _vcluster_values(tenant: Tenant) -> RenderedFile:
    name = tenant.metadata.name or ""
    header = (
        f"vCluster values for tenant {name}: only its DeviceClasses are synced into the\n"
        f"virtual cluster; its claims and templates sync to {names.host_namespace(name)},\n"
        "where the policies and the quota apply. DRA sync is a vCluster Pro feature (log in\n"
        "to vCluster Platform first). Use: vcluster create "
        f"{name} -n {names.host_namespace(name)} -f vcluster/{name}.yaml\n"
        f"(the release named {name}: the pod policy knows vCluster's control plane by it)."
    )
    return RenderedFile(f"vcluster/{name}.yaml", header, [vcluster_values(tenant)])


def vcluster_values(tenant: Tenant) -> Obj:
    """The tenant's sync settings in vCluster's keys (``chart/values.schema.json``), with
    allot's defaults written out: vCluster's are off. A tenant without an entitlement
    selector is entitled to nothing, so its class sync is off: vCluster reads a missing
    or empty selector as every class."""
    spec = tenant.spec
    selector = entitlement_selector(spec)
    device_classes: Obj = {"enabled": syncs(spec, "deviceClasses") and selector is not None}
    if device_classes["enabled"] and selector is not None:
        device_classes["selector"] = selector.to_wire()
    from_host: Obj = {"deviceClasses": device_classes}
    nodes = spec.sync.from_host.nodes if spec.sync and spec.sync.from_host else None
    if nodes is not None:
        from_host["nodes"] = nodes.to_wire()
    return {
        "sync": {
            "toHost": {
                "resourceClaims": {"enabled": syncs(spec, "resourceClaims")},
                "resourceClaimTemplates": {"enabled": syncs(spec, "resourceClaimTemplates")},
            },
            "fromHost": from_host,
        }
    }


def _namespace(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": MANAGED_BY},
    }


def _managed(obj: Obj) -> Obj:
    metadata = obj.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), **MANAGED_BY}
    return obj


def _clean(wire: Obj) -> Obj:
    """Only what a user writes: no server-set metadata."""
    metadata = wire.get("metadata") or {}
    kept = {k: v for k, v in metadata.items() if k in ("name", "labels", "annotations")}
    return {**wire, "metadata": kept}


def write(files: list[RenderedFile], out: Path) -> list[Path]:
    written = []
    for rendered in files:
        path = out / rendered.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered.text())
        written.append(path)
    return written
