"""Why claims do not fit on a node: per request, candidates and grouped rejections, told
to whoever reads it.

Kubernetes only says ``cannot allocate all claims``. For every node tried, the allocator
judges each device against each (sub)request on its own (``Allocator.examine``); the
rejections are grouped by reason (so a 1,000-device fleet gives a few lines), with hints
for the classic mistakes: a capacity threshold just above what the hardware publishes (an
"80GB" H100 has ``memory: 81559Mi``, less than ``80Gi``), or a selector naming a driver that
never publishes devices, often a class name taken for a driver: NVIDIA's MIG devices are
driver ``gpu.nvidia.com`` with ``type == 'mig'``; there is no driver ``mig.nvidia.com``.
The hint derives that from the drivers published (``<type>.<domain>`` against a driver of
that domain), so it names no vendor itself.

The platform team reads all of it. A tenant reads the same explanation restricted to what
it is entitled to see (an :class:`Audience`):

* devices are named only where one of its entitled classes selects them (it sees those in
  its ResourceSlices); every other device is counted, never named (``5 class selector
  false ... (not named: outside your classes)``), and the near-miss hint looks only at
  devices it may see;
* claims are named only when they are its own, by the names it knows them by; a device
  another tenant or the host holds is ``held by a claim that is not yours``, without who;
* nodes are named only where it may see a device; the others are merged into one entry
  per request (``2 node(s) not named (none has a device of your classes)``);
* class names and selectors shown are those of its own requests' classes, driver names
  (infrastructure, not anyone's) are shown as they are.

Pure; used by :mod:`allot.simulation.explain` (``allot simulate --explain``, ``allot
doctor``), the scheduler (its ``CannotAllocate`` Events) and ``allot explain pod/NAME``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from allot.allocator.pools import PoolDevice
from allot.allocator.scheduling import CANNOT_ALLOCATE, Placement
from allot.allocator.search import Allocator, RequestReport
from allot.allocator.state import AllocatedState, DeviceID, device_id_text
from allot.allocator.trace import Reason, Rejection
from allot.api import core_v1_nodes as corev1
from allot.api import resource_v1 as resourceapi
from allot.api.quantity import Quantity

EXAMPLES_PER_GROUP = 3
EXPLAINED_NODES = 3
EVENT_MESSAGE_LIMIT = 1024
"""What an Event's message may hold (the API's ``NoteLengthLimit``; kube-scheduler
truncates its messages to it)."""
HELD_BY = "held by "
NOT_YOURS = "held by a claim that is not yours (not named)"
_THRESHOLD = re.compile(
    r"""capacity\[["']([^"']+)["']\]\.(\w+)\.(?:compareTo|isGreaterThan)\(quantity\(["']"""
    r"""([^"']+)["']\)\)"""
)
_DRIVER = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class Audience:
    """A reader who may see only part of the fleet (a tenant): the devices it may see by
    name, and the names it knows its claims by (None for a claim that is not its)."""

    devices: frozenset[DeviceID]
    claims: Callable[[str], str | None]


@dataclass
class ReasonGroup:
    reason: Reason
    count: int
    examples: list[str]
    details: list[str]
    hidden: int = 0
    """Devices of ``count`` the audience may not see by name."""


@dataclass
class RequestExplanation:
    node: str
    """The node; "" for nodes the audience may not see, merged (``nodes`` of them)."""
    claim: str
    request: str
    needed: int
    candidates: int
    groups: list[ReasonGroup] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    skipped_pools: list[str] = field(default_factory=list)
    nodes: int = 1


@dataclass
class Explained:
    """The explanations of the nodes looked at, and how many more failed nodes were not."""

    explanations: list[RequestExplanation]
    more: int = 0


def explain_placement(
    placement: Placement,
    nodes: list[corev1.Node],
    allocator: Allocator,
    state: AllocatedState,
    audience: Audience | None = None,
    limit: int = EXPLAINED_NODES,
) -> Explained:
    """Why ``placement`` found no node: its pending claims judged on the first ``limit``
    of ``nodes`` where their devices did not fit (``cannot allocate all claims``: not the
    nodes a pod filter refused), for an audience the nodes it may see first."""
    failed = [n for n in nodes if placement.reasons.get(n.metadata.name or "") == CANNOT_ALLOCATE]
    if audience is not None:
        failed.sort(key=lambda node: not _visible_node(allocator, node, audience))
    chosen = failed[:limit]
    explanations = explain_nodes(allocator, state, chosen, placement.pending, audience)
    return Explained(explanations, len(failed) - len(chosen))


def explain_nodes(
    allocator: Allocator,
    state: AllocatedState,
    nodes: list[corev1.Node],
    claims: list[resourceapi.ResourceClaim],
    audience: Audience | None = None,
) -> list[RequestExplanation]:
    """Every (sub)request of ``claims`` judged device by device on each of ``nodes``."""
    explanations = []
    drivers = sorted({driver for (driver, _), slices in allocator.by_pool.items() if slices})
    for node in nodes:
        devices = {d.id: d for p in allocator.pools_for(node) for d in p.devices}
        reports = allocator.examine(node, claims, state)
        name = node.metadata.name or ""
        explanations += [_explain(name, r, devices, audience, drivers) for r in reports]
    return _merged_hidden(explanations) if audience is not None else explanations


def _visible_node(allocator: Allocator, node: corev1.Node, audience: Audience) -> bool:
    return any(d.id in audience.devices for p in allocator.pools_for(node) for d in p.devices)


def _explain(
    node: str,
    report: RequestReport,
    devices: dict[DeviceID, PoolDevice],
    audience: Audience | None,
    fleet_drivers: list[str],
) -> RequestExplanation:
    grouped: dict[Reason, list[Rejection]] = defaultdict(list)
    for rejection in report.rejections:
        grouped[rejection.reason].append(rejection)
    groups = [
        _group(reason, items, audience)
        for reason, items in sorted(grouped.items(), key=lambda kv: -len(kv[1]))
    ]
    claim, skipped = report.claim, report.skipped_pools
    if audience is not None:
        if not any(device in audience.devices for device in devices):
            node = ""
        claim = audience.claims(report.claim) or "a claim"
        skipped = [p for p in skipped if _pool_visible(p, audience)]
    explanation = RequestExplanation(
        node, claim, report.request, report.needed, len(report.candidates), groups,
        skipped_pools=skipped,
    )  # fmt: skip
    explanation.hints = _hints(grouped, devices, audience, fleet_drivers)
    return explanation


def _group(reason: Reason, items: list[Rejection], audience: Audience | None) -> ReasonGroup:
    shown = [r for r in items if audience is None or r.device in audience.devices]
    details = _distinct_details(items)
    if audience is not None:
        details = list(dict.fromkeys(_detail_for(d, audience) for d in details))
    examples = [device_id_text(r.device) for r in shown[:EXAMPLES_PER_GROUP]]
    return ReasonGroup(reason, len(items), examples, details, len(items) - len(shown))


def _detail_for(detail: str, audience: Audience) -> str:
    """A rejection's detail as the audience may read it: a holder only if it is its own."""
    if not detail.startswith(HELD_BY):
        return detail
    own = audience.claims(detail.removeprefix(HELD_BY))
    return f"held by your claim {own}" if own else NOT_YOURS


def _pool_visible(skipped: str, audience: Audience) -> bool:
    """Whether a skipped pool (``driver/pool (why)``) holds a device the audience sees."""
    driver, _, pool = skipped.rpartition(" (")[0].partition("/")
    return any(d[0] == driver and d[1] == pool for d in audience.devices)


def _distinct_details(items: list[Rejection]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item.detail and item.detail not in seen:
            seen.append(item.detail)
    return seen[:EXAMPLES_PER_GROUP]


def _hints(
    grouped: dict[Reason, list[Rejection]],
    devices: dict[DeviceID, PoolDevice],
    audience: Audience | None,
    fleet_drivers: list[str],
) -> list[str]:
    hints = []
    for reason in (Reason.CLASS_SELECTOR, Reason.REQUEST_SELECTOR):
        for detail in _distinct_details(grouped.get(reason, [])):
            driver = _DRIVER.search(detail)
            if driver:
                hints += _driver_hint(driver.group(1), devices, fleet_drivers)
            threshold = _THRESHOLD.search(detail)
            if threshold:
                rejected = [
                    r for r in grouped[reason] if audience is None or r.device in audience.devices
                ]
                hint = _near_miss(threshold.groups(), rejected, devices)
                if hint:
                    hints.append(hint)
    return hints


def _driver_hint(
    driver: str, devices: dict[DeviceID, PoolDevice], fleet_drivers: list[str]
) -> list[str]:
    """A selector's driver that publishes no device: nowhere (a wrong name, such as the
    ``mig.nvidia.com`` that does not exist), or not on this node."""
    here = sorted({device_id[0] for device_id in devices})
    if driver in here:
        return []
    if driver not in fleet_drivers:
        published = ", ".join(fleet_drivers) or "none"
        return [
            f"no device publishes driver '{driver}' (drivers: {published})"
            + _type_hint(driver, fleet_drivers)
        ]
    published = ", ".join(here) or "none"
    return [f"no device here is published by driver '{driver}' (drivers here: {published})"]


def _type_hint(driver: str, fleet_drivers: list[str]) -> str:
    """``<type>.<domain>`` named as a driver where a driver of that domain publishes: the
    devices of that type are that driver's (a class name taken for a driver)."""
    device_type, _, domain = driver.partition(".")
    for published in fleet_drivers:
        if domain and (published == domain or published.endswith(f".{domain}")):
            return (
                f"; {device_type.upper()} devices are driver {published} with type == "
                f"'{device_type}'"
            )
    return ""


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
        "(an 80GB H100 has 81559Mi), so ask for a little less"
    )


def _merged_hidden(explanations: list[RequestExplanation]) -> list[RequestExplanation]:
    """The entries of nodes the audience may not see, one per (claim, request)."""
    shown = [e for e in explanations if e.node]
    merged: dict[tuple[str, str], RequestExplanation] = {}
    for item in (e for e in explanations if not e.node):
        key = (item.claim, item.request)
        into = merged.get(key)
        if into is None:
            merged[key] = RequestExplanation(
                "", item.claim, item.request, item.needed, item.candidates,
                [ReasonGroup(g.reason, g.count, [], list(g.details), g.hidden)
                 for g in item.groups],
                list(item.hints), list(item.skipped_pools),
            )  # fmt: skip
            continue
        into.nodes += 1
        into.candidates += item.candidates
        _merge_groups(into.groups, item.groups)
        into.hints += [h for h in item.hints if h not in into.hints]
    return shown + list(merged.values())


def _merge_groups(into: list[ReasonGroup], groups: list[ReasonGroup]) -> None:
    by_reason = {g.reason: g for g in into}
    for group in groups:
        found = by_reason.get(group.reason)
        if found is None:
            into.append(
                ReasonGroup(group.reason, group.count, [], list(group.details), group.hidden)
            )
            continue
        found.count += group.count
        found.hidden += group.hidden
        found.details += [d for d in group.details if d not in found.details]
        del found.details[EXAMPLES_PER_GROUP:]
    into.sort(key=lambda g: -g.count)


# ------------------------------------------------------------------ rendering
def render_text(explanations: list[RequestExplanation], more: int = 0) -> str:
    """The explanation as ``allot explain`` and ``allot doctor`` print it."""
    lines: list[str] = []
    for item in explanations:
        lines.append(
            f"{_where(item)}: claim {item.claim}, request {item.request}: needs "
            f"{item.needed}, {item.candidates} candidate(s)"
        )
        lines += [f"    {line}" for line in _details(item)]
    if more > 0:
        lines.append(f"... and {more} more node(s)")
    if explanations and all(e.candidates >= e.needed for e in explanations):
        lines.append(TOGETHER)
    return "\n".join(lines)


TOGETHER = (
    "every request has enough candidates on its own: together they do not "
    "fit (a constraint, or requests competing for the same devices)"
)


def event_messages(explained: Explained) -> list[str]:
    """One line per (claim, request), for Events: every node's verdicts, each message at
    most :data:`EVENT_MESSAGE_LIMIT` characters."""
    by_request: dict[tuple[str, str], list[RequestExplanation]] = {}
    for item in explained.explanations:
        by_request.setdefault((item.claim, item.request), []).append(item)
    messages = []
    for (claim, request), items in by_request.items():
        parts = [f"claim {claim}, request {request}: needs {items[0].needed}"]
        for item in items:
            head = f"{_where(item)}: {item.candidates} candidate(s)"
            parts.append(", ".join([head, *_details(item)]))
        if explained.more > 0:
            parts.append(f"{explained.more} more node(s) not looked at")
        messages.append(_truncated("; ".join(parts)))
    if explained.explanations and all(e.candidates >= e.needed for e in explained.explanations):
        messages.append(TOGETHER)
    return messages


def _where(item: RequestExplanation) -> str:
    if item.node:
        return f"node {item.node}"
    return f"{item.nodes} node(s) not named (none has a device of your classes)"


def _details(item: RequestExplanation) -> list[str]:
    lines = [f"pool skipped: {p}" for p in item.skipped_pools]
    for group in item.groups:
        detail = f" — {'; '.join(group.details)}" if group.details else ""
        lines.append(f"{group.count} {group.reason.value}{detail} ({_examples(group)})")
    return lines + [f"hint: {hint}" for hint in item.hints]


def _examples(group: ReasonGroup) -> str:
    hidden = f"{group.hidden} not named: outside your classes" if group.hidden else ""
    if not group.examples:
        return "not named: outside your classes" if group.hidden else "none named"
    named = f"e.g. {', '.join(group.examples)}"
    return f"{named}; {hidden}" if hidden else named


def _truncated(message: str) -> str:
    if len(message) <= EVENT_MESSAGE_LIMIT:
        return message
    return message[: EVENT_MESSAGE_LIMIT - 3] + "..."
