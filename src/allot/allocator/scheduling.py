"""Placing one pod's claims: the node choice the scheduler, ``allot simulate`` and
``allot doctor`` share.

Per pod, as kube-scheduler's DynamicResources plugin with allot's placement policy: its
PreFilter checks the unallocated claims' requests first (:func:`prefilter`: a missing
class, ``request gpu: device class nope does not exist``, leaves the pod unschedulable, an
empty class name is fatal); nodes are tried in the policy's order
(``allot.allocator.placement``); a node fails when the caller's node check names a problem
(taints, selectors, affinity: pod details stay with the caller), when an allocated claim's
node selector excludes it, when the allocator cannot place every unallocated claim there
together (an invalid pool is reported per node), or when the caller's check of the results
refuses them (the scheduler's GPU-memory quota). The first node that passes wins; when none
does, the answer carries each node's reason and the scheduler's message
(``0/3 nodes are available: 3 cannot allocate all claims.``).

Claims that fit nowhere are answered fast: a :class:`PlacementMemo` remembers which
nodes are full (every device exclusively allocated, nothing shareable, no invalid pool:
what ``Allocator.is_full`` says; when every node is, a claim that cannot use in-use
devices gets its answer without a look at any node) and which claim shapes (their specs)
did not fit on which node, each for as long as what it depended on is unchanged, so the
answers are exactly what ``Allocator.allocate`` would give. Pure: no I/O. Called by
``allot.controllers.scheduler`` and ``allot.simulation.runner``.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from allot.allocator.errors import AllocationError, InvalidPoolsError
from allot.allocator.nodes import node_selector_matches
from allot.allocator.placement import order_nodes
from allot.allocator.pools import NodePools
from allot.allocator.requests import claim_label, needs_in_use_devices
from allot.allocator.search import Allocator
from allot.allocator.state import AllocatedState, DeviceID
from allot.api import core_v1_nodes as corev1
from allot.api import resource_v1 as resourceapi

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"

_Fingerprint = tuple[str, frozenset[object]]
"""What an answer on a node depended on: ("taken", its allocated devices), or
("generation", {the state's generation}) where more of the state counts."""

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


_NO_CHECKS = Checks()


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
    """Answers ``allocate`` gave, kept for one allocator and one allocated state.

    Full nodes are remembered while the state lives (it only grows), nodes with room
    until its ``generation`` moves. A claim shape that
    did not fit on a node is remembered with what the answer depended on: for a node
    whose devices are neither shareable nor consume counters, the set of its devices
    already allocated (the only part of the state the search reads there; the search
    tries every combination of free devices, so with those and more allocated it fails
    again), else the state's generation. A caller keeps one across pods; handed another
    allocator or state it starts afresh. Node names must name the same node for its
    life, and an allocator changed in place needs ``clear()``.
    """

    def __init__(self) -> None:
        self._owners: tuple[Allocator, AllocatedState] | None = None
        self._generation = -1
        self._full: dict[str, bool] = {}
        self._taken: dict[str, _Fingerprint] = {}
        self._devices: dict[str, frozenset[DeviceID] | None] = {}
        self._pools: dict[str, NodePools] = {}
        self._failed: dict[tuple[str, str], tuple[_Fingerprint, str]] = {}
        self._ordered: dict[tuple[int, str], tuple[Sequence[corev1.Node], list[corev1.Node]]] = {}
        self._all_full: dict[int, tuple[list[str], dict[str, str], str] | None] = {}
        # per ordering (by id): the ordering, its policy and the names of its leading
        # full nodes (a prefix that only grows while the state lives)
        self._prefix: dict[int, tuple[list[corev1.Node], str, list[str]]] = {}

    def clear(self) -> None:
        self._owners = None
        self._generation = -1
        for memo in (self._full, self._taken, self._devices, self._failed, self._pools):
            memo.clear()
        self._ordered.clear()
        self._all_full.clear()
        self._prefix.clear()

    def bind(self, allocator: Allocator, state: AllocatedState) -> None:
        owners = self._owners
        if owners is None or owners[0] is not allocator or owners[1] is not state:
            self.clear()
            self._owners = (allocator, state)
        if state.generation != self._generation:
            self._generation = state.generation
            # A state only grows (``add_allocation``; freeing makes a new state), so a
            # node found full stays full: only the others are judged again.
            self._full = {name: True for name, full in self._full.items() if full}
            self._taken.clear()
            # name order does not depend on the state; the other orders are made again
            self._ordered = {k: v for k, v in self._ordered.items() if k[1] == "first-fit"}
            self._prefix = {k: v for k, v in self._prefix.items() if v[1] == "first-fit"}
            self._all_full.clear()

    def is_full(self, node: corev1.Node) -> bool:
        """``Allocator.is_full`` for the bound allocator and state."""
        name = node.metadata.name or ""
        full = self._full.get(name)
        if full is None:
            assert self._owners is not None
            state = self._owners[1]
            full = self._full[name] = self._index(node).is_full(state.allocated_devices)
        return full

    def _index(self, node: corev1.Node) -> NodePools:
        name = node.metadata.name or ""
        index = self._pools.get(name)
        if index is None:
            assert self._owners is not None
            index = self._pools[name] = self._owners[0].node_pools(node)
        return index

    def ordered(self, nodes: Sequence[corev1.Node], policy: str) -> list[corev1.Node]:
        """``nodes`` in the policy's order (the same sequence, unchanged, gets the same)."""
        known = self._ordered.get((id(nodes), policy))
        if known is not None and known[0] is nodes and len(known[1]) == len(nodes):
            return known[1]
        assert self._owners is not None
        allocator, state = self._owners
        ordered = order_nodes(nodes, policy, lambda n: allocator.free_devices(n, state))
        self._ordered[(id(nodes), policy)] = (nodes, ordered)
        return ordered

    def full_prefix(self, ordered: list[corev1.Node], policy: str) -> list[str]:
        """The names of the leading nodes of ``ordered`` (made by :meth:`ordered` for
        ``policy``) that are full: first-fit fills nodes in order, so a pod need not try
        the full ones one by one (they stay full while the state lives)."""
        known = self._prefix.get(id(ordered))
        if known is None or known[0] is not ordered:
            known = self._prefix[id(ordered)] = (ordered, policy, [])
        names = known[2]
        while len(names) < len(ordered) and self.is_full(ordered[len(names)]):
            names.append(ordered[len(names)].metadata.name or "")
        return names

    def all_full(
        self, ordered: list[corev1.Node], policy: str
    ) -> tuple[list[str], dict[str, str], str] | None:
        """When every node of ``ordered`` (made by :meth:`ordered` for ``policy``) is full:
        the nodes tried, their reasons and the message, as trying them one by one finds
        them; else None. Asks only about the first node after the known full prefix."""
        if id(ordered) not in self._all_full:
            every = None
            full = self.full_prefix(ordered, policy)
            if len(full) == len(ordered):
                reasons = dict.fromkeys(full, CANNOT_ALLOCATE)
                every = (list(full), reasons, scheduler_message(len(full), reasons))
            self._all_full[id(ordered)] = every
        return self._all_full[id(ordered)]

    def failure(self, node: corev1.Node, shape: str) -> str | None:
        """The reason ``shape`` did not fit on ``node``, if that still holds."""
        known = self._failed.get((node.metadata.name or "", shape))
        if known is None:
            return None
        then, now = known[0], self._fingerprint(node)
        if then == now or (then[0] == now[0] == "taken" and then[1] <= now[1]):
            return known[1]
        return None

    def remember(self, node: corev1.Node, shape: str, reason: str) -> None:
        self._failed[(node.metadata.name or "", shape)] = (self._fingerprint(node), reason)

    def _fingerprint(self, node: corev1.Node) -> _Fingerprint:
        name = node.metadata.name or ""
        taken = self._taken.get(name)
        if taken is None:
            assert self._owners is not None
            state = self._owners[1]
            if name not in self._devices:
                self._devices[name] = _plain_devices(self._index(node))
            devices = self._devices[name]
            taken = self._taken[name] = (
                ("generation", frozenset([state.generation]))
                if devices is None
                else ("taken", devices & state.allocated_devices)
            )
        return taken


def _plain_devices(index: NodePools) -> frozenset[DeviceID] | None:
    """The node's candidate devices when none is shareable or consumes counters (then the
    search reads only which of them are allocated), else None."""
    if index.has_shareable or any(d.device.consumes_counters for _, d in index.candidates):
        return None
    return index.device_ids


def prefilter(claims: Sequence[resourceapi.ResourceClaim], allocator: Allocator) -> str:
    """kube-scheduler's PreFilter checks of the unallocated claims' requests, in its order:
    a request without a class name is fatal (:class:`AllocationError`
    ``request r: unsupported request type``); a class that does not exist, or subrequests
    while DRAPrioritizedList is off, make the pod unschedulable (the message returned);
    "" when every request passes."""
    for claim in claims:
        if claim.status is not None and claim.status.allocation is not None:
            continue
        for request in (claim.spec.devices.requests if claim.spec.devices else None) or []:
            name = request.name or ""
            if request.exactly is not None:
                problem = _class_problem(allocator, request.exactly.device_class_name, name)
            elif request.first_available:
                if not allocator.features.dra_prioritized_list:
                    return (
                        f"resource claim {claim_label(claim)}, request {name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                problems = (
                    _class_problem(allocator, sub.device_class_name, f"{name}/{sub.name or ''}")
                    for sub in request.first_available
                )
                problem = next((p for p in problems if p), "")
            else:
                continue  # the allocator refuses it (``unsupported request type``)
            if problem:
                return problem
    return ""


def _class_problem(allocator: Allocator, class_name: str | None, request: str) -> str:
    if not class_name:
        raise AllocationError(f"request {request}: unsupported request type")
    if class_name not in allocator.classes:
        return f"request {request}: device class {class_name} does not exist"
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
    checks = checks or _NO_CHECKS
    pending = [c for c in claims if c.status is None or c.status.allocation is None]
    answer = Placement(pending)
    try:
        answer.message = prefilter(claims, allocator) or (
            checks.refusal() if checks.refusal else ""
        )
        if answer.message:
            return answer
        memo = memo or PlacementMemo()
        memo.bind(allocator, state)
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
    ordered = attempt.memo.ordered(nodes, policy)
    selectors = [
        c.status.allocation.node_selector
        for c in claims
        if c.status and c.status.allocation and c.status.allocation.node_selector is not None
    ]
    if attempt.may_skip_full and not selectors and attempt.checks.node is None:
        every = attempt.memo.all_full(ordered, policy)
        if every is not None:  # what the loop below would find, node by node
            answer.tried, answer.reasons, answer.message = list(every[0]), dict(every[1]), every[2]
            return
    start = _skip_full(answer, ordered, selectors, attempt, policy)
    for node in itertools.islice(ordered, start, None):
        name = node.metadata.name or ""
        answer.tried.append(name)
        problem = _node_problem(node, attempt.checks, selectors)
        if problem is None:
            problem, results = attempt.on(node)
            if problem is None:
                answer.node, answer.results = node, results
                return
        answer.reasons[name] = problem
    answer.message = scheduler_message(len(ordered), answer.reasons)


def _skip_full(
    answer: Placement,
    ordered: list[corev1.Node],
    selectors: list[corev1.NodeSelector],
    attempt: _Attempt,
    policy: str,
) -> int:
    """Record the leading full nodes of ``ordered`` as the loop over nodes would (the node
    checks and claims' node selectors first, else "cannot allocate"), without asking the
    allocator about each; how many they are."""
    if not attempt.may_skip_full:
        return 0
    full = attempt.memo.full_prefix(ordered, policy)
    if attempt.checks.node is None and not selectors:
        answer.tried.extend(full)
        answer.reasons.update(dict.fromkeys(full, CANNOT_ALLOCATE))
        return len(full)
    for node in itertools.islice(ordered, len(full)):
        name = node.metadata.name or ""
        answer.tried.append(name)
        answer.reasons[name] = _node_problem(node, attempt.checks, selectors) or CANNOT_ALLOCATE
    return len(full)


def _node_problem(
    node: corev1.Node, checks: Checks, selectors: list[corev1.NodeSelector]
) -> str | None:
    """Why ``node`` is refused before its devices are looked at: the caller's node check,
    then the node selectors of claims already allocated; None when neither refuses it."""
    problem = checks.node(node) if checks.node else None
    if problem is None and any(not node_selector_matches(s, node) for s in selectors):
        return NOT_AVAILABLE
    return problem


@dataclass
class _Attempt:
    """Trying one pod's unallocated claims on node after node."""

    allocator: Allocator
    state: AllocatedState
    checks: Checks
    memo: PlacementMemo
    pending: list[resourceapi.ResourceClaim]
    may_skip_full: bool = False
    _shape: str | None = None

    def __post_init__(self) -> None:
        self.may_skip_full = bool(self.pending) and not any(
            needs_in_use_devices(c) for c in self.pending
        )

    @property
    def shape(self) -> str:
        """What the allocator sees of the claims: their specs (names only label errors)."""
        if self._shape is None:
            self._shape = "\0".join(c.spec.model_dump_json() for c in self.pending)
        return self._shape

    def on(self, node: corev1.Node) -> tuple[str | None, list[resourceapi.AllocationResult]]:
        """(None, results) when the claims fit on ``node``, else (the reason, [])."""
        if not self.pending:
            return None, []
        if self.may_skip_full and self.memo.is_full(node):
            return CANNOT_ALLOCATE, []  # what allocate would answer
        known = self.memo.failure(node, self.shape)
        if known is not None:
            return known, []
        started = time.perf_counter()
        try:
            results = self.allocator.allocate(node, self.pending, self.state)
        except InvalidPoolsError as err:
            self.memo.remember(node, self.shape, str(err))
            return str(err), []
        finally:
            if self.checks.observe is not None:
                self.checks.observe(time.perf_counter() - started)
        if results is None:
            self.memo.remember(node, self.shape, CANNOT_ALLOCATE)
            return CANNOT_ALLOCATE, []
        problem = self.checks.results(node, results) if self.checks.results else ""
        return problem or None, results
