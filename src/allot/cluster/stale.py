"""Allocations that their class would no longer select: what fixing a catalogue leaves behind.

Kubernetes checks a claim's class and selectors once, at allocation; changing the class
later changes nothing for claims already allocated. So after a platform team fixes a
"whole GPU" class that also took MIG partitions, the tenant that got a slice through it
keeps the slice. ``stale_allocations`` re-evaluates every allocated device against the
selectors of the class its request names today and the request's own selectors, and
reports each device they no longer select (or that is no longer published), with the
selector that now says no. Admin-access results are skipped (admin access is granted
regardless of use). Pure; ``allot.cluster.doctor`` calls it.
"""

from __future__ import annotations

from typing import Any

from allot.api import resource_v1 as resourceapi
from allot.cel import CompileError, DeviceView, EvaluationError, SelectorCompiler

Obj = dict[str, Any]
DeviceKey = tuple[str, str, str]


def stale_allocations(
    classes: list[resourceapi.DeviceClass],
    slices: list[resourceapi.ResourceSlice],
    claims: list[resourceapi.ResourceClaim],
    compiler: SelectorCompiler | None = None,
) -> list[Obj]:
    compiler = compiler or SelectorCompiler()
    by_name = {c.metadata.name: c for c in classes}
    devices: dict[DeviceKey, DeviceView] = {
        (s.spec.driver or "", s.spec.pool.name or "", d.name or ""): DeviceView(
            s.spec.driver or "", d
        )
        for s in slices
        if s.spec.pool is not None
        for d in s.spec.devices or []
    }
    found = []
    for claim in claims:
        allocation = claim.status.allocation if claim.status else None
        results = allocation.devices.results if allocation and allocation.devices else None
        for result in results or []:
            if result.admin_access:
                continue
            class_name, selectors = _request_of(claim, result.request or "")
            key = (result.driver or "", result.pool or "", result.device or "")
            problem = _problem(compiler, by_name.get(class_name), selectors, devices.get(key))
            if problem is not None:
                found.append(
                    {
                        "claim": f"{claim.metadata.namespace}/{claim.metadata.name}",
                        "request": result.request,
                        "device": "/".join(key),
                        "deviceClass": class_name,
                        "reason": problem,
                    }
                )
    return found


def _request_of(claim: resourceapi.ResourceClaim, name: str) -> tuple[str, list[str]]:
    """The class and own selectors of request ``name`` (``parent/sub`` for a subrequest)."""
    parent, _, sub = name.partition("/")
    for request in (claim.spec.devices.requests if claim.spec.devices else None) or []:
        if request.name != parent:
            continue
        source: Any = request.exactly
        if sub:
            source = next((s for s in request.first_available or [] if s.name == sub), None)
        if source is None:
            break
        return source.device_class_name or "", _expressions(source.selectors)
    return "", []


def _expressions(selectors: list[resourceapi.DeviceSelector] | None) -> list[str]:
    return [s.cel.expression for s in selectors or [] if s.cel and s.cel.expression]


def _problem(
    compiler: SelectorCompiler,
    device_class: resourceapi.DeviceClass | None,
    request_selectors: list[str],
    view: DeviceView | None,
) -> str | None:
    if device_class is None:
        return "its device class no longer exists"
    if view is None:
        return "the device is no longer published"
    name = device_class.metadata.name
    for origin, expression in [
        *((f"class {name}", e) for e in _expressions(device_class.spec.selectors)),
        *(("the request", e) for e in request_selectors),
    ]:
        try:
            if not compiler.compile(expression, stored=True).matches(view):
                return f"{origin} no longer selects it: {expression}"
        except (CompileError, EvaluationError) as err:
            return f"{origin} cannot be evaluated on it: {err}"
    return None
