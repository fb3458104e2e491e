"""A device prepared for selector evaluation, with its results remembered.

Kubernetes builds the ``device`` variable per evaluation; allot builds it once per device
(the attribute and capacity maps keyed by domain, versions parsed, quantities wrapped) and
keeps every selector's outcome on the view, so re-checking an unchanged device against a
known expression is a dictionary lookup. Callers (the allocator, lint, benchmarks) keep
one view per device for as long as the device's slice is unchanged.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from allot.api import resource_v1 as resourceapi
from allot.api.errors import SemverError
from allot.api.semver import Semver
from allot.cel import values
from allot.cel.errors import EvaluationError
from allot.cel.source import DeviceRead

if TYPE_CHECKING:
    from allot.cel.compiler import SelectorCompiler

DomainMap = dict[str, dict[str, Any]]


class DeviceView:
    """One device of one driver, as the CEL ``device`` variable sees it."""

    __slots__ = (
        "_activation",
        "_activation_key",
        "_build_error",
        "allow_multiple_allocations",
        "attributes",
        "capacity",
        "device",
        "driver",
        "results",
    )

    def __init__(
        self, driver: str, device: resourceapi.Device, *, list_type_attributes: bool = False
    ) -> None:
        self.driver = driver
        self.device = device
        self.allow_multiple_allocations = bool(device.allow_multiple_allocations)
        self.results: dict[str, bool | EvaluationError] = {}
        self._build_error: str | None = None
        self.attributes: DomainMap = {}
        self.capacity: DomainMap = {}
        self._activation: Any = None
        self._activation_key: tuple[int, int] | None = None
        try:
            self.attributes = _attribute_domains(driver, device, list_type_attributes)
        except EvaluationError as err:
            self._build_error = str(err)
        self.capacity = _capacity_domains(driver, device)

    @property
    def name(self) -> str:
        return self.device.name or ""

    def inputs(self, reads: tuple[DeviceRead, ...]) -> tuple[Hashable, ...] | None:
        """What ``reads`` find on this device, as a key: devices with equal keys give an
        expression reading only those values the same result. None when the view could not
        be built (its error names this device's attribute)."""
        if self._build_error is not None:
            return None
        key: list[Hashable] = []
        for read in reads:
            if read[0] == "driver":
                key.append(self.driver)
            elif read[0] == "allowMultipleAllocations":
                key.append(self.allow_multiple_allocations)
            else:
                domain = (self.attributes if read[0] == "attributes" else self.capacity).get(
                    read[1]
                )
                if domain is None:
                    key.append(_NO_DOMAIN)
                else:
                    key.append(_fingerprint(domain[read[2]]) if read[2] in domain else _NO_ENTRY)
        return tuple(key)

    def activation(self, compiler: SelectorCompiler) -> Any:
        """The runtime activation for ``compiler``'s environment, built on first use."""
        if self._build_error is not None:
            raise EvaluationError(self._build_error)
        key = (id(compiler), compiler.literal_version)
        if self._activation_key != key:
            self._activation = compiler.new_activation(self)
            self._activation_key = key
        return self._activation


_NO_DOMAIN = ("no domain",)
_NO_ENTRY = ("no entry",)


def _fingerprint(value: Any) -> Hashable:
    """A value of the maps, hashable and equal only to values CEL cannot tell apart
    (``True`` and ``1`` differ; a quantity or version compares by its normalised text)."""
    if isinstance(value, list):
        return ("list", tuple(_fingerprint(item) for item in value))
    if isinstance(value, bool | int | str):
        return (type(value).__name__, value)
    return (type(value).__name__, values.message_text(value))


def split_qualified_name(driver: str, name: str) -> tuple[str, str]:
    """``model`` -> (driver, model); ``other.domain/model`` -> (other.domain, model)."""
    domain, sep, identifier = name.partition("/")
    if not sep:
        return driver, name
    return domain, identifier


def _attribute_domains(
    driver: str, device: resourceapi.Device, list_type_attributes: bool
) -> DomainMap:
    domains: DomainMap = {}
    for name, attribute in (device.attributes or {}).items():
        domain, identifier = split_qualified_name(driver, name)
        domains.setdefault(domain, {})[identifier] = _attribute_value(
            name, attribute, list_type_attributes
        )
    return domains


def _attribute_value(
    name: str, attribute: resourceapi.DeviceAttribute, list_type_attributes: bool
) -> Any:
    if attribute.int_ is not None:
        return attribute.int_
    if attribute.bool_ is not None:
        return attribute.bool_
    if attribute.string is not None:
        return attribute.string
    if attribute.version is not None:
        return _version_value(attribute.version)
    if list_type_attributes:
        if attribute.ints is not None:
            return list(attribute.ints)
        if attribute.bools is not None:
            return list(attribute.bools)
        if attribute.strings is not None:
            return list(attribute.strings)
        if attribute.versions is not None:
            return [_version_value(v) for v in attribute.versions]
    raise EvaluationError(f"attribute {name}: unsupported attribute value")


def _version_value(text: str) -> Any:
    try:
        return values.semver_message(Semver.parse(text))
    except SemverError as err:
        raise EvaluationError(f"parse semantic version: {err}") from None


def _capacity_domains(driver: str, device: resourceapi.Device) -> DomainMap:
    domains: DomainMap = {}
    for name, capacity in (device.capacity or {}).items():
        if capacity.value is None:
            continue
        domain, identifier = split_qualified_name(driver, name)
        domains.setdefault(domain, {})[identifier] = values.quantity_message(capacity.value)
    return domains
