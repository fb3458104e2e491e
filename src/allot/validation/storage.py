"""PersistentVolumeClaim and StorageClass defaulting and validation, as upstream's
``SetDefaults_PersistentVolumeClaim``/``SetDefaults_StorageClass``,
``ValidatePersistentVolumeClaim`` (pkg/apis/core/validation) and
``ValidateStorageClass`` (pkg/apis/storage/validation): access modes, the storage request,
class names and volume modes; provisioners, parameters, reclaim policies and binding modes,
and what an update may not change, with upstream's texts. Called through
:mod:`allot.registry.kinds.persistentvolumeclaims` and
:mod:`allot.registry.kinds.storageclasses`."""

from __future__ import annotations

from allot.api import core_v1_storage as core
from allot.api import storage_v1 as storage
from allot.validation import names
from allot.validation.field import (
    ErrorList,
    Path,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)
from allot.validation.workloads import immutable, validate_label_selector

SPEC = Path("spec")
MAX_PARAMETERS = 512
MAX_PARAMETERS_SIZE = 256 * 1024
IMMUTABLE_SPEC = (
    "spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)


# ---------------------------------------------------------------- PersistentVolumeClaim
def default_claim(obj: core.PersistentVolumeClaim) -> None:
    """A claim's volume mode is ``Filesystem`` unless said."""
    if obj.spec.volume_mode is None:
        obj.spec.volume_mode = "Filesystem"


def validate_claim(obj: core.PersistentVolumeClaim) -> ErrorList:
    spec = obj.spec
    errors: ErrorList = []
    modes = spec.access_modes or []
    if not modes:
        errors.append(required(SPEC.child("accessModes"), "at least 1 access mode is required"))
    if spec.selector is not None:
        errors += validate_label_selector(spec.selector, SPEC.child("selector"))
    errors += [
        not_supported(SPEC.child("accessModes"), mode, core.ACCESS_MODES)
        for mode in modes
        if mode not in core.ACCESS_MODES
    ]
    known = [mode for mode in modes if mode in core.ACCESS_MODES]
    if "ReadWriteOncePod" in known and any(mode != "ReadWriteOncePod" for mode in known):
        errors.append(
            forbidden(
                SPEC.child("accessModes"), "may not use ReadWriteOncePod with other access modes"
            )
        )
    errors += _storage_request(spec)
    if spec.storage_class_name:
        errors += [
            invalid(SPEC.child("storageClassName"), spec.storage_class_name, m)
            for m in names.is_dns1123_subdomain(spec.storage_class_name)
        ]
    if spec.volume_mode is not None and spec.volume_mode not in core.VOLUME_MODES:
        errors.append(not_supported(SPEC.child("volumeMode"), spec.volume_mode, core.VOLUME_MODES))
    return errors


def _storage_request(spec: core.PersistentVolumeClaimSpec) -> ErrorList:
    path = SPEC.child("resources").key("storage")
    requested = ((spec.resources or core.VolumeResourceRequirements()).requests or {}).get(
        "storage"
    )
    if requested is None:
        return [required(path)]
    if requested.sign() <= 0:
        return [invalid(path, str(requested), "must be greater than zero")]
    return []


def validate_claim_update(
    new: core.PersistentVolumeClaim, old: core.PersistentVolumeClaim
) -> ErrorList:
    """An unbound claim's spec may not change (no claim is ever bound in allot)."""
    if new.spec.to_wire() != old.spec.to_wire():
        return [forbidden(SPEC, IMMUTABLE_SPEC)]
    return []


# --------------------------------------------------------------------------- StorageClass
def default_storage_class(obj: storage.StorageClass) -> None:
    """Volumes are deleted with their claims and bound at once, unless said."""
    if obj.reclaim_policy is None:
        obj.reclaim_policy = "Delete"
    if obj.volume_binding_mode is None:
        obj.volume_binding_mode = "Immediate"


def validate_storage_class(obj: storage.StorageClass) -> ErrorList:
    errors: ErrorList = []
    provisioner = obj.provisioner or ""
    if not provisioner:
        errors.append(required(Path("provisioner")))
    else:
        lowered = provisioner.lower()
        errors += [
            invalid(Path("provisioner"), lowered, m) for m in names.is_qualified_name(lowered)
        ]
    errors += _validate_parameters(obj.parameters or {})
    policy = obj.reclaim_policy
    if policy is not None and policy not in storage.RECLAIM_POLICIES:
        errors.append(not_supported(Path("reclaimPolicy"), policy, storage.RECLAIM_POLICIES))
    mode = obj.volume_binding_mode
    if mode is None:
        errors.append(required(Path("volumeBindingMode")))
    elif mode not in storage.BINDING_MODES:
        errors.append(not_supported(Path("volumeBindingMode"), mode, storage.BINDING_MODES))
    return errors


def _validate_parameters(parameters: dict[str, str]) -> ErrorList:
    path = Path("parameters")
    if len(parameters) > MAX_PARAMETERS:
        return [too_long(path, MAX_PARAMETERS)]
    errors = [invalid(path, key, "field can not be empty.") for key in parameters if not key]
    if sum(len(k) + len(v) for k, v in parameters.items()) > MAX_PARAMETERS_SIZE:
        errors.append(too_long(path, MAX_PARAMETERS_SIZE))
    return errors


def validate_storage_class_update(
    new: storage.StorageClass, old: storage.StorageClass
) -> ErrorList:
    """Parameters, provisioner and reclaim policy may not change, nor the binding mode."""
    errors: ErrorList = []
    for name, before, after in (
        ("parameters", old.parameters or {}, new.parameters or {}),
        ("provisioner", old.provisioner, new.provisioner),
        ("reclaimPolicy", old.reclaim_policy, new.reclaim_policy),
    ):
        if before != after:
            errors.append(forbidden(Path(name), f"updates to {name} are forbidden."))
    return errors + immutable(
        new.volume_binding_mode, old.volume_binding_mode, Path("volumeBindingMode")
    )
