"""The NVIDIA driver's opaque device configs: strict decoding, validation, precedence.

Claims (``spec.devices.config``) and classes (``spec.config``) hand the driver typed
objects of group ``resource.nvidia.com/v1beta1``: ``GpuConfig``, ``MigDeviceConfig`` and,
with PassthroughSupport, ``VfioDeviceConfig``. As the driver's kubelet plugin does at
prepare time, :func:`configs_for_results` picks each allocated device's config (claim over
class, later over earlier, a config naming the request over one for all requests, built-in
defaults last), decodes it strictly and validates it, raising :class:`DriverConfigError`
with the driver's own texts. Pure; called by the node agent's device preparation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from allot.api.errors import QuantityError
from allot.api.quantity import Quantity

DRIVER = "gpu.nvidia.com"
API_VERSION = "resource.nvidia.com/v1beta1"
KIND_FOR_TYPE = {"gpu": "GpuConfig", "mig": "MigDeviceConfig", "vfio": "VfioDeviceConfig"}
GATE_FOR_STRATEGY = {"TimeSlicing": "TimeSlicingSettings", "MPS": "MPSSupport"}
INTERVALS = ("Default", "Short", "Medium", "Long")
IOMMU_POLICIES = ("LegacyOnly", "PreferIommuFD")
# Fields each kind accepts (strict decoding); nested objects by their own key.
FIELDS: dict[str, set[str]] = {
    "GpuConfig": {"apiVersion", "kind", "sharing"},
    "MigDeviceConfig": {"apiVersion", "kind", "sharing"},
    "VfioDeviceConfig": {"apiVersion", "kind", "iommu"},
    "GpuConfig.sharing": {"strategy", "timeSlicingConfig", "mpsConfig"},
    "MigDeviceConfig.sharing": {"strategy", "mpsConfig"},
    "timeSlicingConfig": {"interval"},
    "mpsConfig": {
        "defaultActiveThreadPercentage",
        "defaultPinnedDeviceMemoryLimit",
        "defaultPerDevicePinnedMemoryLimit",
        "multiUser",
    },
    "iommu": {"backendPolicy", "enableAPIDevice"},
}


class DriverConfigError(Exception):
    """A config the driver refuses; the message is the driver's."""


@dataclass(frozen=True)
class ChosenConfig:
    """The config applied to one allocated device (``None`` parameters: the default)."""

    device: str
    request: str
    kind: str
    parameters: Mapping[str, Any] | None


def configs_for_results(
    claim: Mapping[str, Any],
    device_types: Mapping[str, str],
    gates: Mapping[str, bool],
) -> list[ChosenConfig]:
    """The config of each of the claim's devices of this driver, validated.

    ``device_types`` maps device name to its ``type`` attribute (gpu, mig, vfio)."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    devices = allocation.get("devices") or {}
    candidates = _opaque_entries(devices.get("config") or [])
    chosen = []
    for result in devices.get("results") or []:
        if result.get("driver") != DRIVER:
            continue
        device, request = str(result.get("device")), str(result.get("request"))
        kind = KIND_FOR_TYPE.get(device_types.get(device, "gpu"), "GpuConfig")
        parameters = _pick(candidates, device, request, kind, device_types.get(device, "gpu"))
        if parameters is not None:
            validate(parameters, gates)
        chosen.append(ChosenConfig(device, request, kind, parameters))
    if gates.get("PassthroughSupport", False):
        _one_vfio_group(claim, chosen)
    return chosen


def _one_vfio_group(claim: Mapping[str, Any], chosen: list[ChosenConfig]) -> None:
    """The driver binds a claim's VFIO devices as one group: at most one
    ``VfioDeviceConfig`` (the default counts as one) may apply to them."""
    groups = {id(c.parameters) for c in chosen if c.kind == "VfioDeviceConfig"}
    if len(groups) > 1:
        metadata = claim.get("metadata") or {}
        raise DriverConfigError(
            f"claim {metadata.get('namespace')}/{metadata.get('name')}:{metadata.get('uid')} "
            f"contains {len(groups)} VFIO device groups, but at most one is supported per claim"
        )


def _opaque_entries(entries: list[Any]) -> list[tuple[list[str], Mapping[str, Any]]]:
    """(requests, parameters) of this driver's entries, highest precedence first.

    The allocation's config list holds class configs before claim configs, each in
    order, so the last entry wins."""
    found = []
    for entry in entries:
        opaque = entry.get("opaque")
        if opaque is None:
            raise DriverConfigError("only opaque parameters are supported by this driver")
        if opaque.get("driver") != DRIVER:
            continue
        parameters = opaque.get("parameters")
        if not isinstance(parameters, dict):
            raise DriverConfigError("error decoding config: parameters must be an object")
        found.append((list(entry.get("requests") or []), parameters))
    return list(reversed(found))


def _pick(
    candidates: list[tuple[list[str], Mapping[str, Any]]],
    device: str,
    request: str,
    kind: str,
    device_type: str,
) -> Mapping[str, Any] | None:
    for requests, parameters in candidates:
        if _matches_request(requests, request):
            if parameters.get("kind") != kind:
                raise DriverConfigError(
                    f'cannot apply {parameters.get("kind")} to device "{device}" of type '
                    f'"{device_type}" (request: {request})'
                )
            return parameters
    for requests, parameters in candidates:
        if not requests and parameters.get("kind") == kind:
            return parameters
    return None


def _matches_request(requests: list[str], request: str) -> bool:
    """A config naming ``r`` applies to ``r`` and its subrequests (``r/sub``)."""
    return any(request == r or request.startswith(r + "/") for r in requests)


def validate(parameters: Mapping[str, Any], gates: Mapping[str, bool]) -> None:
    """Strict decoding, then the driver's checks of one config object."""
    if parameters.get("apiVersion") != API_VERSION or parameters.get("kind") not in (
        "GpuConfig",
        "MigDeviceConfig",
        "VfioDeviceConfig",
    ):
        raise DriverConfigError(
            f'error decoding config: no kind "{parameters.get("kind")}" is registered for '
            f'version "{parameters.get("apiVersion")}" in scheme'
        )
    kind = str(parameters["kind"])
    _strict(parameters, FIELDS[kind], "")
    if kind == "VfioDeviceConfig":
        iommu = parameters.get("iommu")
        if iommu is not None:
            _strict(iommu, FIELDS["iommu"], "iommu.")
            try:
                _validate_iommu(iommu)
            except DriverConfigError as err:
                raise DriverConfigError(f"error validating config: {err}") from None
        return
    sharing = parameters.get("sharing")
    if sharing is not None:
        _strict(sharing, FIELDS[f"{kind}.sharing"], "sharing.")
        try:
            _validate_sharing(sharing, gates)
        except DriverConfigError as err:  # the wording of the driver's main branch
            raise DriverConfigError(f"error validating config: {err}") from None


def _strict(obj: Any, allowed: set[str], path: str) -> None:
    if not isinstance(obj, dict):
        raise DriverConfigError(f"error decoding config: {path.rstrip('.')} must be an object")
    for key in obj:
        if key not in allowed:
            raise DriverConfigError(
                f'error decoding config: strict decoding error: unknown field "{path}{key}"'
            )


def _validate_sharing(sharing: Mapping[str, Any], gates: Mapping[str, bool]) -> None:
    strategy = sharing.get("strategy")
    if strategy not in GATE_FOR_STRATEGY:
        raise DriverConfigError(
            f"unknown GPU sharing strategy: {strategy}, supported GPU sharing strategies: "
            "TimeSlicing, MPS"
        )
    gate = GATE_FOR_STRATEGY[str(strategy)]
    if not gates.get(gate, False):
        raise DriverConfigError(
            f'"{strategy}" is selected as the GPU sharing strategy, but the "{gate}" feature '
            "gate is not enabled"
        )
    if strategy == "TimeSlicing":
        if sharing.get("mpsConfig") is not None:
            raise DriverConfigError("cannot use MpsConfig with the 'TimeSlicing' strategy")
        slicing = sharing.get("timeSlicingConfig") or {}
        _strict(slicing, FIELDS["timeSlicingConfig"], "sharing.timeSlicingConfig.")
        interval = slicing.get("interval", "Default")
        if interval not in INTERVALS:
            raise DriverConfigError(
                f"unknown time-slice interval: {interval}, supported time-slice intervals: "
                "Default, Short, Medium, Long"
            )
        return
    if sharing.get("timeSlicingConfig") is not None:
        raise DriverConfigError("cannot use TimeSlicingConfig with the 'MPS' strategy")
    _validate_mps(sharing.get("mpsConfig") or {})


def _validate_mps(mps: Mapping[str, Any]) -> None:
    _strict(mps, FIELDS["mpsConfig"], "sharing.mpsConfig.")
    percentage = mps.get("defaultActiveThreadPercentage")
    if percentage is not None:
        if int(percentage) < 0:
            raise DriverConfigError("active thread percentage must not be negative")
        if int(percentage) > 100:
            raise DriverConfigError("active thread percentage must not be greater than 100")
    limits = dict(mps.get("defaultPerDevicePinnedMemoryLimit") or {})
    if mps.get("defaultPinnedDeviceMemoryLimit") is not None:
        limits[""] = mps["defaultPinnedDeviceMemoryLimit"]
    for value in limits.values():  # too low a limit is refused as the daemon starts
        try:
            Quantity.parse(str(value))
        except QuantityError as err:
            raise DriverConfigError(f"error decoding config: {err}") from None


def _validate_iommu(iommu: Mapping[str, Any]) -> None:
    policy = iommu.get("backendPolicy") or "LegacyOnly"  # Normalize: "" is LegacyOnly
    if policy not in IOMMU_POLICIES:
        raise DriverConfigError(
            f"unknown IOMMU backend policy: {policy}, supported IOMMU backend policies: "
            "LegacyOnly, PreferIommuFD"
        )
