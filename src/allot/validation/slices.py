"""ResourceSlice validation: node selection, pools, devices, counters, taints, capacity.

A slice is checked on its own; rules that span slices (counter references, device names
unique across a pool, ``resourceSliceCount`` consistency) belong to the allocator, which
treats such pools as invalid, as Kubernetes does. Called by
:mod:`allot.validation.objects`.
"""

from __future__ import annotations

from allot.api import resource_v1 as resourceapi
from allot.api.features import Features
from allot.api.quantity import Quantity
from allot.api.semver import is_semver
from allot.validation import meta as metavalidation
from allot.validation import names
from allot.validation.field import (
    ErrorList,
    Path,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from allot.validation.resource import (
    ATTRIBUTE_MAX_VALUE_LENGTH,
    BINDING_CONDITIONS_MAX,
    MAX_ATTRIBUTE_VALUES,
    MAX_ATTRIBUTES_AND_CAPACITIES,
    MAX_CONSUMPTIONS_PER_DEVICE,
    MAX_COUNTER_SETS,
    MAX_COUNTERS_PER_SET,
    SLICE_MAX_DEVICES,
    SLICE_MAX_DEVICES_ADVANCED,
    TAINTS_MAX,
    _duplicates,
    _validate_list,
    validate_pool_name,
)

NODE_SELECTION_FIELDS = "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`"
DEVICE_NODE_SELECTION_FIELDS = "`nodeName`, `nodeSelector`, `allNodes`"


def validate_slice_spec(spec: resourceapi.ResourceSliceSpec, features: Features) -> ErrorList:
    path = Path("spec")
    errors = metavalidation.validate_driver_name(spec.driver, path.child("driver"))
    errors += _validate_pool(spec.pool, path.child("pool"))
    errors += _validate_node_selection(spec, path)
    if spec.devices and spec.shared_counters:
        errors.append(invalid(path, None, "only one of `sharedCounters` or `devices` is allowed"))
    per_device = bool(spec.per_device_node_selection)
    devices = spec.devices or []
    limit = (
        SLICE_MAX_DEVICES_ADVANCED if any(_is_advanced(d) for d in devices) else SLICE_MAX_DEVICES
    )
    errors += _validate_list(
        devices,
        limit,
        path.child("devices"),
        lambda d, p: _validate_device(d, p, per_device, features),
    )
    errors += _duplicates([d.name or "" for d in devices], path.child("devices"), "name")
    errors += _validate_list(
        spec.shared_counters, MAX_COUNTER_SETS, path.child("sharedCounters"), _validate_counter_set
    )
    errors += _duplicates(
        [c.name or "" for c in spec.shared_counters or []], path.child("sharedCounters"), "name"
    )
    return errors


def validate_slice_update(
    new: resourceapi.ResourceSliceSpec, old: resourceapi.ResourceSliceSpec
) -> ErrorList:
    errors: ErrorList = []
    path = Path("spec")
    if new.driver != old.driver:
        errors.append(invalid(path.child("driver"), new.driver or "", "field is immutable"))
    new_pool = new.pool.name if new.pool else None
    old_pool = old.pool.name if old.pool else None
    if new_pool != old_pool:
        errors.append(invalid(path.child("pool", "name"), new_pool or "", "field is immutable"))
    if new.node_name != old.node_name:
        errors.append(invalid(path.child("nodeName"), new.node_name or "", "field is immutable"))
    return errors


def _is_advanced(device: resourceapi.Device) -> bool:
    has_lists = any(
        a.ints is not None or a.bools is not None or a.strings is not None or a.versions is not None
        for a in (device.attributes or {}).values()
    )
    return bool(device.taints or device.consumes_counters or has_lists)


def _validate_pool(pool: resourceapi.ResourcePool | None, path: Path) -> ErrorList:
    if pool is None:
        return [required(path.child("name"))]
    errors = validate_pool_name(pool.name, path.child("name"))
    if (pool.resource_slice_count or 0) <= 0:
        errors.append(
            invalid(
                path.child("resourceSliceCount"),
                pool.resource_slice_count or 0,
                "must be greater than zero",
            )
        )
    if (pool.generation or 0) < 0:
        errors.append(
            invalid(
                path.child("generation"), pool.generation, "must be greater than or equal to zero"
            )
        )
    return errors


def _validate_node_selection(spec: resourceapi.ResourceSliceSpec, path: Path) -> ErrorList:
    errors: ErrorList = []
    chosen = 0
    if spec.node_name is not None:
        chosen += 1
        if not spec.node_name:
            errors.append(
                invalid(
                    path.child("nodeName"), "", "must be either unset or set to a non-empty string"
                )
            )
        else:
            errors += [
                invalid(path.child("nodeName"), spec.node_name, msg)
                for msg in names.is_dns1123_subdomain(spec.node_name)
            ]
    if spec.node_selector is not None:
        chosen += 1
        errors += metavalidation.validate_node_selector(
            spec.node_selector, path.child("nodeSelector"), exactly_one_term=True
        )
    for flag, wire in (
        (spec.all_nodes, "allNodes"),
        (spec.per_device_node_selection, "perDeviceNodeSelection"),
    ):
        if flag is not None:
            chosen += 1
            if not flag:
                errors.append(invalid(path.child(wire), False, "must be either unset or true"))
    if chosen == 0:
        errors.append(required(path, f"exactly one of {NODE_SELECTION_FIELDS} is required"))
    elif chosen > 1:
        errors.append(
            invalid(
                path,
                None,
                f"exactly one of {NODE_SELECTION_FIELDS} is required, but multiple fields are set",
            )
        )
    return errors


def _validate_device(
    device: resourceapi.Device, path: Path, per_device: bool, features: Features
) -> ErrorList:
    errors = metavalidation.validate_dns_label(device.name, path.child("name"))
    attributes = device.attributes or {}
    capacity = device.capacity or {}
    combined = len(attributes) + len(capacity)
    if combined > MAX_ATTRIBUTES_AND_CAPACITIES:
        errors.append(
            invalid(
                path,
                combined,
                "the total number of attributes and capacities "
                f"must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}",
            )
        )
    values = 0
    for name, attribute in attributes.items():
        attribute_path = path.child("attributes").key(name)
        errors += metavalidation.validate_qualified_name(name, attribute_path)
        attribute_errors, count = _validate_attribute(attribute, attribute_path, features)
        errors += attribute_errors
        values += count
    if values > MAX_ATTRIBUTE_VALUES:
        errors.append(
            invalid(
                path,
                values,
                f"the total number of attribute values must not exceed {MAX_ATTRIBUTE_VALUES}",
            )
        )
    multi = bool(device.allow_multiple_allocations)
    for name, entry in capacity.items():
        capacity_path = path.child("capacity").key(name)
        errors += metavalidation.validate_qualified_name(name, capacity_path)
        errors += _validate_capacity(entry, capacity_path, multi)
    errors += _validate_list(
        device.consumes_counters,
        MAX_CONSUMPTIONS_PER_DEVICE,
        path.child("consumesCounters"),
        _validate_consumption,
    )
    errors += _duplicates(
        [c.counter_set or "" for c in device.consumes_counters or []],
        path.child("consumesCounters"),
        "counterSet",
    )
    errors += _validate_device_node_selection(device, path, per_device)
    errors += _validate_list(device.taints, TAINTS_MAX, path.child("taints"), _validate_taint)
    errors += _validate_binding_conditions(device, path)
    return errors


def _validate_attribute(
    attribute: resourceapi.DeviceAttribute, path: Path, features: Features
) -> tuple[ErrorList, int]:
    errors: ErrorList = []
    scalars = [attribute.int_, attribute.bool_, attribute.string, attribute.version]
    lists = [attribute.ints, attribute.bools, attribute.strings, attribute.versions]
    if attribute.string is not None and len(attribute.string) > ATTRIBUTE_MAX_VALUE_LENGTH:
        errors.append(too_long(path.child("string"), ATTRIBUTE_MAX_VALUE_LENGTH))
    if attribute.version is not None:
        errors += _validate_version(attribute.version, path.child("version"))
    set_count = sum(v is not None for v in scalars) + sum(v is not None for v in lists)
    value_count = sum(v is not None for v in scalars)
    for wire, items in zip(("ints", "bools", "strings", "versions"), lists, strict=True):
        if items is None:
            continue
        if not features.dra_list_type_attributes:
            errors.append(
                forbidden(
                    path.child(wire),
                    "list-type attributes need the DRAListTypeAttributes feature gate",
                )
            )
        elif not items:
            errors.append(required(path.child(wire), "must not be empty if specified"))
        value_count += len(items)
    if set_count == 0:
        errors.append(required(path, "exactly one value must be specified"))
    elif set_count > 1:
        errors.append(invalid(path, attribute.to_wire(), "exactly one value must be specified"))
    return errors, value_count


def _validate_version(version: str, path: Path) -> ErrorList:
    errors: ErrorList = []
    if not is_semver(version):
        errors.append(
            invalid(path, version, "must be a string compatible with semver.org spec 2.0.0")
        )
    if len(version) > ATTRIBUTE_MAX_VALUE_LENGTH:
        errors.append(too_long(path, ATTRIBUTE_MAX_VALUE_LENGTH))
    return errors


def _validate_capacity(entry: resourceapi.DeviceCapacity, path: Path, multi: bool) -> ErrorList:
    if entry.value is None:
        return [required(path.child("value"))]
    policy = entry.request_policy
    if policy is None:
        return []
    policy_path = path.child("requestPolicy")
    if not multi:
        return [forbidden(policy_path, "allowMultipleAllocations must be true")]
    return _validate_request_policy(policy, entry.value, policy_path)


def _validate_request_policy(
    policy: resourceapi.CapacityRequestPolicy, capacity: Quantity, path: Path
) -> ErrorList:
    if policy.valid_values and policy.valid_range is not None:
        return [
            invalid(
                path,
                None,
                "exactly one policy can be specified, cannot specify "
                '"validValues" and "validRange" at the same time',
            )
        ]
    if policy.valid_values:
        return _validate_valid_values(policy, capacity, path)
    if policy.valid_range is not None:
        return _validate_valid_range(policy, policy.valid_range, capacity, path)
    return []


def _validate_valid_values(
    policy: resourceapi.CapacityRequestPolicy, capacity: Quantity, path: Path
) -> ErrorList:
    values = policy.valid_values or []
    values_path = path.child("validValues")
    errors: ErrorList = []
    if policy.default is None:
        errors.append(required(path.child("default"), "required when validValues is defined"))
    for index, value in enumerate(values):
        if value > capacity:
            errors.append(
                invalid(
                    values_path.index(index),
                    str(value),
                    f"option is larger than capacity value: {capacity}",
                )
            )
        if index and value <= values[index - 1]:
            errors.append(
                invalid(
                    values_path.index(index), str(value), "values must be sorted in ascending order"
                )
            )
    if policy.default is not None and policy.default not in values:
        errors.append(
            invalid(
                path.child("default"),
                str(policy.default),
                "default value is not valid according to the requestPolicy",
            )
        )
    return errors


def _validate_valid_range(
    policy: resourceapi.CapacityRequestPolicy,
    valid_range: resourceapi.CapacityRequestPolicyRange,
    capacity: Quantity,
    path: Path,
) -> ErrorList:
    range_path = path.child("validRange")
    if valid_range.min is None:
        return [required(range_path.child("min"))]
    low = valid_range.min
    errors: ErrorList = []
    if policy.default is None:
        errors.append(required(path.child("default"), "required when validRange is defined"))
    if low > capacity:
        errors.append(
            invalid(
                range_path.child("min"),
                str(low),
                f"option is larger than capacity value: {capacity}",
            )
        )
    if valid_range.max is not None and not low <= valid_range.max <= capacity:
        errors.append(
            invalid(
                range_path.child("max"),
                str(valid_range.max),
                "must be between min and the capacity value",
            )
        )
    if policy.default is not None and (
        policy.default < low or (valid_range.max is not None and policy.default > valid_range.max)
    ):
        errors.append(
            invalid(
                path.child("default"),
                str(policy.default),
                "default value is not valid according to the requestPolicy",
            )
        )
    step = valid_range.step
    if step is not None:
        if step.sign() <= 0:
            errors.append(invalid(range_path.child("step"), str(step), "must be positive"))
        else:
            errors += _validate_steps(policy, valid_range, step, path)
    return errors


def _validate_steps(
    policy: resourceapi.CapacityRequestPolicy,
    valid_range: resourceapi.CapacityRequestPolicyRange,
    step: Quantity,
    path: Path,
) -> ErrorList:
    low = valid_range.min or Quantity(0)
    errors: ErrorList = []
    checks = [
        (path.child("default"), policy.default),
        (path.child("validRange", "max"), valid_range.max),
    ]
    for check_path, value in checks:
        if value is not None and (value.nanos - low.nanos) % step.nanos:
            errors.append(
                invalid(
                    check_path,
                    str(value),
                    f"value is not a multiple of a given step ({step}) from ({low})",
                )
            )
    return errors


def _validate_consumption(
    consumption: resourceapi.DeviceCounterConsumption, path: Path
) -> ErrorList:
    errors = metavalidation.validate_dns_label(consumption.counter_set, path.child("counterSet"))
    return errors + _validate_counters(consumption.counters, path.child("counters"))


def _validate_counter_set(counter_set: resourceapi.CounterSet, path: Path) -> ErrorList:
    errors = metavalidation.validate_dns_label(counter_set.name, path.child("name"))
    return errors + _validate_counters(counter_set.counters, path.child("counters"))


def _validate_counters(counters: dict[str, resourceapi.Counter] | None, path: Path) -> ErrorList:
    if not counters:
        return [required(path)]
    if len(counters) > MAX_COUNTERS_PER_SET:
        return [too_many(path, len(counters), MAX_COUNTERS_PER_SET)]
    errors: ErrorList = []
    for name, counter in counters.items():
        errors += [invalid(path.key(name), name, msg) for msg in names.is_dns1123_label(name)]
        if counter.value is None:
            errors.append(required(path.key(name).child("value")))
    return errors


def _validate_device_node_selection(
    device: resourceapi.Device, path: Path, per_device: bool
) -> ErrorList:
    chosen = sum(x is not None for x in (device.node_name, device.node_selector, device.all_nodes))
    if not per_device:
        if chosen:
            return [
                invalid(
                    path,
                    None,
                    f"{DEVICE_NODE_SELECTION_FIELDS} can only be set if "
                    "`perDeviceNodeSelection` is set to true in the "
                    "ResourceSlice spec",
                )
            ]
        return []
    if chosen == 0:
        return [required(path, f"exactly one of {DEVICE_NODE_SELECTION_FIELDS} is required")]
    if chosen > 1:
        return [
            invalid(
                path,
                None,
                f"exactly one of {DEVICE_NODE_SELECTION_FIELDS} is "
                "required, but multiple fields are set",
            )
        ]
    if device.node_selector is not None:
        return metavalidation.validate_node_selector(
            device.node_selector, path.child("nodeSelector"), exactly_one_term=True
        )
    if device.all_nodes is False:
        return [invalid(path.child("allNodes"), False, "must be either unset or true")]
    return []


def _validate_taint(taint: resourceapi.DeviceTaint, path: Path) -> ErrorList:
    errors: ErrorList = []
    if not taint.key:
        errors.append(required(path.child("key")))
    else:
        errors += [
            invalid(path.child("key"), taint.key, msg) for msg in names.is_qualified_name(taint.key)
        ]
    if taint.value:
        errors += [
            invalid(path.child("value"), taint.value, msg)
            for msg in names.is_label_value(taint.value)
        ]
    if not taint.effect:
        errors.append(required(path.child("effect")))
    elif taint.effect not in resourceapi.TAINT_EFFECTS:
        errors.append(
            not_supported(path.child("effect"), taint.effect, list(resourceapi.TAINT_EFFECTS))
        )
    return errors


def _validate_binding_conditions(device: resourceapi.Device, path: Path) -> ErrorList:
    conditions = device.binding_conditions or []
    failures = device.binding_failure_conditions or []
    errors: ErrorList = []
    for wire, items in (("bindingConditions", conditions), ("bindingFailureConditions", failures)):
        if len(items) > BINDING_CONDITIONS_MAX:
            errors.append(too_many(path.child(wire), len(items), BINDING_CONDITIONS_MAX))
        errors += _duplicates(items, path.child(wire))
        for index, item in enumerate(items):
            errors += [
                invalid(path.child(wire).index(index), item, msg)
                for msg in names.is_qualified_name(item)
            ]
    if conditions and not failures:
        errors.append(
            required(
                path.child("bindingFailureConditions"),
                "bindingFailureConditions are required to use bindingConditions",
            )
        )
    if failures and not conditions:
        errors.append(
            required(
                path.child("bindingConditions"),
                "bindingConditions are required to use bindingFailureConditions",
            )
        )
    overlap = sorted(set(conditions) & set(failures))
    if overlap:
        errors.append(
            invalid(
                path.child("bindingFailureConditions"),
                overlap[0],
                "bindingFailureConditions must not overlap with bindingConditions",
            )
        )
    return errors
