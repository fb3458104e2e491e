"""Why a step of a scenario did not fit: :mod:`allot.allocator.explain` on the simulation.

For every node the step tried (the first ``limit`` of them when given, in the caller's
``order``), the allocator judges each device against each request of the step's pending
claims; the explanation groups the rejections by reason and adds the hints. Used by
``allot simulate --explain``, ``allot explain SCENARIO`` and ``allot doctor``, which print
:func:`render_text`.
"""

from __future__ import annotations

from collections.abc import Sequence

from allot.allocator.explain import RequestExplanation, explain_nodes, render_text
from allot.simulation.runner import Simulation, StepResult

__all__ = ["RequestExplanation", "explain_step", "render_text"]


def explain_step(
    simulation: Simulation,
    result: StepResult,
    limit: int | None = None,
    order: Sequence[str] = (),
) -> list[RequestExplanation]:
    """Explanations for every node the step tried (empty for a successful step): the
    nodes named in ``order`` first, in that order, then the rest in the simulation's
    order; the first ``limit`` of them when given."""
    if result.success or result.fatal:
        return []
    claims = [
        simulation.claims[label] for label in result.step.claims if label in simulation.claims
    ]
    pending = [c for c in claims if c.status is None or c.status.allocation is None]
    rank = {name: place for place, name in enumerate(order)}
    tried = [n for n in simulation.nodes if (n.metadata.name or "") in result.node_errors]
    nodes = sorted(tried, key=lambda n: rank.get(n.metadata.name or "", len(rank)))
    if limit is not None:
        nodes = nodes[:limit]
    return explain_nodes(simulation.allocator, simulation.state, nodes, pending)
