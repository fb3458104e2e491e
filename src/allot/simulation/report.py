"""Rendering simulation results: the JSON document and a readable text table.

JSON: ``{"steps": [...], "summary": {"steps", "succeeded", "failed"}}`` with each
allocation exactly as the API stores ``status.allocation``. Text: one row per step, then
the explanation of failed steps when asked. Called by the ``simulate`` and ``explain``
commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from allot.simulation.runner import StepResult

if TYPE_CHECKING:  # the explanations' module is loaded only when there are some (issue 28)
    from allot.simulation.explain import RequestExplanation


def to_json(
    results: list[StepResult], explanations: dict[int, list[RequestExplanation]] | None = None
) -> dict[str, Any]:
    steps = []
    for result in results:
        record = result.to_json()
        if explanations is not None and result.step.index in explanations:
            from allot.simulation.explain import render_text

            record["explanation"] = render_text(explanations[result.step.index])
        steps.append(record)
    succeeded = sum(r.success for r in results)
    return {
        "steps": steps,
        "summary": {
            "steps": len(results),
            "succeeded": succeeded,
            "failed": len(results) - succeeded,
        },
    }


def to_text(
    results: list[StepResult], explanations: dict[int, list[RequestExplanation]] | None = None
) -> str:
    rows = [("STEP", "NAME", "RESULT", "NODE", "DEVICES / ERROR")]
    for result in results:
        if result.success:
            devices = ", ".join(
                f"{claim}:{r.request}={r.device}"
                for claim, allocation in result.results
                for r in (allocation.devices.results or [] if allocation.devices else [])
            )
            rows.append(
                (
                    str(result.step.index),
                    result.step.name,
                    "allocated",
                    result.node or "",
                    devices or _nothing_new(result),
                )
            )
        else:
            outcome = "error" if result.fatal else "pending"
            rows.append((str(result.step.index), result.step.name, outcome, "", result.error or ""))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "   ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row)).rstrip()
        for row in rows
    ]
    succeeded = sum(r.success for r in results)
    lines.append(f"{succeeded}/{len(results)} steps allocated")
    for index, items in (explanations or {}).items():
        if items:
            from allot.simulation.explain import render_text

            lines.append(f"\nstep {index} ({results[index].step.name}) is pending because:")
            lines.append(render_text(items))
    return "\n".join(lines)


def _nothing_new(result: StepResult) -> str:
    """The device column of a step that allocated nothing new."""
    if result.step.claims:
        return "(claims already allocated: " + ", ".join(result.step.claims) + ")"
    return "(no devices requested)"
