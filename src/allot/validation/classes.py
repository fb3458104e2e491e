"""DeviceClass validation: selectors (compiled unless unchanged), config, extended resource.

Called by :mod:`allot.validation.objects`.
"""

from __future__ import annotations

from allot.api import resource_v1 as resourceapi
from allot.validation import names
from allot.validation.field import ErrorList, Path, invalid
from allot.validation.resource import (
    DEVICE_CONFIG_MAX,
    ResourceContext,
    _validate_list,
    _validate_selectors,
    validate_opaque,
)

EXTENDED_RESOURCE_MESSAGE = "must be a valid extended resource name"


def validate_class_spec(spec: resourceapi.DeviceClassSpec, context: ResourceContext) -> ErrorList:
    path = Path("spec")
    errors = _validate_selectors(spec.selectors, path.child("selectors"), context)
    errors += _validate_list(
        spec.config, DEVICE_CONFIG_MAX, path.child("config"), lambda c, p: validate_opaque(c, p)
    )
    if spec.extended_resource_name is not None:
        errors += validate_extended_resource_name(
            spec.extended_resource_name, path.child("extendedResourceName")
        )
    return errors


def validate_extended_resource_name(name: str, path: Path) -> ErrorList:
    """``IsExtendedResourceName``: a qualified name outside ``kubernetes.io`` with a domain."""
    domain, sep, _ = name.partition("/")
    native = not sep or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    if native and not name.startswith("deviceclass.resource.kubernetes.io/"):
        return [invalid(path, name, EXTENDED_RESOURCE_MESSAGE)]
    problems = names.is_qualified_name(name) + names.is_qualified_name("requests." + name)
    return [invalid(path, name, EXTENDED_RESOURCE_MESSAGE)] if problems else []
