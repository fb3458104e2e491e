"""Allocations that the selectors which chose them would no longer select.

An allocation is decided once. When the platform team fixes a DeviceClass (a "whole GPU"
class that also took MIG partitions, say), claims allocated before the fix keep their
devices: a tenant goes on holding a MIG slice through a whole-GPU class. This module
re-checks each allocated device of each claim against the request's class as it is now and
the request's own selectors, and says which selector (and which ``&&`` clause of it) the
device no longer satisfies. A request whose class is gone is reported too; a device no
longer published cannot be judged and is left out. Pure; used by ``allot doctor``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from allot.api import resource_v1 as resourceapi
from allot.cel import CompileError, DeviceView, EvaluationError, SelectorCompiler
from allot.lint.catalogue import split_conjunction

DeviceKey = tuple[str, str, str]  # driver, pool, device


@dataclass
class StaleAllocation:
    claim: str
    request: str
    device: str
    device_class: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {
            "claim": self.claim,
            "request": self.request,
            "device": self.device,
            "class": self.device_class,
            "reason": self.reason,
        }


@dataclass
class _Request:
    device_class: str
    selectors: list[str]


def stale_allocations(
    claims: list[resourceapi.ResourceClaim],
    classes: list[resourceapi.DeviceClass],
    views: Mapping[DeviceKey, DeviceView],
    compiler: SelectorCompiler | None = None,
) -> list[StaleAllocation]:
    """``views``: the published devices' CEL views by (driver, pool, device), as a DRA
    index holds them; ``compiler`` should be the one their results were cached with."""
    checker = _Checker(classes, compiler or SelectorCompiler(), views)
    found = []
    for claim in claims:
        allocation = claim.status.allocation if claim.status else None
        if allocation is None or allocation.devices is None:
            continue
        requests = _requests(claim)
        label = f"{claim.metadata.namespace}/{claim.metadata.name}"
        for result in allocation.devices.results or []:
            request = requests.get(result.request or "")
            key = (result.driver or "", result.pool or "", result.device or "")
            reason = checker.reason(request, key) if request else None
            if request is not None and reason is not None:
                found.append(
                    StaleAllocation(
                        label, result.request or "", "/".join(key), request.device_class, reason
                    )
                )
    return found


def _requests(claim: resourceapi.ResourceClaim) -> dict[str, _Request]:
    """Result request names (``req`` or ``req/subreq``) -> class and own selectors."""
    found = {}
    devices = claim.spec.devices
    for request in (devices.requests if devices else None) or []:
        if request.exactly is not None:
            found[request.name or ""] = _Request(
                request.exactly.device_class_name or "", _expressions(request.exactly.selectors)
            )
        for sub in request.first_available or []:
            found[f"{request.name}/{sub.name}"] = _Request(
                sub.device_class_name or "", _expressions(sub.selectors)
            )
    return found


def _expressions(selectors: list[resourceapi.DeviceSelector] | None) -> list[str]:
    return [s.cel.expression for s in selectors or [] if s.cel and s.cel.expression]


class _Checker:
    def __init__(
        self,
        classes: list[resourceapi.DeviceClass],
        compiler: SelectorCompiler,
        views: Mapping[DeviceKey, DeviceView],
    ) -> None:
        self.classes = {c.metadata.name or "": c for c in classes}
        self.compiler = compiler
        self.views = views

    def reason(self, request: _Request, key: DeviceKey) -> str | None:
        """Why the device no longer fits the request, or None when it still does."""
        device_class = self.classes.get(request.device_class)
        if device_class is None:
            return f"class {request.device_class} no longer exists"
        view = self.views.get(key)
        if view is None:
            return None
        class_selectors = _expressions(device_class.spec.selectors)
        for owner, expressions in (
            (f"class {request.device_class}", class_selectors),
            ("the request", request.selectors),
        ):
            for expression in expressions:
                failure = self._failure(expression, view)
                if failure is not None:
                    return f"{owner}'s selector {failure}"
        return None

    def _failure(self, expression: str, view: DeviceView) -> str | None:
        try:
            if self.compiler.compile(expression, stored=True).matches(view):
                return None
        except CompileError as err:
            return f"does not compile: {err.detail}"
        except EvaluationError as err:
            return f"fails on the device: {err}"
        return f"is false for the device: {self._false_clauses(expression, view)}"

    def _false_clauses(self, expression: str, view: DeviceView) -> str:
        """The ``&&`` clauses that are false (the whole expression when it has one)."""
        clauses = [c.strip() for c in split_conjunction(expression)]
        false = []
        for clause in clauses:
            try:
                if not self.compiler.compile(clause, stored=True).matches(view):
                    false.append(clause)
            except (CompileError, EvaluationError):
                return " ".join(expression.split())
        return " && ".join(false) if false and len(clauses) > 1 else " ".join(expression.split())
