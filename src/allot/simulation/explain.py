"""Why a step did not fit: per node and per request, candidates and grouped rejections.

Kubernetes only says ``cannot allocate all claims``. For every node tried, this module asks
the allocator to judge each device against each (sub)request on its own
(``Allocator.examine``), groups the rejections by reason (so a 1,000-device fleet gives a
few lines), and adds hints for the classic mistakes: a capacity threshold just above what
the hardware publishes (an "80GB" H100 has ``memory: 81559Mi``, less than ``80Gi``), or a
selector naming a driver that never publishes devices. Used by ``allot simulate --explain``
and ``allot explain``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from allot.allocator import Reason, Rejection
from allot.allocator.pools import PoolDevice
from allot.allocator.search import RequestReport
from allot.allocator.state import DeviceID, device_id_text
from allot.api.quantity import Quantity
from allot.simulation.runner import Simulation, StepResult

EXAMPLES_PER_GROUP = 3
_THRESHOLD = re.compile(
    r"""capacity\[["']([^"']+)["']\]\.(\w+)\.(?:compareTo|isGreaterThan)\(quantity\(["']"""
    r"""([^"']+)["']\)\)"""
)
_DRIVER = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


@dataclass
class ReasonGroup:
    reason: Reason
    count: int
    examples: list[str]
    details: list[str]


@dataclass
class RequestExplanation:
    node: str
    claim: str
    request: str
    needed: int
    candidates: int
    groups: list[ReasonGroup] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    skipped_pools: list[str] = field(default_factory=list)


def explain_step(
    simulation: Simulation,
    result: StepResult,
    limit: int | None = None,
    order: Sequence[str] = (),
) -> list[RequestExplanation]:
    """Explanations for every node the step tried (the first ``limit`` of them when given;
    empty for a successful step), the nodes named in ``order`` first, in that order, then
    the others in the simulation's order."""
    if result.success or result.fatal:
        return []
    claims = [
        simulation.claims[label] for label in result.step.claims if label in simulation.claims
    ]
    pending = [c for c in claims if c.status is None or c.status.allocation is None]
    explanations = []
    explained = 0
    rank = {name: place for place, name in enumerate(order)}
    for node in sorted(simulation.nodes, key=lambda n: rank.get(n.metadata.name or "", len(rank))):
        name = node.metadata.name or ""
        if name not in result.node_errors:
            continue
        if limit is not None and explained >= limit:
            break
        explained += 1
        devices = {d.id: d for p in simulation.allocator.pools_for(node) for d in p.devices}
        reports = simulation.allocator.examine(node, pending, simulation.state)
        explanations += [_explain(name, report, devices) for report in reports]
    return explanations


def _explain(
    node: str, report: RequestReport, devices: dict[DeviceID, PoolDevice]
) -> RequestExplanation:
    grouped: dict[Reason, list[Rejection]] = defaultdict(list)
    for rejection in report.rejections:
        grouped[rejection.reason].append(rejection)
    groups = [
        ReasonGroup(
            reason,
            len(items),
            [device_id_text(r.device) for r in items[:EXAMPLES_PER_GROUP]],
            _distinct_details(items),
        )
        for reason, items in sorted(grouped.items(), key=lambda kv: -len(kv[1]))
    ]
    explanation = RequestExplanation(
        node,
        report.claim,
        report.request,
        report.needed,
        len(report.candidates),
        groups,
        skipped_pools=report.skipped_pools,
    )
    explanation.hints = _hints(grouped, devices)
    return explanation


def _distinct_details(items: list[Rejection]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item.detail and item.detail not in seen:
            seen.append(item.detail)
    return seen[:EXAMPLES_PER_GROUP]


def _hints(
    grouped: dict[Reason, list[Rejection]], devices: dict[DeviceID, PoolDevice]
) -> list[str]:
    hints = []
    drivers = sorted({device_id[0] for device_id in devices})
    for reason in (Reason.CLASS_SELECTOR, Reason.REQUEST_SELECTOR):
        for detail in _distinct_details(grouped.get(reason, [])):
            driver = _DRIVER.search(detail)
            if driver and driver.group(1) not in drivers:
                hints.append(
                    f"no device here is published by driver '{driver.group(1)}' "
                    f"(drivers here: {', '.join(drivers) or 'none'}); NVIDIA MIG "
                    "devices come from driver gpu.nvidia.com with type == 'mig'"
                )
            threshold = _THRESHOLD.search(detail)
            if threshold:
                hint = _near_miss(threshold.groups(), grouped[reason], devices)
                if hint:
                    hints.append(hint)
    return hints


def _near_miss(
    match: tuple[str | None, ...], rejected: list[Rejection], devices: dict[DeviceID, PoolDevice]
) -> str | None:
    domain, name, limit_text = (m or "" for m in match)
    try:
        limit = Quantity.parse(limit_text)
    except ValueError:
        return None
    best: tuple[Quantity, PoolDevice] | None = None
    for rejection in rejected:
        device = devices.get(rejection.device)
        if device is None:
            continue
        key = name if domain == device.id[0] else f"{domain}/{name}"
        capacity = (device.device.capacity or {}).get(key)
        if capacity is None or capacity.value is None:
            continue
        if best is None or capacity.value > best[0]:
            best = (capacity.value, device)
    if best is None or best[0] >= limit:
        return None
    product = (best[1].device.attributes or {}).get("productName")
    label = f" ({product.string})" if product is not None and product.string else ""
    return (
        f"the largest {name} offered is {best[0]} on {device_id_text(best[1].id)}{label}, "
        f"which is less than {limit_text}: GPUs sold as 'N GB' publish their real size "
        "(an NVIDIA H100 80GB has 81559Mi), so ask for a little less"
    )


def render_text(explanations: list[RequestExplanation]) -> str:
    lines: list[str] = []
    for item in explanations:
        lines.append(
            f"node {item.node}: claim {item.claim}, request {item.request}: needs "
            f"{item.needed}, {item.candidates} candidate(s)"
        )
        lines += [f"    pool skipped: {p}" for p in item.skipped_pools]
        for group in item.groups:
            detail = f" — {'; '.join(group.details)}" if group.details else ""
            lines.append(
                f"    {group.count} {group.reason.value}{detail} (e.g. {', '.join(group.examples)})"
            )
        lines += [f"    hint: {hint}" for hint in item.hints]
    if explanations and all(e.candidates >= e.needed for e in explanations):
        lines.append(
            "every request has enough candidates on its own: together they do not "
            "fit (a constraint, or requests competing for the same devices)"
        )
    return "\n".join(lines)
