"""``core/v1`` validation for the kinds allot serves, focused on what DRA depends on.

Pods: claim references (``spec.resourceClaims`` one-of, names, container
``resources.claims`` pointing at existing entries), containers with names and images,
restart policy, inter-pod affinity terms (:mod:`allot.validation.podaffinity`), scheduling
gates (qualified names, no duplicates; no ``nodeName`` while any
remain; on update gates may only be removed, as ``validateOnlyDeletedSchedulingGates``),
and container resource amounts as ``ValidateResourceRequirements``: none
negative; extended resources (``nvidia.com/gpu``, and, stricter than upstream, a
DeviceClass's implicit ``deviceclass.resource.kubernetes.io/<class>``) whole, with a limit,
and a request equal to it, since quota charges requests and the scheduler allocates them.
Namespaces, Nodes, ConfigMaps and Events get their name and basic field checks. Called by
:mod:`allot.validation.objects`.
"""

from __future__ import annotations

import re

from allot.api import core_v1 as corev1
from allot.api.quantity import Quantity
from allot.validation import meta as metavalidation
from allot.validation import names, podupdates
from allot.validation.field import (
    ErrorList,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    required,
    too_long,
)
from allot.validation.podaffinity import validate_pod_affinities

RESTART_POLICIES = ["Always", "Never", "OnFailure"]
CONFIG_MAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
CONFIG_MAP_MAX_BYTES = 1024 * 1024


def validate_pod_spec(spec: corev1.PodSpec, path: Path) -> ErrorList:
    errors: ErrorList = []
    claim_names = [c.name or "" for c in spec.resource_claims or []]
    errors += _validate_pod_claims(spec.resource_claims or [], path.child("resourceClaims"))
    containers = spec.containers or []
    if not containers:
        errors.append(required(path.child("containers")))
    all_names: list[str] = []
    for wire, group in (("initContainers", spec.init_containers or []), ("containers", containers)):
        for index, container in enumerate(group):
            item = path.child(wire).index(index)
            errors += _validate_container(container, item, claim_names)
            if container.name in all_names:
                errors.append(duplicate(item.child("name"), container.name))
            all_names.append(container.name or "")
    if spec.restart_policy and spec.restart_policy not in RESTART_POLICIES:
        errors.append(
            not_supported(path.child("restartPolicy"), spec.restart_policy, RESTART_POLICIES)
        )
    if spec.node_name:
        errors += [
            invalid(path.child("nodeName"), spec.node_name, msg)
            for msg in names.is_dns1123_subdomain(spec.node_name)
        ]
    errors += _validate_scheduling_gates(spec.scheduling_gates or [], path.child("schedulingGates"))
    if spec.affinity is not None:
        errors += validate_pod_affinities(spec.affinity.to_wire(), path.child("affinity"))
    return errors


def validate_pod(pod: corev1.Pod) -> ErrorList:
    """A pod's spec, and no ``nodeName`` while scheduling gates remain (upstream checks it
    in ``ValidatePodCreate``; an update cannot get there, gates are never added)."""
    errors = validate_pod_spec(pod.spec, Path("spec"))
    if pod.spec.node_name and pod.spec.scheduling_gates:
        detail = "cannot be set until all schedulingGates have been cleared"
        errors.append(forbidden(Path("spec").child("nodeName"), detail))
    return errors


def validate_pod_update(new: corev1.Pod, old: corev1.Pod) -> ErrorList:
    """What an update of a pod may not do (``ValidatePodUpdate``): change its spec beyond
    the few mutable fields (:mod:`allot.validation.podupdates`), add or rename a
    scheduling gate."""
    errors = podupdates.validate_spec_update(new.spec.to_wire(), old.spec.to_wire())
    known = {gate.name for gate in old.spec.scheduling_gates or []}
    path = Path("spec").child("schedulingGates")
    return errors + [
        forbidden(
            path.index(index).child("name"),
            f"only deletion is allowed, but found new scheduling gate '{gate.name or ''}'",
        )
        for index, gate in enumerate(new.spec.scheduling_gates or [])
        if gate.name not in known
    ]


def _validate_scheduling_gates(gates: list[corev1.PodSchedulingGate], path: Path) -> ErrorList:
    """``validateSchedulingGates``: each name a qualified name, none twice."""
    errors: ErrorList = []
    seen: set[str] = set()
    for index, gate in enumerate(gates):
        name = gate.name or ""
        errors += [invalid(path.index(index), name, msg) for msg in names.is_qualified_name(name)]
        if name in seen:
            errors.append(duplicate(path.index(index), name))
        seen.add(name)
    return errors


def _validate_pod_claims(claims: list[corev1.PodResourceClaim], path: Path) -> ErrorList:
    errors: ErrorList = []
    seen: set[str] = set()
    for index, claim in enumerate(claims):
        item = path.index(index)
        errors += metavalidation.validate_dns_label(claim.name, item.child("name"))
        if claim.name in seen:
            errors.append(duplicate(item.child("name"), claim.name))
        seen.add(claim.name or "")
        has_claim = claim.resource_claim_name is not None
        has_template = claim.resource_claim_template_name is not None
        if has_claim and has_template:
            errors.append(
                invalid(
                    item,
                    None,
                    "at most one of `resourceClaimName` or "
                    "`resourceClaimTemplateName` may be specified",
                )
            )
        elif not has_claim and not has_template:
            errors.append(
                required(
                    item, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
                )
            )
        for wire, value in (
            ("resourceClaimName", claim.resource_claim_name),
            ("resourceClaimTemplateName", claim.resource_claim_template_name),
        ):
            if value is not None:
                errors += [
                    invalid(item.child(wire), value, msg)
                    for msg in names.is_dns1123_subdomain(value)
                ]
    return errors


def _validate_container(
    container: corev1.Container, path: Path, claim_names: list[str]
) -> ErrorList:
    errors = metavalidation.validate_dns_label(container.name, path.child("name"))
    if not container.image:
        errors.append(required(path.child("image")))
    if container.resources:
        errors += _validate_resource_amounts(container.resources, path.child("resources"))
    claims = container.resources.claims if container.resources else None
    seen: set[tuple[str, str]] = set()
    for index, claim in enumerate(claims or []):
        item = path.child("resources", "claims").index(index)
        if not claim.name:
            errors.append(required(item.child("name")))
        elif claim.name not in claim_names:
            detail = (
                "must be one of the names in pod.spec.resourceClaims: " + ", ".join(claim_names)
                if claim_names
                else "must be one of the names in pod.spec.resourceClaims which is empty"
            )
            errors.append(not_found(item, claim.name, detail))
        key = (claim.name or "", claim.request or "")
        if key in seen:
            errors.append(duplicate(item, claim.name))
        seen.add(key)
    return errors


def _validate_resource_amounts(resources: corev1.ResourceRequirements, path: Path) -> ErrorList:
    """Port of the amount checks of ``ValidateResourceRequirements`` (validation.go)."""
    limits = resources.limits or {}
    requests = resources.requests or {}
    errors: ErrorList = []
    for name, amount in sorted(limits.items()):
        errors += _validate_amount(name, amount, path.child("limits").key(name))
    for name, amount in sorted(requests.items()):
        errors += _validate_amount(name, amount, path.child("requests").key(name))
        limit = limits.get(name)
        if limit is not None and amount.compare(limit) != 0 and not _overcommit_allowed(name):
            detail = f"must be equal to {name} limit of {limit}"
            errors.append(invalid(path.child("requests"), str(amount), detail))
        elif limit is not None and amount.compare(limit) > 0:
            detail = f"must be less than or equal to {name} limit of {limit}"
            errors.append(invalid(path.child("requests"), str(amount), detail))
        elif limit is None and not _overcommit_allowed(name):
            detail = "Limit must be set for non overcommitable resources"
            errors.append(required(path.child("limits"), detail))
    return errors


def _validate_amount(name: str, amount: Quantity, path: Path) -> ErrorList:
    """``ValidateResourceQuantityValue``: not negative; whole for extended resources."""
    if amount.sign() < 0:
        return [invalid(path, str(amount), "must be greater than or equal to 0")]
    if names.is_dra_extended_resource_name(name) and not amount.is_integer():
        return [invalid(path, str(amount), "must be an integer")]
    return []


def _overcommit_allowed(name: str) -> bool:
    """``IsOvercommitAllowed`` (native, not hugepages), never for DRA extended resources."""
    if names.is_dra_extended_resource_name(name):
        return False
    return names.is_native_resource(name) and not name.startswith("hugepages-")


def validate_config_map(config_map: corev1.ConfigMap) -> ErrorList:
    errors: ErrorList = []
    total = 0
    for wire, mapping in (
        ("data", config_map.data or {}),
        ("binaryData", config_map.binary_data or {}),
    ):
        for key, value in mapping.items():
            if not CONFIG_MAP_KEY.match(key):
                errors.append(
                    invalid(
                        Path(wire),
                        key,
                        "a valid config key must consist of "
                        "alphanumeric characters, '-', '_' or '.' (e.g. "
                        "'key.name',  or 'KEY_NAME',  or 'key-name', regex used "
                        "for validation is '[-._a-zA-Z0-9]+')",
                    )
                )
            total += len(value)
    if total > CONFIG_MAP_MAX_BYTES:
        errors.append(too_long(Path(""), CONFIG_MAP_MAX_BYTES))
    return errors


def validate_event(event: corev1.Event) -> ErrorList:
    errors: ErrorList = []
    involved = event.involved_object
    if not involved.kind:
        errors.append(required(Path("involvedObject").child("kind")))
    if event.type and event.type not in ("Normal", "Warning"):
        errors.append(not_supported(Path("type"), event.type, ["Normal", "Warning"]))
    return errors
