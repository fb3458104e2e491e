"""A Tenant compiled into the standard objects that enforce its entitlement on the host.

Two ValidatingAdmissionPolicies are shared by all tenants and parameterised by one
ConfigMap per tenant (in ``allot-system``, which tenants cannot write):

* ``allot-tenant-claims`` checks every ResourceClaim and ResourceClaimTemplate created in
  a tenant namespace: every request, and every ``firstAvailable`` alternative, must name
  an entitled class (an unknown request shape fails closed), and ``adminAccess`` is
  refused. Specs (of claims and templates alike) are immutable, so the only UPDATE that
  can give a tenant devices through a class is a claim's ``status`` that newly sets the
  allocation or adds a consumer to ``reservedFor``: those are checked too (the entitlement
  of now, so a class revoked after the claim was created is refused to kube-scheduler as
  to allot's scheduler); every other update passes (finalizer removal, deallocation).
* ``allot-tenant-pods`` checks pods' DRA extended-resource requests: the implicit
  ``deviceclass.resource.kubernetes.io/<class>`` names must be entitled, and explicit
  ``extendedResourceName`` mappings of classes the tenant may not use are refused. It also
  keeps tenant pods inside their sandbox (Pod Security's "baseline" host rules and
  "restricted"'s non-root rule): no ``hostNetwork``/``hostPID``/``hostIPC``, no
  ``hostPath`` volumes, no ``privileged`` containers or added capabilities but
  ``NET_BIND_SERVICE``, no ``runAsUser: 0``. It matches UPDATE of
  ``pods/ephemeralcontainers`` too: ``kubectl debug`` adds containers to a running pod
  through it (vCluster's pod sync does the same on the host for a tenant's ``kubectl
  debug``), so a privileged debug container would otherwise never meet the sandbox rules.
  It judges the workloads synced for the tenant, not vCluster's own control plane in the
  namespace (:func:`_not_vcluster_control_plane` says how the two are told apart).

Each tenant gets a binding per policy that selects its host namespace by the
platform-set ``allot.dev/tenant`` label, with ``parameterNotFoundAction: Deny``, and a
ResourceQuota when it has quotas (in fair-sharing mode, only the keys that do not count
devices: :func:`allot.validation.names.is_device_quota_key`, the definition validation
uses too). The objects are valid for a real 1.36 API server (``allot render`` writes the
same ones). Pure; used by the tenant controller.
"""

from __future__ import annotations

from allot.api import claims
from allot.api.meta import selector_matches
from allot.api.tenancy import Tenant, entitlement_selector
from allot.tenancy.names import PLATFORM_NAMESPACE, TENANT_LABEL, host_namespace
from allot.types import Obj
from allot.validation.names import is_device_quota_key

CLAIMS_POLICY = "allot-tenant-claims"
PODS_POLICY = "allot-tenant-pods"
QUOTA_NAME = "tenant-quota"
MANAGED_BY = {"app.kubernetes.io/managed-by": "allot"}
EXTENDED_PREFIX = "deviceclass.resource.kubernetes.io/"
ALLOWED_CAPABILITY = "NET_BIND_SERVICE"
"""The one capability a tenant's container may add, as Pod Security's "restricted" allows:
vCluster's CoreDNS, a workload it syncs like the tenant's own, adds it to serve port 53."""
VCLUSTER_SYNCED_LABEL = "vcluster.loft.sh/managed-by"
"""vCluster's syncer puts this label on every pod it syncs to the host (``translate.HostLabels``)
and translates a tenant's own label of that key away, so a synced pod always carries it."""

_CLAIM_CLASSES = (
    "variables.requests.all(r, has(r.exactly) ? r.exactly.deviceClassName in variables.allowed"
    " : (has(r.firstAvailable) && r.firstAvailable.all(s, s.deviceClassName in"
    " variables.allowed)))"
)
_DENIED_CLASSES = (
    "variables.requests.map(r, has(r.exactly) ? (r.exactly.deviceClassName in"
    " variables.allowed ? '' : r.exactly.deviceClassName) : (has(r.firstAvailable) ?"
    " r.firstAvailable.map(s, s.deviceClassName).filter(n, !(n in variables.allowed))"
    ".join(', ') : '<unknown request type>')).filter(n, n != '').join(', ')"
)
_OBJECT = "dyn(object)"
_OLD = "dyn(oldObject)"
"""The claims policy matches claims and templates, and a real API server type-checks its
expressions against both schemas: what only one kind has (a claim's ``status``, a
template's ``spec.spec``) is read through ``dyn``, or the policy's ``status.typeChecking``
reports it."""
_GRANTS = (
    f"request.operation == 'CREATE' || (has({_OBJECT}.status) &&"
    f" ((has({_OBJECT}.status.allocation) && !(has({_OLD}.status) &&"
    f" has({_OLD}.status.allocation))) || (has({_OBJECT}.status.reservedFor) &&"
    f" {_OBJECT}.status.reservedFor.exists(r, !(has({_OLD}.status) &&"
    f" has({_OLD}.status.reservedFor) && {_OLD}.status.reservedFor.exists(o, o.uid =="
    " r.uid))))))"
)
"""The write creates the object, or newly allocates the claim or reserves it for a new
consumer (``status`` UPDATE): when the entitlement decides."""
_ENTITLED_TEXT = "(size(variables.allowed) == 0 ? '<none>' : variables.allowed.join(', '))"


def params_name(tenant: str) -> str:
    return f"entitlement-{tenant}"


def entitled_classes(tenant: Tenant, classes: list[Obj]) -> list[str]:
    """The names of the host classes the tenant's selector matches, sorted."""
    selector = entitlement_selector(tenant.spec)
    wire = selector.to_wire() if selector is not None else None
    return sorted(
        c["metadata"]["name"]
        for c in classes
        if selector_matches(wire, c["metadata"].get("labels"))
    )


def forbidden_extended_names(entitled: list[str], classes: list[Obj]) -> list[str]:
    """``extendedResourceName`` values reachable through a class the tenant may not use."""
    names = set()
    for device_class in classes:
        mapped = (device_class.get("spec") or {}).get("extendedResourceName")
        if mapped and device_class["metadata"]["name"] not in entitled:
            names.add(mapped)
    return sorted(names)


def params(tenant: str, entitled: list[str], forbidden: list[str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": params_name(tenant),
            "namespace": PLATFORM_NAMESPACE,
            "labels": {**MANAGED_BY, TENANT_LABEL: tenant},
        },
        "data": {
            "tenant": tenant,
            "deviceClasses": " ".join(entitled),
            "forbiddenExtendedResourceNames": " ".join(forbidden),
        },
    }


def entitled_in_params(params: Obj | None) -> list[str]:
    """The classes a params ConfigMap entitles, as the policies read it (none when it is
    missing: the bindings' ``parameterNotFoundAction`` is Deny)."""
    if params is None:
        return []
    return str((params.get("data") or {}).get("deviceClasses") or "").split()


def classes_named(claim_spec: Obj) -> list[str]:
    """Every class a claim spec's requests name (``firstAvailable`` alternatives too), in
    order, once each."""
    return claims.claim_classes({"spec": claim_spec})


def not_entitled(classes: list[str], tenant: str, entitled: list[str]) -> str:
    """The refusal the claims policy words, for the classes outside the entitlement."""
    shown = ", ".join(entitled) or "<none>"
    return (
        f"device class {', '.join(classes)} is not in the entitlement of tenant {tenant} "
        f"(entitled: {shown})"
    )


def _variables_for_params() -> list[Obj]:
    return [
        {
            "name": "allowed",
            "expression": "has(params.data) && has(params.data.deviceClasses) &&"
            " params.data.deviceClasses != '' ? params.data.deviceClasses.split(' ') : []",
        }
    ]


def _policy(
    name: str, group: str, resources: list[str], spec: Obj, updates: list[str] | None = None
) -> Obj:
    """A fail-closed, ConfigMap-parameterised policy on CREATE of ``resources`` (and on
    UPDATE of the subresources ``updates``, such as ``resourceclaims/status``).

    ``matchConstraints`` (and a binding's ``matchResources``) is an atomic struct that the
    API server defaults (``scope: "*"``, empty selectors): written with its defaults, the
    applied value is the stored one, so a second field manager applying the same object
    (``allot apply`` beside the tenant controller) co-owns it instead of conflicting, and
    a re-apply is no change."""
    rules = [
        {
            "apiGroups": [group],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": resources,
            "scope": "*",
        }
    ]
    if updates:
        rules.append(
            {
                "apiGroups": [group],
                "apiVersions": ["v1"],
                "operations": ["UPDATE"],
                "resources": updates,
                "scope": "*",
            }
        )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": dict(MANAGED_BY)},
        "spec": {
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {
                "matchPolicy": "Equivalent",
                "namespaceSelector": {},
                "objectSelector": {},
                "resourceRules": rules,
            },
            **spec,
        },
    }


def claims_policy() -> Obj:
    return _policy(
        CLAIMS_POLICY,
        "resource.k8s.io",
        ["resourceclaims", "resourceclaimtemplates"],
        {
            "variables": [
                {
                    "name": "spec",
                    "expression": "request.kind.kind == 'ResourceClaimTemplate' ?"
                    f" {_OBJECT}.spec.spec : {_OBJECT}.spec",
                },
                {
                    "name": "requests",
                    "expression": "has(variables.spec.devices) &&"
                    " has(variables.spec.devices.requests) ? variables.spec.devices.requests"
                    " : []",
                },
                *_variables_for_params(),
                {"name": "grants", "expression": _GRANTS},
            ],
            "validations": [
                {
                    "expression": f"!variables.grants || {_CLAIM_CLASSES}",
                    "reason": "Forbidden",
                    "messageExpression": "'device class ' + " + _DENIED_CLASSES + " + ' is not"
                    " in the entitlement of tenant ' + params.data.tenant + ' (entitled: ' + "
                    + _ENTITLED_TEXT
                    + " + ')'",
                },
                {
                    "expression": "!variables.requests.exists(r, has(r.exactly) &&"
                    " has(r.exactly.adminAccess) && r.exactly.adminAccess)",
                    "reason": "Forbidden",
                    "message": "adminAccess device requests are reserved for the platform's"
                    " administrators",
                },
            ],
        },
        updates=["resourceclaims/status"],
    )


def _has_true(path: str) -> str:
    """``path`` is set and true (CEL: fields absent from the object are not false)."""
    return f"(has({path}) && {path})"


def _pod_security_rules() -> list[Obj]:
    """The validations that keep a tenant's pod inside its sandbox."""
    context = "has(c.securityContext)"
    privileged = f"{context} && {_has_true('c.securityContext.privileged')}"
    capabilities = (
        f"{context} && has(c.securityContext.capabilities) &&"
        " has(c.securityContext.capabilities.add) &&"
        f" c.securityContext.capabilities.add.exists(a, a != '{ALLOWED_CAPABILITY}')"
    )
    root = f"{context} && has(c.securityContext.runAsUser) && c.securityContext.runAsUser == 0"
    pod_root = (
        "has(object.spec.securityContext) && has(object.spec.securityContext.runAsUser) &&"
        " object.spec.securityContext.runAsUser == 0"
    )
    host_namespaces = " || ".join(
        _has_true(f"object.spec.{field}") for field in ("hostNetwork", "hostPID", "hostIPC")
    )
    host_path = "has(object.spec.volumes) && object.spec.volumes.exists(v, has(v.hostPath))"
    tenant = "' (tenant ' + params.data.tenant + ')'"
    return [
        {
            "expression": f"!({host_namespaces})",
            "reason": "Forbidden",
            "messageExpression": "'tenant pods cannot use the host network, PID or IPC"
            " namespace (hostNetwork, hostPID, hostIPC): each pod runs in a sandbox of its"
            f" own' + {tenant}",
        },
        {
            "expression": f"!({host_path})",
            "reason": "Forbidden",
            "messageExpression": "'hostPath volumes are not allowed in tenant pods (volume '"
            " + object.spec.volumes.filter(v, has(v.hostPath)).map(v, v.name).join(', ') +"
            f" '): a pod sees only its own files' + {tenant}",
        },
        {
            "expression": f"!variables.containers.exists(c, ({privileged}) || ({capabilities}))",
            "reason": "Forbidden",
            "messageExpression": "'privileged containers and added capabilities other than"
            f" {ALLOWED_CAPABILITY} are not allowed in tenant pods (container ' +"
            " variables.containers.filter(c,"
            f" ({privileged}) || ({capabilities})).map(c, c.name).join(', ') + ')' + {tenant}",
        },
        {
            "expression": f"!({pod_root}) && !variables.containers.exists(c, {root})",
            "reason": "Forbidden",
            "messageExpression": "'tenant pods cannot run as root (runAsUser: 0); leave it"
            f" unset to run as an unprivileged user' + {tenant}",
        },
    ]


def _not_vcluster_control_plane() -> Obj:
    """The pods policy skips vCluster's own control plane in the tenant's namespace (the
    chart's StatefulSet runs its syncer as root), told by what the chart gives it and no
    tenant can give a pod: the service account ``vc-<release>`` (a pod vCluster syncs runs
    as ``vc-workload-<release>``, or under a translated ``<name>-x-<ns>-x-<release>`` name
    with service-account sync), the template's labels ``app: vcluster`` and ``release:
    <release>`` (the syncer translates a tenant's ``release`` label to a
    ``vcluster.loft.sh/label-...`` key), and no sync marker: not vCluster's
    :data:`VCLUSTER_SYNCED_LABEL` and not the ``allot.dev/tenant`` label that the embedded
    platform's sync puts on every twin (it keeps a tenant pod's service account and labels
    as written). The release is the tenant's name, as ``vcluster create <tenant> -n
    tenant-<tenant>`` installs it."""
    labels = "object.metadata.labels"
    control_plane = (
        "has(object.spec.serviceAccountName) && object.spec.serviceAccountName =="
        f" 'vc-' + params.data.tenant && has({labels}) && 'app' in {labels} &&"
        f" {labels}['app'] == 'vcluster' && 'release' in {labels} && {labels}['release'] =="
        f" params.data.tenant && !('{VCLUSTER_SYNCED_LABEL}' in {labels}) &&"
        f" !('{TENANT_LABEL}' in {labels})"
    )
    return {"name": "not-vcluster-control-plane", "expression": f"!({control_plane})"}


def pods_policy() -> Obj:
    check = (
        f"(!k.startsWith('{EXTENDED_PREFIX}') || k.substring({len(EXTENDED_PREFIX)}) in"
        " variables.allowed) && !(k in variables.forbidden)"
    )
    per_container = (
        "!has(c.resources) || ((!has(c.resources.requests) ||"
        f" c.resources.requests.all(k, {check})) && (!has(c.resources.limits) ||"
        f" c.resources.limits.all(k, {check})))"
    )
    refused_names = (  # a container's refused names, a limit that repeats a request once
        "(has(c.resources) && has(c.resources.requests) ?"
        f" c.resources.requests.filter(k, !({check})) : []) + (has(c.resources) &&"
        f" has(c.resources.limits) ? c.resources.limits.filter(k, !({check}) &&"
        " !(has(c.resources.requests) && k in c.resources.requests)) : [])"
    )
    return _policy(
        PODS_POLICY,
        "",
        ["pods"],
        {
            "matchConditions": [_not_vcluster_control_plane()],
            "variables": [
                {
                    "name": "containers",
                    "expression": "object.spec.containers + (has(object.spec.initContainers) ?"
                    " object.spec.initContainers : []) + (has(object.spec.ephemeralContainers)"
                    " ? dyn(object.spec.ephemeralContainers) : [])",  # their own type
                },
                *_variables_for_params(),
                {
                    "name": "forbidden",
                    "expression": "has(params.data.forbiddenExtendedResourceNames) &&"
                    " params.data.forbiddenExtendedResourceNames != '' ?"
                    " params.data.forbiddenExtendedResourceNames.split(' ') : []",
                },
            ],
            "validations": [
                {
                    "expression": f"variables.containers.all(c, {per_container})",
                    "reason": "Forbidden",
                    "messageExpression": "'the pod requests a DRA extended resource outside"
                    " the entitlement of tenant ' + params.data.tenant + ': ' +"
                    f" variables.containers.map(c, ({refused_names}).join(', ')).filter(n,"
                    " n != '').join(', ') + ' (entitled device classes: ' + "
                    + _ENTITLED_TEXT
                    + " + ')'",
                },
                *_pod_security_rules(),
            ],
        },
        updates=["pods/ephemeralcontainers"],
    )


def binding(tenant: str, policy: str) -> Obj:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {
            "name": f"{policy}.{tenant}",
            "labels": {**MANAGED_BY, TENANT_LABEL: tenant},
        },
        "spec": {
            "policyName": policy,
            "validationActions": ["Deny"],
            "paramRef": {
                "name": params_name(tenant),
                "namespace": PLATFORM_NAMESPACE,
                "parameterNotFoundAction": "Deny",
            },
            "matchResources": {
                "matchPolicy": "Equivalent",
                "namespaceSelector": {"matchLabels": {TENANT_LABEL: tenant}},
                "objectSelector": {},
            },
        },
    }


def tenant_side_binding(tenant: str) -> Obj:
    """The claims policy's binding inside a tenant's own API server (the kubernetes engine's
    tenants, :mod:`allot.kubeengine.tenants`): every namespace of the tenant's cluster, with
    the params ConfigMap of the same name in the tenant's ``allot-system``, so the tenant's
    own request is refused with the host's message. A courtesy, not the enforcement: the
    tenant's administrator may remove it, and the host's binding still judges its twins."""
    made = binding(tenant, CLAIMS_POLICY)
    made["spec"]["matchResources"] = {"namespaceSelector": {}}
    return made


def quota(tenant: Tenant) -> Obj | None:
    """The tenant's ResourceQuota; a tenant in fair-sharing mode gets only its non-device
    keys (its devices are admitted by queue, not refused by quota), none when none is left."""
    hard = dict(tenant.spec.quota.hard or {}) if tenant.spec.quota else {}
    if tenant.spec.sharing is not None:
        hard = {key: value for key, value in hard.items() if not is_device_quota_key(key)}
    if not hard:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "name": QUOTA_NAME,
            "namespace": host_namespace(tenant.metadata.name or ""),
            "labels": {**MANAGED_BY, TENANT_LABEL: tenant.metadata.name or ""},
        },
        "spec": {"hard": {key: str(value) for key, value in sorted(hard.items())}},
    }


def namespace(tenant: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": host_namespace(tenant),
            "labels": {**MANAGED_BY, TENANT_LABEL: tenant},
        },
    }
