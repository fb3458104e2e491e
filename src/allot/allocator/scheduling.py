"""Placing one pod's claims: the node choice the scheduler, ``allot simulate`` and
``allot doctor`` share.

Per pod, as kube-scheduler's DynamicResources plugin with allot's placement policy: the
classes of the unallocated claims must exist (else the scheduler's
``request gpu: device class nope does not exist``); nodes are tried in the policy's order
(``allot.allocator.placement``); a node fails when the caller's node check names a problem
(taints, selectors, affinity: pod details stay with the caller), when an allocated claim's
node selector excludes it, when the allocator cannot place every unallocated claim there
together (an invalid pool is reported per node), or when the caller's check of the results
refuses them (the scheduler's GPU-memory quota). The first node that passes wins; when none
does, the answer carries each node's reason and the scheduler's message
(``0/3 nodes are available: 3 cannot allocate all claims.``).

Claims that fit nowhere are answered fast: a :class:`PlacementMemo` remembers, for one
allocator and one generation of the allocated state, which nodes are full (every device
exclusively allocated, nothing shareable, no invalid pool: what ``Allocator.is_full``
says) and which claim shapes did not fit on which node. Both answers are exactly what
``Allocator.allocate`` would say for that state; the memo forgets them when the state
changes. Pure: no I/O. Called by ``allot.controllers.scheduler`` and
``allot.simulation.runner``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from allot.allocator.errors import AllocationError, InvalidPoolsError
from allot.allocator.nodes import node_selector_matches
from allot.allocator.placement import order_nodes
from allot.allocator.requests import needs_in_use_devices
from allot.allocator.search import Allocator
from allot.allocator.state import AllocatedState
from allot.api import core_v1 as corev1
from allot.api import resource_v1 as resourceapi

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"

NodeCheck = Callable[[corev1.Node], str | None]
"""The caller's checks of a node before any claim is looked at: a reason, or None."""
ResultsCheck = Callable[[corev1.Node, list[resourceapi.AllocationResult]], str]
"""The caller's check of the results found on a node: a reason, or ""."""


@dataclass
class Checks:
    """What the caller adds to placement (the scheduler: pod filters, entitlement, quota)."""

    node: NodeCheck | None = None
    results: ResultsCheck | None = None
    refusal: Callable[[], str] | None = None
    """Why the claims may not be placed at all, asked after their classes ("" if none)."""
    observe: Callable[[float], None] | None = None
    """Told the seconds each ``allocate`` call took."""


@dataclass
class Placement:
    """The answer: the chosen node with one result per unallocated claim, or the message."""

    pending: list[resourceapi.ResourceClaim]
    node: corev1.Node | None = None
    results: list[resourceapi.AllocationResult] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    message: str = ""
    """Why no node was chosen, as the scheduler says it; "" with a node or an error."""
    error: AllocationError | None = None


class PlacementMemo:
    """Answers ``allocate`` gave, for one allocator and one allocated-state generation.

    Kept by a caller across pods; it empties itself when handed another allocator, another
    state or a state whose ``generation`` moved. An allocator changed in place must come
    with a new memo (or ``clear()``).
    """

    def __init__(self) -> None:
        self._key: tuple[int, int, int] = (0, 0, -1)
        self._owners: tuple[Allocator, AllocatedState] | None = None
        self.full: dict[str, bool] = {}
        self.failed: dict[tuple[str, str], str] = {}

    def clear(self) -> None:
        self._owners = None
        self._key = (0, 0, -1)
        self.full.clear()
        self.failed.clear()

    def bind(self, allocator: Allocator, state: AllocatedState) -> None:
        key = (id(allocator), id(state), state.generation)
        if key != self._key or self._owners is None:
            self.clear()
            self._key = key
            self._owners = (allocator, state)  # held so ids are not reused meanwhile

    def is_full(self, allocator: Allocator, node: corev1.Node, state: AllocatedState) -> bool:
        name = node.metadata.name or ""
        full = self.full.get(name)
        if full is None:
            full = self.full[name] = allocator.is_full(node, state)
        return full


def missing_class(claims: Sequence[resourceapi.ResourceClaim], allocator: Allocator) -> str:
    """The scheduler's message for the first request of an unallocated claim naming a
    class that does not exist ("" when every class exists)."""
    for claim in claims:
        if claim.status is not None and claim.status.allocation is not None:
            continue
        for request in (claim.spec.devices.requests if claim.spec.devices else None) or []:
            names = (
                [request.exactly.device_class_name]
                if request.exactly
                else [s.device_class_name for s in request.first_available or []]
            )
            for name in names:
                if name not in allocator.classes:
                    return f"request {request.name}: device class {name} does not exist"
    return ""


def scheduler_message(node_count: int, node_errors: dict[str, str]) -> str:
    """``0/3 nodes are available: 1 reason-a, 2 reason-b.`` (reasons sorted, as upstream)."""
    counts = Counter(node_errors.values())
    reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(counts.items()))
    return (
        f"0/{node_count} nodes are available: {reasons}."
        if reasons
        else f"0/{node_count} nodes are available."
    )


def place(
    claims: Sequence[resourceapi.ResourceClaim],
    nodes: Sequence[corev1.Node],
    allocator: Allocator,
    state: AllocatedState,
    *,
    policy: str = "first-fit",
    checks: Checks | None = None,
    memo: PlacementMemo | None = None,
) -> Placement:
    """Choose the node for a pod's ``claims`` (allocated ones included) among ``nodes``.

    Bad input (what ``Allocator.allocate`` raises :class:`AllocationError` for) stops the
    search and comes back as ``error``, with the nodes tried so far.
    """
    checks = checks or Checks()
    pending = [c for c in claims if c.status is None or c.status.allocation is None]
    answer = Placement(pending)
    answer.message = missing_class(claims, allocator) or (
        checks.refusal() if checks.refusal else ""
    )
    if answer.message:
        return answer
    memo = memo or PlacementMemo()
    memo.bind(allocator, state)
    try:
        _try_nodes(answer, claims, nodes, _Attempt(allocator, state, checks, memo, pending), policy)
    except AllocationError as err:
        answer.error = err
    return answer


def _try_nodes(
    answer: Placement,
    claims: Sequence[resourceapi.ResourceClaim],
    nodes: Sequence[corev1.Node],
    attempt: _Attempt,
    policy: str,
) -> None:
    allocator, state = attempt.allocator, attempt.state
    ordered = order_nodes(nodes, policy, lambda n: allocator.free_devices(n, state))
    selectors = [
        c.status.allocation.node_selector
        for c in claims
        if c.status and c.status.allocation and c.status.allocation.node_selector is not None
    ]
    for node in ordered:
        name = node.metadata.name or ""
        answer.tried.append(name)
        problem = attempt.checks.node(node) if attempt.checks.node else None
        if problem is None and any(not node_selector_matches(s, node) for s in selectors):
            problem = NOT_AVAILABLE
        if problem is None:
            problem, results = attempt.on(node)
            if problem is None:
                answer.node, answer.results = node, results
                return
        answer.reasons[name] = problem
    answer.message = scheduler_message(len(ordered), answer.reasons)


@dataclass
class _Attempt:
    """Trying one pod's unallocated claims on node after node."""

    allocator: Allocator
    state: AllocatedState
    checks: Checks
    memo: PlacementMemo
    pending: list[resourceapi.ResourceClaim]
    shape: str = ""
    may_skip_full: bool = False

    def __post_init__(self) -> None:
        self.may_skip_full = bool(self.pending) and not any(
            needs_in_use_devices(c) for c in self.pending
        )
        # What the allocator sees of the claims: their specs (names only label errors).
        self.shape = "\0".join(c.spec.model_dump_json() for c in self.pending)

    def on(self, node: corev1.Node) -> tuple[str | None, list[resourceapi.AllocationResult]]:
        """(None, results) when the claims fit on ``node``, else (the reason, [])."""
        if not self.pending:
            return None, []
        name = node.metadata.name or ""
        if self.may_skip_full and self.memo.is_full(self.allocator, node, self.state):
            return CANNOT_ALLOCATE, []  # what allocate would answer
        known = self.memo.failed.get((name, self.shape))
        if known is not None:
            return known, []
        started = time.perf_counter()
        try:
            results = self.allocator.allocate(node, self.pending, self.state)
        except InvalidPoolsError as err:
            self.memo.failed[(name, self.shape)] = str(err)
            return str(err), []
        finally:
            if self.checks.observe is not None:
                self.checks.observe(time.perf_counter() - started)
        if results is None:
            self.memo.failed[(name, self.shape)] = CANNOT_ALLOCATE
            return CANNOT_ALLOCATE, []
        problem = self.checks.results(node, results) if self.checks.results else ""
        return problem or None, results
