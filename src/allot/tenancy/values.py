"""Reading a tenant definition: a vCluster values file or a Tenant document.

``allot tenant create NAME -f values.yaml`` accepts vCluster's values unchanged (seed
000's ``legal-ai-vcluster-config.yaml`` works as is). allot reads
``sync.toHost.resourceClaims``, ``sync.toHost.resourceClaimTemplates``,
``sync.fromHost.deviceClasses``, ``sync.fromHost.nodes`` and ``policies.resourceQuota``
(its ``quota`` becomes the tenant's ResourceQuota when vCluster would make one:
``enabled: true``, or ``auto``, the default, with ``policies.limitRange.enabled: true``).
Other keys vCluster knows are reported as warnings (they have no meaning for the embedded
platform); keys vCluster does not know are errors naming their path and the nearest key
vCluster knows there (``sync.fromHost.deviceClasses.selectr: unknown key (did you mean
"selector"?)``), so a typo never passes silently. Several files merge as Helm merges
``-f a.yaml -f b.yaml`` (``merged``). A document with ``kind: Tenant`` is taken as the
Tenant itself. Pure; used by ``allot tenant create``.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from allot.api.kinds import render_location
from allot.api.tenancy import (
    TENANCY_GROUP,
    TENANCY_VERSION,
    TenantQuota,
    TenantSpec,
    VclusterValues,
)
from allot.types import Obj
from allot.validation.suggestions import did_you_mean

# The keys of vCluster's chart/values.schema.json in every release with DRA sync (v0.32 to
# v0.37), plus the older external and sleepMode.
VCLUSTER_TOP_LEVEL = {
    "controlPlane", "deletion", "deploy", "experimental", "exportKubeConfig", "external",
    "integrations", "logging", "networking", "plugins", "policies", "privateNodes",
    "rbac", "serviceCIDR", "sleep", "sleepMode", "snapshots", "sync", "telemetry",
    "global", "pro", "plugin", "platform",
}  # fmt: skip
VCLUSTER_TO_HOST = {
    "pods", "secrets", "configMaps", "ingresses", "services", "endpoints",
    "endpointSlices", "gatewayApi", "networkPolicies", "persistentVolumeClaims",
    "persistentVolumes", "volumeSnapshots", "volumeSnapshotContents", "storageClasses",
    "serviceAccounts", "podDisruptionBudgets", "priorityClasses", "namespaces",
    "customResources", "resourceClaims", "resourceClaimTemplates",
}  # fmt: skip
VCLUSTER_FROM_HOST = {
    "nodes", "events", "ingressClasses", "gatewayClasses", "gateways", "runtimeClasses",
    "priorityClasses", "storageClasses", "csiNodes", "csiDrivers", "csiStorageCapacities",
    "volumeSnapshotClasses", "configMaps", "secrets", "customResources", "deviceClasses",
}  # fmt: skip
VCLUSTER_POLICIES = {
    "centralAdmission", "limitRange", "networkPolicy", "podSecurityStandard", "resourceQuota",
}  # fmt: skip
USED = {
    "toHost": {"resourceClaims", "resourceClaimTemplates"},
    "fromHost": {"deviceClasses", "nodes"},
}
KNOWN = {"toHost": VCLUSTER_TO_HOST, "fromHost": VCLUSTER_FROM_HOST}


class ValuesError(ValueError):
    """The values file cannot define a tenant; the message names the key's path."""


def tenant_document(name: str, document: Obj) -> tuple[Obj, list[str]]:
    """A Tenant (wire form) from a values file or Tenant document, and warnings."""
    if not isinstance(document, dict):
        raise ValuesError("the values file must be a YAML mapping")
    if document.get("kind") == "Tenant":
        tenant = {**document, "metadata": {**(document.get("metadata") or {}), "name": name}}
        return tenant, []
    warnings = _check_keys(document)
    relevant = {k: _relevant(k, v) for k, v in document.items() if k in ("sync", "policies")}
    try:
        values = VclusterValues.model_validate(relevant)
    except ValidationError as err:
        raise ValuesError(_first_problem(err)) from None
    spec = TenantSpec(sync=values.sync)
    quota = values.policies.resource_quota if values.policies else None
    if quota is not None and quota.quota:
        if _quota_enabled(quota.enabled, _limit_range_switch(document)):
            spec.quota = TenantQuota(hard=quota.quota)
        else:
            warnings.append(
                "policies.resourceQuota.quota: ignored, as vCluster ignores it: the quota is "
                "made only when policies.resourceQuota.enabled is true (or it is auto, the "
                "default, and policies.limitRange.enabled is true)"
            )
    return {
        "apiVersion": f"{TENANCY_GROUP}/{TENANCY_VERSION}",
        "kind": "Tenant",
        "metadata": {"name": name},
        "spec": spec.to_wire(),
    }, warnings


def _quota_enabled(quota: bool | str | None, limit_range: object) -> bool:
    """vCluster's chart rule (``templates/resourcequota.yaml``): a switch is compared as text,
    ``auto`` (the default) follows the limit range's switch, ``false`` always wins."""
    quota_text = _switch_text(quota)
    on = quota_text == "true" or _switch_text(limit_range) == "true"
    return on and quota_text != "false"


def _switch_text(value: object) -> str:
    if value is None:
        return "auto"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _limit_range_switch(document: Obj) -> object:
    policies = document.get("policies")
    limit_range = policies.get("limitRange") if isinstance(policies, dict) else None
    return limit_range.get("enabled") if isinstance(limit_range, dict) else None


def merged(documents: list[Obj]) -> Obj:
    """Values files merged as Helm merges them: mappings key by key, the later file's
    value winning for anything else (lists are replaced, not joined)."""
    result: Obj = {}
    for document in documents:
        result = _merge(result, document)
    return result


def _merge(base: Obj, override: Obj) -> Obj:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _first_problem(err: ValidationError) -> str:
    first = err.errors()[0]
    location = tuple(first["loc"])
    if first["type"] == "extra_forbidden":
        known = _keys_at(VclusterValues, location[:-1])
        hint = did_you_mean(str(location[-1]), known)
        return f"{render_location(location)}: unknown key" + (f" ({hint})" if hint else "")
    return f"{render_location(location)}: {first['msg'].removeprefix('Value error, ')}"


def _keys_at(model: type[BaseModel], location: tuple[int | str, ...]) -> list[str]:
    """The keys the model under ``location`` (wire names, list indexes skipped) has."""
    current: type[BaseModel] | None = model
    for part in location:
        if current is None:
            return []
        if isinstance(part, int):
            continue
        fields = {field.alias or name: field for name, field in current.model_fields.items()}
        field = fields.get(part)
        current = _model_in(field.annotation) if field is not None else None
    if current is None:
        return []
    return [field.alias or name for name, field in current.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation holds (``X | None``, ``list[X]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, list):
        for argument in typing.get_args(annotation):
            found = _model_in(argument)
            if found is not None:
                return found
    return None


def _unknown(path: str, known: set[str], what: str = "") -> ValuesError:
    key = path.rpartition(".")[2]
    notes = [n for n in (what, did_you_mean(key, known)) if n]
    return ValuesError(f"{path}: unknown key" + (f" ({'; '.join(notes)})" if notes else ""))


def _check_keys(document: Obj) -> list[str]:
    warnings = []
    for key in document:
        if key not in VCLUSTER_TOP_LEVEL:
            raise _unknown(key, VCLUSTER_TOP_LEVEL, "not a vCluster values key")
        if key not in ("sync", "policies"):
            warnings.append(f"{key}: vCluster setting not used by the embedded platform, ignored")
    sync = document.get("sync") or {}
    if not isinstance(sync, dict):
        raise ValuesError("sync: must be a mapping")
    for direction, entries in sync.items():
        if direction not in KNOWN:
            raise _unknown(f"sync.{direction}", set(KNOWN), "expected toHost or fromHost")
        for entry in entries or {}:
            if entry not in KNOWN[direction]:
                raise _unknown(f"sync.{direction}.{entry}", KNOWN[direction])
            if entry not in USED[direction]:
                warnings.append(
                    f"sync.{direction}.{entry}: vCluster setting not used by the embedded "
                    "platform, ignored"
                )
    policies = document.get("policies") or {}
    for key in policies if isinstance(policies, dict) else []:
        if key not in VCLUSTER_POLICIES:
            raise _unknown(f"policies.{key}", VCLUSTER_POLICIES)
        if key != "resourceQuota":
            warnings.append(
                f"policies.{key}: vCluster setting not used by the embedded platform, ignored"
            )
    return warnings


def _relevant(key: str, value: Any) -> Any:
    """Only the parts allot reads (the rest has been checked and warned about)."""
    if not isinstance(value, dict):
        return value
    if key == "policies":
        return {k: v for k, v in value.items() if k == "resourceQuota"}
    return {
        direction: {k: v for k, v in (entries or {}).items() if k in USED.get(direction, set())}
        for direction, entries in value.items()
    }
