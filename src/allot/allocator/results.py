"""Building ``status.allocation`` from a successful search (incubating v0.36.3).

Results appear in the order devices were chosen; configs follow upstream exactly, including
its quirk (still in v0.36.3) of copying a claim config once per matching request (ledger
5.15.7); the node selector pins the allocation to the node when a device is node-local (or
``bindsToNode``), merges the slices' single-term selectors otherwise, and is omitted for
devices usable from every node. Called by :mod:`allot.allocator.search`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allot.allocator.errors import AllocationError
from allot.allocator.requests import ClaimData, RequestData
from allot.api import core_v1_nodes as corev1
from allot.api import resource_v1 as resourceapi

if TYPE_CHECKING:
    from allot.allocator.search import InternalResult


def build_allocation(
    node: corev1.Node, data: ClaimData, results: list[InternalResult], *, binding: bool
) -> resourceapi.AllocationResult:
    device_results = [_device_result(r, binding) for r in results]
    chosen = {r.request.name.split("/", 1)[0]: r.request for r in results}
    config = _class_configs(data, chosen) + _claim_configs(data, chosen)
    return resourceapi.AllocationResult(
        devices=resourceapi.DeviceAllocationResult(
            results=device_results or None, config=config or None
        ),
        node_selector=_node_selector(node, data, results),
    )


def _device_result(
    result: InternalResult, binding: bool
) -> resourceapi.DeviceRequestAllocationResult:
    device = result.device.device
    consumed = None
    if result.share_id is not None and device.capacity:
        consumed = dict(result.consumed or {})
    return resourceapi.DeviceRequestAllocationResult(
        request=result.request.name,
        driver=result.device.id[0],
        pool=result.device.id[1],
        device=result.device.id[2],
        admin_access=True if result.request.admin_access else None,
        tolerations=[t.model_copy() for t in result.request.tolerations] or None,
        binding_conditions=list(device.binding_conditions or []) or None if binding else None,
        binding_failure_conditions=(
            list(device.binding_failure_conditions or []) or None if binding else None
        ),
        share_id=result.share_id,
        consumed_capacity=consumed,
    )


def _class_configs(
    data: ClaimData, chosen: dict[str, RequestData]
) -> list[resourceapi.DeviceAllocationConfiguration]:
    configs: list[resourceapi.DeviceAllocationConfiguration] = []
    by_class: dict[str, list[resourceapi.DeviceAllocationConfiguration]] = {}
    for entry in data.requests:
        request = entry.exact if entry.exact is not None else chosen.get(entry.name)
        if request is None:
            continue
        if request.class_name in by_class:
            for config in by_class[request.class_name]:
                config.requests = [*(config.requests or []), request.name]
            continue
        entries = [
            resourceapi.DeviceAllocationConfiguration(
                source=resourceapi.CONFIG_SOURCE_CLASS,
                requests=[request.name],
                opaque=c.opaque.model_copy() if c.opaque else None,
            )
            for c in request.device_class.spec.config or []
        ]
        by_class[request.class_name] = entries
        configs += entries
    return configs


def _claim_configs(
    data: ClaimData, chosen: dict[str, RequestData]
) -> list[resourceapi.DeviceAllocationConfiguration]:
    devices = data.claim.spec.devices or resourceapi.DeviceClaim()
    configs = []
    for config in devices.config or []:
        copy = resourceapi.DeviceAllocationConfiguration(
            source=resourceapi.CONFIG_SOURCE_CLAIM,
            requests=config.requests,
            opaque=config.opaque.model_copy() if config.opaque else None,
        )
        if not config.requests:
            configs.append(copy)
            continue
        for entry in data.requests:
            request = chosen.get(entry.name)
            reference = request.name if request is not None else entry.name
            if entry.name in config.requests or reference in config.requests:
                configs.append(copy.model_copy(deep=True))
    return configs


def _node_selector(
    node: corev1.Node, data: ClaimData, results: list[InternalResult]
) -> corev1.NodeSelector | None:
    expressions: list[corev1.NodeSelectorRequirement] = []
    fields: list[corev1.NodeSelectorRequirement] = []
    for result in results:
        device, spec = result.device.device, result.device.slice.spec
        source = device if spec.per_device_node_selection else spec
        if source.node_name or device.binds_to_node:
            return corev1.NodeSelector(
                node_selector_terms=[
                    corev1.NodeSelectorTerm(
                        match_fields=[
                            corev1.NodeSelectorRequirement(
                                key="metadata.name",
                                operator="In",
                                values=[node.metadata.name or ""],
                            )
                        ]
                    )
                ]
            )
        selector = source.node_selector
        if selector is None:
            continue
        terms = selector.node_selector_terms or []
        if len(terms) != 1:
            raise AllocationError(
                f"create NodeSelector for claim {data.claim.metadata.name}: "
                f"unsupported ResourceSlice.NodeSelector with {len(terms)} "
                "terms"
            )
        _merge(expressions, terms[0].match_expressions or [])
        _merge(fields, terms[0].match_fields or [])
    if not expressions and not fields:
        return None
    return corev1.NodeSelector(
        node_selector_terms=[
            corev1.NodeSelectorTerm(
                match_expressions=expressions or None, match_fields=fields or None
            )
        ]
    )


def _merge(
    into: list[corev1.NodeSelectorRequirement], requirements: list[corev1.NodeSelectorRequirement]
) -> None:
    def key(r: corev1.NodeSelectorRequirement) -> tuple[str, str, tuple[str, ...]]:
        return r.key or "", r.operator or "", tuple(sorted(r.values or []))

    known = {key(r) for r in into}
    for requirement in requirements:
        if key(requirement) not in known:
            into.append(requirement.model_copy(deep=True))
            known.add(key(requirement))
