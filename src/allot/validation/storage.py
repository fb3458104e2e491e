"""PersistentVolumeClaim, PersistentVolume and StorageClass defaulting and validation, as
upstream's ``SetDefaults_PersistentVolumeClaim``/``SetDefaults_PersistentVolume``/
``SetDefaults_StorageClass``, ``ValidatePersistentVolumeClaim``,
``ValidatePersistentVolume`` (pkg/apis/core/validation) and
``ValidateStorageClass`` (pkg/apis/storage/validation): access modes, the storage request,
class names and volume modes; provisioners, parameters, reclaim policies and binding modes,
and what an update may not change, with upstream's texts. Called through
:mod:`allot.registry.kinds.persistentvolumeclaims` and
:mod:`allot.registry.kinds.storageclasses`."""

from __future__ import annotations

from allot.api import core_v1_storage as core
from allot.api import storage_v1 as storage
from allot.api.quantity import Quantity
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
from allot.validation.meta import validate_node_selector
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
    if not spec.access_modes:
        errors.append(required(SPEC.child("accessModes"), "at least 1 access mode is required"))
    if spec.selector is not None:
        errors += validate_label_selector(spec.selector, SPEC.child("selector"))
    errors += _access_modes(spec.access_modes or [])
    errors += _storage_request(spec)
    return errors + _class_and_mode(spec.storage_class_name, spec.volume_mode)


def _access_modes(modes: list[str]) -> ErrorList:
    """Known access modes, ``ReadWriteOncePod`` alone (claims and volumes alike)."""
    errors = [
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
    return errors


def _class_and_mode(class_name: str | None, volume_mode: str | None) -> ErrorList:
    errors = (
        [
            invalid(SPEC.child("storageClassName"), class_name, message)
            for message in names.is_dns1123_subdomain(class_name or "")
        ]
        if class_name
        else []
    )
    if volume_mode is not None and volume_mode not in core.VOLUME_MODES:
        errors.append(not_supported(SPEC.child("volumeMode"), volume_mode, core.VOLUME_MODES))
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
    """A claim's spec may not change, except ``volumeName`` once (the persistent volume
    controller binds it) and, for a bound claim, ``resources.requests`` and
    ``volumeAttributesClassName`` (upstream's ``ValidatePersistentVolumeClaimUpdate``;
    its diff of the two specs is not appended)."""
    new_wire, old_wire = new.spec.to_wire(), old.spec.to_wire()
    if not old.spec.volume_name:
        old_wire.pop("volumeName", None)
        new_wire.pop("volumeName", None)
    if old.status is not None and old.status.phase == "Bound":
        for field in ("resources", "volumeAttributesClassName"):
            old_wire.pop(field, None)
            new_wire.pop(field, None)
    if new_wire != old_wire:
        return [forbidden(SPEC, IMMUTABLE_SPEC)]
    return []


# ----------------------------------------------------------------------- PersistentVolume
def default_volume(obj: core.PersistentVolume) -> None:
    """``SetDefaults_PersistentVolume``: reclaim policy ``Retain``, volume mode
    ``Filesystem``."""
    if not obj.spec.persistent_volume_reclaim_policy:
        obj.spec.persistent_volume_reclaim_policy = "Retain"
    if obj.spec.volume_mode is None:
        obj.spec.volume_mode = "Filesystem"


def validate_volume(obj: core.PersistentVolume) -> ErrorList:
    """``ValidatePersistentVolumeSpec``: access modes, the storage capacity, reclaim policy,
    class, volume mode, exactly one volume source and the checks of the typed ones."""
    spec = obj.spec
    errors: ErrorList = []
    if not spec.access_modes:
        errors.append(required(SPEC.child("accessModes")))
    errors += _access_modes(spec.access_modes or [])
    errors += _capacity(spec.capacity or {})
    policy = spec.persistent_volume_reclaim_policy
    if policy and policy not in core.RECLAIM_POLICIES:
        errors.append(
            not_supported(
                SPEC.child("persistentVolumeReclaimPolicy"), policy, core.RECLAIM_POLICIES
            )
        )
    errors += _class_and_mode(spec.storage_class_name, spec.volume_mode)
    if spec.node_affinity is not None:
        errors += _node_affinity(spec.node_affinity)
    return errors + _volume_source(spec)


def _capacity(capacity: dict[str, Quantity]) -> ErrorList:
    path = SPEC.child("capacity")
    if not capacity:
        return [required(path)]
    errors: ErrorList = []
    if "storage" not in capacity or len(capacity) > 1:
        wire = {k: str(v) for k, v in capacity.items()}
        errors.append(not_supported(path, wire, ["storage"]))
    for key, value in capacity.items():
        if value.sign() < 0:
            errors.append(invalid(path.key(key), str(value), "must be greater than or equal to 0"))
    return errors


def _node_affinity(affinity: core.VolumeNodeAffinity) -> ErrorList:
    path = SPEC.child("nodeAffinity")
    if affinity.required is None:
        return [required(path.child("required"), "must specify required node constraints")]
    return validate_node_selector(affinity.required, path.child("required"), exactly_one_term=False)


def _volume_source(spec: core.PersistentVolumeSpec) -> ErrorList:
    """Exactly one source, and the required fields of ``hostPath``, ``local``, ``nfs`` and
    ``csi``."""
    wire = spec.to_wire()
    sources = [name for name in core.PERSISTENT_VOLUME_SOURCES if name in wire]
    if not sources:
        return [required(SPEC, "must specify a volume type")]
    errors = [
        forbidden(SPEC.child(name), "may not specify more than 1 volume type")
        for name in sources[1:]
    ]
    for name, fields in (
        ("hostPath", ("path",)),
        ("local", ("path",)),
        ("nfs", ("server", "path")),
        ("csi", ("driver", "volumeHandle")),
    ):
        source = wire.get(name)
        if source is not None:
            errors += [required(SPEC.child(name, f)) for f in fields if not source.get(f)]
    if spec.local is not None and spec.node_affinity is None:
        errors.append(required(SPEC.child("nodeAffinity"), "Local volume requires node affinity"))
    nfs_path = spec.nfs.path if spec.nfs is not None else None
    if nfs_path and not nfs_path.startswith("/"):
        errors.append(invalid(SPEC.child("nfs", "path"), nfs_path, "must be an absolute path"))
    return errors


def validate_volume_update(new: core.PersistentVolume, old: core.PersistentVolume) -> ErrorList:
    """A volume's source and its volume mode may not change (upstream appends a diff of the
    sources to the first text; allot does not)."""
    new_wire, old_wire = new.spec.to_wire(), old.spec.to_wire()
    errors: ErrorList = []
    if any(new_wire.get(n) != old_wire.get(n) for n in core.PERSISTENT_VOLUME_SOURCES):
        errors.append(
            forbidden(
                SPEC.child("persistentvolumesource"),
                "spec.persistentvolumesource is immutable after creation",
            )
        )
    return errors + immutable(new.spec.volume_mode, old.spec.volume_mode, Path("volumeMode"))


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
