"""Why a step of a scenario did not fit: :mod:`allot.allocator.explain` on the simulation.

For every node the step tried (the first ``limit`` of them when given), the allocator judges
each device against each request of the step's pending claims; the explanation groups the
rejections by reason and adds the hints. Used by ``allot simulate --explain``, ``allot
explain SCENARIO`` and ``allot doctor``, which print :func:`render_text`.
"""

from __future__ import annotations

from allot.allocator.explain import RequestExplanation, explain_nodes, render_text
from allot.simulation.runner import Simulation, StepResult

__all__ = ["RequestExplanation", "explain_step", "render_text"]


def explain_step(
    simulation: Simulation, result: StepResult, limit: int | None = None
) -> list[RequestExplanation]:
    """Explanations for every node the step tried (the first ``limit`` of them when given;
    empty for a successful step)."""
    if result.success or result.fatal:
        return []
    claims = [
        simulation.claims[label] for label in result.step.claims if label in simulation.claims
    ]
    pending = [c for c in claims if c.status is None or c.status.allocation is None]
    nodes = [n for n in simulation.nodes if (n.metadata.name or "") in result.node_errors]
    if limit is not None:
        nodes = nodes[:limit]
    return explain_nodes(simulation.allocator, simulation.state, nodes, pending)
