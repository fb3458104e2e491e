"""Translating objects between a tenant cluster and the host, in both directions.

Toward the host (``to_host``): the name and namespace translated (see
:mod:`allot.tenancy.names`), the tenant's labels and annotations carried, the platform's
``allot.dev/tenant`` and ``allot.dev/tenant-namespace`` labels and the tenant-name/uid
annotations added, and a pod's references rewritten (``spec.resourceClaims``, and the
ConfigMaps and Secrets it reads: ``pod_sources``), its downward-API name, namespace and uid
read from the twin's record of the tenant's (``DOWNWARD_FIELDS``) and its hostname the
tenant's pod name, as vCluster does; a ConfigMap's or Secret's twin carries its data; the
twin of a
pod of a tenant in fair-sharing mode also carries the scheduling gate
``allot.dev/admission`` after the tenant's own gates, which the host's admission controller
removes when the pod's workload is admitted (the tenant's pod itself is not gated). The tenant
object's ``ownerReferences`` name tenant objects (a ReplicaSet, a Job) the host does not
have, so the twin carries none (the host's garbage collector would otherwise delete it as
an orphan, as vCluster drops them too); its controller is recorded as
``allot.dev/tenant-owner: <Kind>/<name>`` for host-side views. What the host adds to a
twin after its creation (``allot.dev/`` labels and annotations the sync does not write,
such as ``allot.dev/admitted-at``) is kept by ``with_host_keys``, so the sync never takes
it back. Back to the
tenant (``claim_status_to_tenant``, ``pod_status_to_tenant``): host names in
``reservedFor`` and ``resourceClaimStatuses`` mapped back, and the twin's names in a host
Event's message (``message_to_tenant``), and those of the ConfigMaps and Secrets it uses
(``sources_to_tenant``). Pure; used by the guard, the sync and
``allot explain``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from allot.api.documents import clone_document
from allot.controllers import lifecycle
from allot.tenancy import names
from allot.types import Obj
from allot.validation.names import is_dns1123_label

HOST_ONLY_POD_FIELDS = ("nodeName",)
SOURCE_KINDS = {"configmaps": "ConfigMap", "secrets": "Secret"}
"""The kinds a tenant's pods read (environment, volumes, image pull secrets) whose twins
the sync makes for as long as a pod uses them (:mod:`allot.tenancy.sources`)."""
SOURCE_FIELDS = ("data", "binaryData", "type", "immutable")
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
ADMISSION_GATE = "allot.dev/admission"
"""The scheduling gate of a fair-sharing tenant's pod twins, until their workload is admitted."""
SYNC_LABELS = frozenset({names.TENANT_LABEL, names.TENANT_NAMESPACE_LABEL})
SYNC_ANNOTATIONS = frozenset({names.NAME_ANNOTATION, names.UID_ANNOTATION, names.OWNER_ANNOTATION})


def to_host(kind: str, obj: Obj, tenant: str, gated: bool = False) -> Obj:
    """The host twin of a tenant object (no status: the host owns it); ``gated``: a pod
    twin waits for admission (its tenant is in fair-sharing mode)."""
    metadata = obj["metadata"]
    namespace = metadata.get("namespace") or "default"
    twin: Obj = {
        "apiVersion": obj.get("apiVersion"),
        "kind": kind,
        "metadata": _host_metadata(metadata, namespace, tenant),
    }
    if kind in SOURCE_KINDS.values():
        twin.update({f: clone_document(obj[f]) for f in SOURCE_FIELDS if f in obj})
        return twin
    spec = clone_document(obj.get("spec") or {})
    if kind == "Pod":
        spec = _host_pod_spec(spec, namespace, metadata["name"])
        if gated and all(
            g.get("name") != ADMISSION_GATE for g in spec.get("schedulingGates") or []
        ):
            spec["schedulingGates"] = [
                *(spec.get("schedulingGates") or []),
                {"name": ADMISSION_GATE},
            ]
    elif kind == "ResourceClaimTemplate":
        spec = _labelled_template(spec, tenant, namespace)
    twin["spec"] = spec
    return twin


def _labelled_template(spec: Obj, tenant: str, namespace: str) -> Obj:
    """A template twin whose claims carry the tenant's labels: the host's resourceclaim
    controller gives a generated claim the template's ``spec.metadata.labels``, so
    ``kubectl get resourceclaims -A -l allot.dev/tenant=T`` finds them as it finds the
    twins of the tenant's own claims (a mirror in the tenant leaves ``allot.dev/`` keys
    out, so the tenant never sees them)."""
    metadata = dict(spec.get("metadata") or {})
    labels = {
        k: v
        for k, v in (metadata.get("labels") or {}).items()
        if not k.startswith(names.PLATFORM_PREFIX)
    }
    labels.update({names.TENANT_LABEL: tenant, names.TENANT_NAMESPACE_LABEL: namespace})
    return {**spec, "metadata": {**metadata, "labels": labels}}


def kept_gates(twin: Obj, tenant_pod: Obj) -> list[Obj]:
    """The twin's scheduling gates that still stand: the tenant's own that its pod still
    has, and the admission gate while the host has not removed it. Gates are only ever
    removed (validation), so this never adds one back."""
    wanted = {g.get("name") for g in (tenant_pod.get("spec") or {}).get("schedulingGates") or []}
    wanted.add(ADMISSION_GATE)
    gates = (twin.get("spec") or {}).get("schedulingGates") or []
    return [g for g in gates if g.get("name") in wanted]


def mutable_pod_fields(twin: Obj, tenant_pod: Obj) -> Obj:
    """The twin's spec with what a pod update may change taken from the tenant's pod, as
    vCluster's pod syncer carries it: each container's and init container's image (by
    container name) and ``activeDeadlineSeconds``; the rest of a twin's spec is the host's
    once created (tolerations the tenant adds are not carried)."""
    spec = dict(twin.get("spec") or {})
    wanted = tenant_pod.get("spec") or {}
    for field in ("containers", "initContainers"):
        images = {c.get("name"): c.get("image") for c in wanted.get(field) or []}
        if field in spec:
            spec[field] = [
                {**c, "image": images.get(c.get("name"), c.get("image"))} for c in spec[field]
            ]
    spec.pop("activeDeadlineSeconds", None)
    if wanted.get("activeDeadlineSeconds") is not None:
        spec["activeDeadlineSeconds"] = wanted["activeDeadlineSeconds"]
    return spec


def with_host_keys(twin: Obj, desired: Obj) -> Obj:
    """``desired``'s metadata plus the ``allot.dev/`` labels and annotations the host
    wrote on the twin itself (the sync's own keys follow ``desired``)."""
    metadata = {**desired["metadata"]}
    for field, own in (("labels", SYNC_LABELS), ("annotations", SYNC_ANNOTATIONS)):
        values = dict(metadata.get(field) or {})
        for key, value in (twin["metadata"].get(field) or {}).items():
            if key.startswith(names.PLATFORM_PREFIX) and key not in own | names.TENANT_KEYS:
                values.setdefault(key, value)
        metadata[field] = values
    return {**desired, "metadata": metadata}


def _host_metadata(metadata: Obj, namespace: str, tenant: str) -> Obj:
    labels = {
        k: v
        for k, v in (metadata.get("labels") or {}).items()
        if not k.startswith(names.PLATFORM_PREFIX) or k in names.TENANT_KEYS
    }
    labels.update({names.TENANT_LABEL: tenant, names.TENANT_NAMESPACE_LABEL: namespace})
    annotations = {
        k: v
        for k, v in (metadata.get("annotations") or {}).items()
        if (not k.startswith(names.PLATFORM_PREFIX) or k in names.TENANT_KEYS)
        and k != "kubectl.kubernetes.io/last-applied-configuration"
    }
    annotations[names.NAME_ANNOTATION] = metadata["name"]
    owner = next((o for o in metadata.get("ownerReferences") or [] if o.get("controller")), None)
    if owner is not None:
        annotations[names.OWNER_ANNOTATION] = f"{owner.get('kind')}/{owner.get('name')}"
    if metadata.get("uid"):
        annotations[names.UID_ANNOTATION] = metadata["uid"]
    return {
        "name": names.host_name(metadata["name"], namespace),
        "namespace": names.host_namespace(tenant),
        "labels": labels,
        "annotations": annotations,
    }


DOWNWARD_FIELDS = {
    "metadata.name": f"metadata.annotations['{names.NAME_ANNOTATION}']",
    "metadata.uid": f"metadata.annotations['{names.UID_ANNOTATION}']",
    "metadata.namespace": f"metadata.labels['{names.TENANT_NAMESPACE_LABEL}']",
}
"""A tenant pod's downward-API fields, read from the twin's record of the tenant's name,
uid and namespace (as vCluster rewrites them), so the container sees the tenant's."""


def _host_pod_spec(spec: Obj, namespace: str, name: str) -> Obj:
    for field in HOST_ONLY_POD_FIELDS:
        spec.pop(field, None)
    if not spec.get("hostname") and not is_dns1123_label(name):
        spec["hostname"] = name  # the container's hostname: the tenant's pod name
    for container in (c for key in CONTAINER_LISTS for c in spec.get(key) or []):
        for item in container.get("env") or []:
            reference = (item.get("valueFrom") or {}).get("fieldRef")
            if isinstance(reference, dict) and reference.get("fieldPath") in DOWNWARD_FIELDS:
                reference["fieldPath"] = DOWNWARD_FIELDS[reference["fieldPath"]]
    for volume in spec.get("volumes") or []:  # the claim stays in the tenant's cluster
        claimed = volume.pop("persistentVolumeClaim", None), volume.pop("ephemeral", None)
        if claimed != (None, None):
            volume["emptyDir"] = {}
    for claim in spec.get("resourceClaims") or []:
        for key in ("resourceClaimName", "resourceClaimTemplateName"):
            if claim.get(key):
                claim[key] = names.host_name(claim[key], namespace)
    for _, holder, field in _source_references(spec):
        with contextlib.suppress(names.NameTooLong):  # not synced: the node agent says so
            holder[field] = names.host_name(str(holder[field]), namespace)
    return spec


def pod_sources(spec: Obj) -> set[tuple[str, str]]:
    """The (kind, name) of every ConfigMap and Secret a pod spec names: its containers'
    ``envFrom`` and ``valueFrom`` references, its ``configMap``, ``secret`` and
    ``projected`` volumes and its ``imagePullSecrets``."""
    return {(kind, str(holder[field])) for kind, holder, field in _source_references(spec)}


def _source_references(spec: Obj) -> list[tuple[str, Obj, str]]:
    """(kind, the dict holding the name, the name's field) for each reference."""
    found: list[tuple[str, Obj, str]] = []

    def add(kind: str, holder: object, field: str = "name") -> None:
        if isinstance(holder, dict) and holder.get(field):
            found.append((kind, holder, field))

    for container in (c for key in CONTAINER_LISTS for c in spec.get(key) or []):
        for entry in container.get("envFrom") or []:
            add("ConfigMap", entry.get("configMapRef"))
            add("Secret", entry.get("secretRef"))
        for item in container.get("env") or []:
            source = item.get("valueFrom") or {}
            add("ConfigMap", source.get("configMapKeyRef"))
            add("Secret", source.get("secretKeyRef"))
    for volume in spec.get("volumes") or []:
        add("ConfigMap", volume.get("configMap"))
        add("Secret", volume.get("secret"), "secretName")
        for projected in (volume.get("projected") or {}).get("sources") or []:
            add("ConfigMap", projected.get("configMap"))
            add("Secret", projected.get("secret"))
    for pull in spec.get("imagePullSecrets") or []:
        add("Secret", pull)
    return found


def same_content(kind: str, twin: Obj, desired: Obj) -> bool:
    """Whether the host twin already carries what the tenant object asks for (a pod's
    spec is the host's once created, but for gates: see ``kept_gates``)."""
    if (twin["metadata"].get("labels") or {}) != desired["metadata"]["labels"]:
        return False
    if (twin["metadata"].get("annotations") or {}) != desired["metadata"]["annotations"]:
        return False
    if kind in SOURCE_KINDS.values():
        return all(twin.get(f) == desired.get(f) for f in SOURCE_FIELDS)
    # a pod's spec is the host's once created; a template's cannot change (immutable),
    # and one made before its claims' labels were added keeps its spec
    return kind in ("Pod", "ResourceClaimTemplate") or twin.get("spec") == desired.get("spec")


def tenant_object_name(twin: Obj) -> tuple[str, str] | None:
    """The tenant ``(namespace, name)`` a host object is the twin of, if any."""
    metadata = twin["metadata"]
    labels = metadata.get("labels") or {}
    if names.TENANT_LABEL not in labels or names.TENANT_NAMESPACE_LABEL not in labels:
        return None
    name = (metadata.get("annotations") or {}).get(names.NAME_ANNOTATION)
    if not name:
        return None
    return labels[names.TENANT_NAMESPACE_LABEL], name


def message_to_tenant(message: str, host_namespace: str, twin: str, origin: tuple[str, str]) -> str:
    """A host message about twin ``twin`` (in ``host_namespace``) as the tenant reads it:
    ``<host ns>/<twin>`` and then ``<twin>`` (also inside names made from it, such as
    a generated claim's ``<twin>-<entry>-``) become the tenant's ``origin`` (namespace,
    name)."""
    message = message.replace(f"{host_namespace}/{twin}", f"{origin[0]}/{origin[1]}")
    return message.replace(twin, origin[1]) if twin else message


def kubelet_pod_to_tenant(message: str, twin: Obj, pod: Obj) -> str:
    """A kubelet message naming a pod ``<name>_<namespace>(<uid>)`` (``CrashLoopBackOff``,
    ``BackOff``) naming the twin ``twin`` as the tenant's ``pod``; done before
    :func:`message_to_tenant`, which would leave the host's namespace and uid."""
    return message.replace(lifecycle.kubelet_pod_name(twin), lifecycle.kubelet_pod_name(pod))


def sources_to_tenant(message: str, host_namespace: str, pod: Obj) -> str:
    """A host message naming the twins of ConfigMaps and Secrets a tenant pod uses (the
    kubelet's ``configmap "app.default" not found``, ``couldn't find key k in ConfigMap
    tenant-t/app.default``) as the tenant reads it: ``"app"``, ``default/app``."""
    namespace = pod["metadata"].get("namespace") or "default"
    for _, name in sorted(pod_sources(pod.get("spec") or {})):
        twin = f"{name}.{namespace}"
        message = message.replace(f"{host_namespace}/{twin}", f"{namespace}/{name}")
        message = message.replace(f'"{twin}"', f'"{name}"')
    return message


def claim_status_to_tenant(status: Obj, pod_twin: Callable[[str], Obj | None]) -> Obj:
    """A host claim's status for the tenant: ``reservedFor`` names its pods."""
    mapped = clone_document(status)
    reserved = []
    for consumer in mapped.get("reservedFor") or []:
        pod = pod_twin(consumer.get("name", "")) if consumer.get("resource") == "pods" else None
        if pod is not None:
            annotations = pod["metadata"].get("annotations") or {}
            consumer = {
                **consumer,
                "name": annotations.get(names.NAME_ANNOTATION, consumer.get("name")),
                "uid": annotations.get(names.UID_ANNOTATION, consumer.get("uid")),
            }
        reserved.append(consumer)
    if reserved:
        mapped["reservedFor"] = reserved
    return mapped


def pod_status_to_tenant(
    status: Obj, claim_name: Callable[[str], str | None], message: Callable[[str], str]
) -> Obj:
    """A host pod's status for the tenant: the host names of claims in
    ``resourceClaimStatuses`` mapped to the tenant's (``claim_name``: None keeps it), and
    the containers' waiting messages through ``message`` (``sources_to_tenant``)."""
    mapped = clone_document(status)
    for entry in mapped.get("resourceClaimStatuses") or []:
        tenant_name = claim_name(entry.get("resourceClaimName") or "")
        if tenant_name is not None:
            entry["resourceClaimName"] = tenant_name
    for field in ("containerStatuses", "initContainerStatuses"):
        for container in mapped.get(field) or []:
            waiting = (container.get("state") or {}).get("waiting") or {}
            if waiting.get("message"):
                waiting["message"] = message(str(waiting["message"]))
    return mapped
