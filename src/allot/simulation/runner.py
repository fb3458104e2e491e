"""Running a scenario's steps the way kube-scheduler handles one pod at a time.

For each step: resolve its claims (a missing claim or class leaves the step unschedulable,
as the scheduler's PreFilter does), then try candidate nodes in name order and take the
first where the allocator places all unallocated claims together; record the allocation as
in use for later steps (admin-access results do not count; shared devices count their
consumed capacity). The step's error reads like the scheduler's
(``0/3 nodes are available: 3 cannot allocate all claims.``). Share IDs come from a seeded
generator so runs are repeatable. Pure: no I/O.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field

from allot.allocator import AllocatedState, AllocationError, Allocator, InvalidPoolsError
from allot.allocator.nodes import node_selector_matches
from allot.allocator.placement import check_placement, order_nodes
from allot.allocator.requests import claim_label, needs_in_use_devices
from allot.api import core_v1 as corev1
from allot.api import resource_v1 as resourceapi
from allot.simulation.scenario import Scenario, Step

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"


@dataclass
class StepResult:
    step: Step
    success: bool = False
    node: str | None = None
    nodes_tried: list[str] = field(default_factory=list)
    results: list[tuple[str, resourceapi.AllocationResult]] = field(default_factory=list)
    error: str | None = None
    fatal: bool = False
    node_errors: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "index": self.step.index,
            "name": self.step.name,
            "claims": self.step.claims,
            "success": self.success,
            "node": self.node,
            "nodesTried": self.nodes_tried,
            "results": [{"claim": c, "allocation": a.to_wire()} for c, a in self.results],
            "error": self.error,
            "fatal": self.fatal,
            "nodeErrors": self.node_errors,
        }


class Simulation:
    """Holds the evolving cluster state of one scenario run."""

    def __init__(self, scenario: Scenario, *, seed: int = 0, placement: str = "first-fit") -> None:
        self.scenario = scenario
        self.placement = check_placement(placement)
        rng = random.Random(seed)
        self.allocator = Allocator(
            scenario.slices,
            scenario.classes,
            features=scenario.features,
            new_share_id=lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        )
        self.claims = {claim_label(c): c.model_copy(deep=True) for c in scenario.claims}
        self.state = AllocatedState()
        for label, claim in self.claims.items():
            if claim.status is not None and claim.status.allocation is not None:
                self._record(label, claim.status.allocation)
        self.nodes = _candidate_nodes(scenario)

    def _record(self, label: str, allocation: resourceapi.AllocationResult) -> None:
        self.state.add_allocation(
            label, allocation, consumable_capacity=self.scenario.features.dra_consumable_capacity
        )

    def run(self) -> list[StepResult]:
        return [self.run_step(step) for step in self.scenario.steps]

    def run_step(self, step: Step) -> StepResult:
        result = StepResult(step)
        claims, problem = self._resolve(step)
        if problem:
            result.error = problem
            return result
        nodes = (
            order_nodes(self.nodes, self.placement, self._free_devices)
            if step.node is None
            else [n for n in self.nodes if n.metadata.name == step.node]
        )
        if step.node is not None and not nodes:
            result.error = f'node "{step.node}" not found'
            return result
        pending = [c for c in claims if c.status is None or c.status.allocation is None]
        may_skip_full = bool(pending) and not any(needs_in_use_devices(c) for c in pending)
        for node in nodes:
            name = node.metadata.name or ""
            result.nodes_tried.append(name)
            if not self._allocated_claims_fit(claims, node):
                result.node_errors[name] = NOT_AVAILABLE
                continue
            if may_skip_full and self.allocator.is_full(node, self.state):
                result.node_errors[name] = CANNOT_ALLOCATE  # what allocate would answer
                continue
            try:
                allocations = self.allocator.allocate(node, pending, self.state)
            except InvalidPoolsError as err:
                result.node_errors[name] = str(err)
                continue
            except AllocationError as err:
                result.error, result.fatal = str(err), True
                return result
            if allocations is None:
                result.node_errors[name] = CANNOT_ALLOCATE
                continue
            self._commit(result, name, pending, allocations)
            return result
        result.error = scheduler_message(len(nodes), result.node_errors)
        return result

    def _free_devices(self, node: corev1.Node) -> int:
        return self.allocator.free_devices(node, self.state)

    def _resolve(self, step: Step) -> tuple[list[resourceapi.ResourceClaim], str | None]:
        claims = []
        for label in step.claims:
            claim = self.claims.get(label)
            if claim is None:
                _, _, name = label.partition("/")
                return [], f'resourceclaim.resource.k8s.io "{name}" not found'
            claims.append(claim)
        for claim in claims:
            for request in (claim.spec.devices.requests if claim.spec.devices else None) or []:
                names = (
                    [request.exactly.device_class_name]
                    if request.exactly
                    else [s.device_class_name for s in request.first_available or []]
                )
                for class_name in names:
                    if not any(c.metadata.name == class_name for c in self.scenario.classes):
                        return (
                            [],
                            f"request {request.name}: device class {class_name} does not exist",
                        )
        return claims, None

    @staticmethod
    def _allocated_claims_fit(claims: list[resourceapi.ResourceClaim], node: corev1.Node) -> bool:
        for claim in claims:
            allocation = claim.status.allocation if claim.status else None
            if (
                allocation is not None
                and allocation.node_selector is not None
                and not node_selector_matches(allocation.node_selector, node)
            ):
                return False
        return True

    def _commit(
        self,
        result: StepResult,
        node: str,
        claims: list[resourceapi.ResourceClaim],
        allocations: list[resourceapi.AllocationResult],
    ) -> None:
        result.success, result.node = True, node
        for claim, allocation in zip(claims, allocations, strict=True):
            label = claim_label(claim)
            claim.status = resourceapi.ResourceClaimStatus(allocation=allocation)
            self._record(label, allocation)
            result.results.append((label, allocation))


def scheduler_message(node_count: int, node_errors: dict[str, str]) -> str:
    """``0/3 nodes are available: 1 reason-a, 2 reason-b.`` (reasons sorted, as upstream)."""
    counts = Counter(node_errors.values())
    reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(counts.items()))
    return (
        f"0/{node_count} nodes are available: {reasons}."
        if reasons
        else f"0/{node_count} nodes are available."
    )


def _candidate_nodes(scenario: Scenario) -> list[corev1.Node]:
    if scenario.nodes:
        return sorted(scenario.nodes, key=lambda n: n.metadata.name or "")
    names: set[str] = set()
    for slice_ in scenario.slices:
        if slice_.spec.node_name:
            names.add(slice_.spec.node_name)
        names.update(d.node_name for d in slice_.spec.devices or [] if d.node_name)
    return [corev1.Node.model_validate({"metadata": {"name": n}}) for n in sorted(names)]
