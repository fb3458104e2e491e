"""Rendering a trace simulation: hard quotas and fair sharing side by side, text or JSON.

Text: one row per tenant with, for each mode, device-hours held, mean and p95 wait,
the p95 wait of work inside the tenant's guarantee and preemptions; then utilization and
the overall figures. JSON: the same numbers per mode (seconds, hours, fractions; ``null``
where there were no waits). Called by ``allot simulate --trace`` and ``bench.traces``.
"""

from __future__ import annotations

from typing import Any

from allot.simulation.traces import ModeResult, TenantFigures, mean, p95


def tenant_json(figures: TenantFigures) -> dict[str, Any]:
    return {
        "deviceHours": round(figures.device_seconds / 3600, 2),
        "lostDeviceHours": round(figures.lost_seconds / 3600, 2),
        "meanWaitSeconds": _round(mean(figures.waits)),
        "p95WaitSeconds": _round(p95(figures.waits)),
        "p95WaitInsideGuaranteeSeconds": _round(p95(figures.inside_waits)),
        "waits": len(figures.waits),
        "waitsInsideGuarantee": len(figures.inside_waits),
        "preemptions": figures.preemptions,
        "completed": figures.completed,
        "queuedAtHorizon": figures.queued_at_end,
    }


def mode_json(result: ModeResult) -> dict[str, Any]:
    everyone = [w for t in result.tenants.values() for w in t.waits]
    inside = [w for t in result.tenants.values() for w in t.inside_waits]
    return {
        "utilization": round(result.utilization, 4),
        "deviceHoursAvailable": round(result.devices * result.horizon / 3600, 2),
        "p95WaitSeconds": _round(p95(everyone)),
        "p95WaitInsideGuaranteeSeconds": _round(p95(inside)),
        "preemptions": sum(t.preemptions for t in result.tenants.values()),
        "tenants": {name: tenant_json(f) for name, f in result.tenants.items()},
    }


def to_json(results: list[ModeResult], *, grace: float, cycle: float) -> dict[str, Any]:
    first = results[0]
    return {
        "horizonSeconds": first.horizon,
        "devices": first.devices,
        "reclaimGraceSeconds": grace,
        "cycleSeconds": cycle,
        "modes": {r.mode: mode_json(r) for r in results},
    }


def to_text(results: list[ModeResult], *, grace: float, cycle: float) -> str:
    columns = ["DEV-H", "MEAN-WAIT", "P95-WAIT", "P95-IN-GUAR", "PREEMPT"]
    rows = [["TENANT"] + [c for _ in results for c in [*columns, "|"]]]
    for tenant in results[0].tenants:
        row = [tenant]
        for result in results:
            figures = result.tenants[tenant]
            row += [
                f"{figures.device_seconds / 3600:.0f}",
                _seconds(mean(figures.waits)),
                _seconds(p95(figures.waits)),
                _seconds(p95(figures.inside_waits)),
                str(figures.preemptions),
                "|",
            ]
        rows.append(row)
    rows = [r[:-1] for r in rows]  # no bar after the last mode
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    group = len(columns) + 1
    titles = [" " * widths[0]]
    for index, result in enumerate(results):
        span = widths[1 + index * group : index * group + group]
        titles.append(result.mode.upper().ljust(sum(span) + 2 * (len(span) - 1)))
    lines = ["  ".join(titles).rstrip()]
    lines += ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    first = results[0]
    lines.append(
        f"\n{first.devices} devices, {first.horizon / 3600:g} h, reclaim grace {grace:g} s, "
        f"admission every {cycle:g} s"
    )
    for result in results:
        inside = [w for t in result.tenants.values() for w in t.inside_waits]
        lines.append(
            f"{result.mode}: utilization {result.utilization:.1%}; p95 wait inside a "
            f"guarantee {_seconds(p95(inside))}; preemptions "
            f"{sum(t.preemptions for t in result.tenants.values())}"
        )
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 3600:
        return f"{value / 3600:.1f}h"
    if value >= 60:
        return f"{value / 60:.1f}m"
    return f"{value:.0f}s"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
