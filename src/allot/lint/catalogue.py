"""Linting a DeviceClass catalogue against the ResourceSlices a cluster really publishes.

A class that matches nothing makes every tenant claim through it wait forever, silently.
This module evaluates each class on every published device and reports:

- ``no-match``: the class matches no device, with the reason (a driver that is never
  published, an attribute or value no device has) and the nearest devices;
- ``selector-error``: the selector fails at run time on some devices (which would abort
  allocation in Kubernetes);
- ``shared-devices``: classes of different tenants (by a label) can take the same devices;
- ``whole-matches-partitions``: a class that takes whole GPUs also takes MIG partitions.

Where it can, a finding carries a corrected selector, checked against the same devices.
Given a DRA index (:mod:`allot.dra`) that holds the slices and classes, it reads the
index's device views and class verdicts instead of building and evaluating them again.
Pure: callers pass decoded objects. Used by ``allot lint``, ``allot doctor`` and the API
server's warnings on DeviceClass and Tenant writes (``allot.registry.classwarnings``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from allot.api import resource_v1 as resourceapi
from allot.cel import CompiledSelector, CompileError, DeviceView, EvaluationError, SelectorCompiler
from allot.dra import DraIndex
from allot.vendors import class_types, facts_for

TENANT_LABEL = "gpu.platform/tenant"
SUGGESTION_NAMES = frozenset({"type"})
"""Attributes the suggested selectors read besides the class's own (for grouping devices)."""
_DRIVER = re.compile(r"""device\.driver\s*==\s*(["'])([^"']+)\1""")
_ATTRIBUTE = re.compile(
    r"""device\.attributes\[(["'])([^"']+)\1\](?:\.(\w+)|\[(["'])(\w+)\4\])"""
    r"""(?:\s*==\s*(["'])([^"']*)\6)?"""
)


@dataclass
class Finding:
    code: str
    device_class: str
    message: str
    details: list[str] = field(default_factory=list)
    suggestion: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "class": self.device_class,
            "message": self.message,
            "details": self.details,
            "suggestion": self.suggestion,
        }


@dataclass
class ClassMatch:
    device_class: resourceapi.DeviceClass
    matched: list[DeviceView]
    errors: list[tuple[DeviceView, str]]


def device_views(slices: list[resourceapi.ResourceSlice]) -> list[DeviceView]:
    return [DeviceView(s.spec.driver or "", d) for s in slices for d in s.spec.devices or []]


SliceGroup = tuple[str, list[tuple[str, DeviceView]]]  # a slice's name, its devices' views


def _slice_groups(slices: list[resourceapi.ResourceSlice], index: DraIndex) -> list[SliceGroup]:
    """Each slice's device views in order: the index's, for the slices it holds."""
    groups = []
    for slice_ in slices:
        name = slice_.metadata.name or ""
        entry = index.slices.get(name)
        devices = slice_.spec.devices or []
        if entry is not None and list(entry.views) == [d.name or "" for d in devices]:
            groups.append((name, [(d.name or "", entry.views[d.name or ""]) for d in devices]))
        else:
            driver = slice_.spec.driver or ""
            groups.append(("", [(d.name or "", DeviceView(driver, d)) for d in devices]))
    return groups


def _flat(groups: list[SliceGroup]) -> list[DeviceView]:
    return [view for _, devices in groups for _, view in devices]


def _evaluate(
    selectors: list[CompiledSelector], views: list[DeviceView], result: ClassMatch
) -> None:
    for view in views:
        try:
            if all(s.matches(view) for s in selectors):
                result.matched.append(view)
        except EvaluationError as err:
            result.errors.append((view, str(err)))


def device_label(view: DeviceView) -> str:
    return f"{view.driver}/{view.name}"


class CatalogueLinter:
    def __init__(
        self,
        classes: list[resourceapi.DeviceClass],
        slices: list[resourceapi.ResourceSlice],
        *,
        tenant_label: str = TENANT_LABEL,
        compiler: SelectorCompiler | None = None,
        views: list[DeviceView] | None = None,
        weights: dict[int, int] | None = None,
        index: DraIndex | None = None,
    ) -> None:
        """``views`` replaces ``slices`` for callers that bring their own device views;
        ``weights`` says how many devices a view stands for (by ``id``; default one), for
        views that represent kinds of devices (``allot.lint.shapes``). ``index``: a DRA
        index that holds these slices and classes (by name), whose device views and class
        verdicts are read instead of built and evaluated again (``allot doctor``)."""
        self.classes = classes
        self.index = index if views is None else None
        self._groups = _slice_groups(slices, self.index) if self.index is not None else None
        if views is None:
            views = device_views(slices) if self._groups is None else _flat(self._groups)
        self.views = views
        self.weights = weights or {}
        self.tenant_label = tenant_label
        self.compiler = compiler or SelectorCompiler()

    def lint(self) -> list[Finding]:
        matches = [self.match(c) for c in self.classes]
        findings: list[Finding] = []
        for match in matches:
            findings += self._class_findings(match)
        findings += self._shared_between_tenants(matches)
        return findings

    def devices(self, views: Iterable[DeviceView]) -> int:
        """How many devices the views stand for."""
        return sum(self.weights.get(id(view), 1) for view in views)

    def lint_class(self, device_class: resourceapi.DeviceClass) -> list[Finding]:
        """The findings about one class alone (no comparison with other classes)."""
        return self._class_findings(self.match(device_class))

    def expressions(self, device_class: resourceapi.DeviceClass) -> list[str]:
        return [
            s.cel.expression
            for s in device_class.spec.selectors or []
            if s.cel and s.cel.expression
        ]

    def match(self, device_class: resourceapi.DeviceClass) -> ClassMatch:
        result = ClassMatch(device_class, [], [])
        try:
            selectors = [
                self.compiler.compile(e, stored=True) for e in self.expressions(device_class)
            ]
        except CompileError:
            return result
        index, name = self.index, device_class.metadata.name or ""
        known = index.classes.get(name) if index is not None else None
        expressions = tuple(self.expressions(device_class))
        if (
            index is None
            or self._groups is None
            or known is None
            or known.expressions != expressions
        ):
            _evaluate(selectors, self.views, result)  # a class the index does not hold
            return result
        for slice_name, devices in self._groups:
            if not slice_name:  # a slice the index does not hold
                _evaluate(selectors, [view for _, view in devices], result)
                continue
            verdict = index.verdict(name, slice_name)
            for device, view in devices:
                if device in verdict.selected:
                    result.matched.append(view)
                elif device in verdict.errors:
                    result.errors.append((view, verdict.errors[device]))
        return result

    def count_matches(self, expression: str) -> int:
        selector = self.compiler.compile(expression, stored=True)
        count = 0
        for view in self.views:
            try:
                if selector.matches(view):
                    count += self.weights.get(id(view), 1)
            except EvaluationError:
                continue
        return count

    # ----------------------------------------------------------------- per class
    def _class_findings(self, match: ClassMatch) -> list[Finding]:
        name = match.device_class.metadata.name or ""
        findings = []
        try:
            for expression in self.expressions(match.device_class):
                self.compiler.compile(expression, stored=True)
        except CompileError as err:
            return [Finding("compile-error", name, "a selector does not compile", [err.detail])]
        if match.errors:
            counts: Counter[str] = Counter()
            for view, message in match.errors:
                counts[message] += self.weights.get(id(view), 1)
            findings.append(
                Finding(
                    "selector-error",
                    name,
                    f"the selector fails on {counts.total()} device(s); Kubernetes aborts "
                    "allocation for every claim that reaches such a device",
                    [
                        f"{count} x {message} (e.g. {_first_device(match, message)})"
                        for message, count in counts.most_common(3)
                    ],
                    "guard optional attributes with has(), the 'in' operator or .?name.orValue()",
                )
            )
        if not match.matched:
            findings.append(self._no_match(match))
        partitions = self._partition_finding(match)
        if partitions is not None:
            findings.append(partitions)
        return findings

    def _no_match(self, match: ClassMatch) -> Finding:
        name = match.device_class.metadata.name or ""
        expressions = self.expressions(match.device_class)
        drivers = sorted({v.driver for v in self.views})
        details: list[str] = []
        suggestion = None
        for expression in expressions:
            for driver in {m.group(2) for m in _DRIVER.finditer(expression)} - set(drivers):
                details.append(
                    f"driver '{driver}' is never published (published: "
                    f"{', '.join(drivers) or 'none'})"
                )
                suggestion = suggestion or self._driver_fix(expression, driver)
            details += self._attribute_reasons(expression)
        details += self._nearest(expressions)
        if suggestion is not None:
            suggestion += f"  # matches {self.count_matches(suggestion)} device(s)"
        return Finding(
            "no-match",
            name,
            "the class matches no published device; claims through it stay pending forever",
            details,
            suggestion,
        )

    def _driver_fix(self, expression: str, driver: str) -> str | None:
        """A chart's class name used as a driver (``mig.nvidia.com``): its driver and type."""
        chart = class_types().get(driver)
        if chart is None or chart[0] == driver:
            return None
        real, device_type = chart
        fixed = _DRIVER.sub(
            lambda m: (
                (
                    f"device.driver == '{real}' && "
                    f"device.attributes['{real}'].type == '{device_type}'"
                )
                if m.group(2) == driver
                else m.group(0)
            ),
            expression,
        )
        return fixed.strip()

    def _attribute_reasons(self, expression: str) -> list[str]:
        reasons = []
        for match in _ATTRIBUTE.finditer(expression):
            domain, identifier = match.group(2), match.group(3) or match.group(5)
            published = [v.attributes.get(domain, {}).get(identifier) for v in self.views]
            present = [value for value in published if value is not None]
            if not present:
                reasons.append(f"attribute {domain}/{identifier} is never published")
            elif match.group(7) is not None and match.group(7) not in map(str, present):
                values = sorted({str(v) for v in present})
                reasons.append(
                    f"no device publishes {domain}/{identifier} == "
                    f"'{match.group(7)}' (published: {', '.join(values[:8])})"
                )
        return reasons

    def _nearest(self, expressions: list[str]) -> list[str]:
        clauses = [c.strip() for e in expressions for c in split_conjunction(e)]
        if len(clauses) < 2:
            return []
        compiled = []
        for clause in clauses:
            try:
                compiled.append(self.compiler.compile(clause, stored=True))
            except CompileError:
                return []
        scored = []
        for view in self.views:
            passed = []
            for selector in compiled:
                try:
                    passed.append(selector.matches(view))
                except EvaluationError:
                    passed.append(False)
            failed = [c.expression for c, ok in zip(compiled, passed, strict=True) if not ok]
            scored.append((len(failed), device_label(view), failed))
        scored.sort(key=lambda item: (item[0], item[1]))
        nearest: dict[str, list[str]] = {}  # one line per name: pools reuse device names
        for _, label, failed in scored:
            if failed and len(nearest) < 2:
                nearest.setdefault(label, failed)
        return [f"nearest: {label} fails only {' && '.join(f)}" for label, f in nearest.items()]

    def _partition_finding(self, match: ClassMatch) -> Finding | None:
        """Whole GPUs and partitions of one driver in one class (by the driver's facts)."""
        kinds: Counter[tuple[str, str]] = Counter()
        for view in match.matched:
            device_type = str(view.attributes.get(view.driver, {}).get("type"))
            kinds[(view.driver, facts_for(view.driver).kind(device_type))] += self.weights.get(
                id(view), 1
            )
        driver = next(
            (d for d, kind in sorted(kinds) if kind == "whole" and kinds[(d, "partition")]), None
        )
        if driver is None:
            return None
        facts = facts_for(driver)
        whole_type = sorted(facts.whole_types)[0]
        name = match.device_class.metadata.name or ""
        expressions = self.expressions(match.device_class)
        clauses = [f"({e.strip()})" if "||" in e else e.strip() for e in expressions]
        clauses.append(
            f"device.attributes['{driver}'].type == '{whole_type}'"
        )  # no selector: alone
        suggestion = " && ".join(clauses)
        suggestion += f"  # matches {self.count_matches(suggestion)} device(s)"
        return Finding(
            "whole-matches-partitions",
            name,
            f"the class takes whole GPUs ({kinds[(driver, 'whole')]}) and also "
            f"{facts.partition_word or 'GPU'} partitions ({kinds[(driver, 'partition')]}): a "
            "tenant entitled to whole GPUs can take slices, and a whole GPU can be blocked by "
            "a slice",
            [],
            suggestion,
        )

    # ------------------------------------------------------------- across classes
    def _shared_between_tenants(self, matches: list[ClassMatch]) -> list[Finding]:
        findings = []
        for index, left in enumerate(matches):
            for right in matches[index + 1 :]:
                tenants = (self._tenant(left.device_class), self._tenant(right.device_class))
                if None in tenants or tenants[0] == tenants[1]:
                    continue
                shared = {id(v) for v in left.matched} & {id(v) for v in right.matched}
                if not shared:
                    continue
                sharing = [v for v in left.matched if id(v) in shared]
                examples = [device_label(v) for v in sharing][:3]
                findings.append(
                    Finding(
                        "shared-devices",
                        left.device_class.metadata.name or "",
                        f"shares {self.devices(sharing)} device(s) with class "
                        f"{right.device_class.metadata.name} of tenant {tenants[1]} (this class "
                        f"belongs to {tenants[0]}): the tenants compete for the same hardware",
                        [f"e.g. {', '.join(examples)}"],
                    )
                )
        return findings

    def _tenant(self, device_class: resourceapi.DeviceClass) -> str | None:
        return (device_class.metadata.labels or {}).get(self.tenant_label)


def _first_device(match: ClassMatch, message: str) -> str:
    return next(device_label(view) for view, error in match.errors if error == message)


def split_conjunction(expression: str) -> list[str]:
    """Top-level ``&&`` operands (outside parentheses, brackets and strings)."""
    parts, depth, quote, current = [], 0, "", []
    index = 0
    while index < len(expression):
        char = expression[index]
        if quote:
            current.append(char)
            if char == "\\" and index + 1 < len(expression):
                current.append(expression[index + 1])
                index += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char in "([{":
            depth += 1
            current.append(char)
        elif char in ")]}":
            depth -= 1
            current.append(char)
        elif expression.startswith("&&", index) and depth == 0:
            parts.append("".join(current))
            current = []
            index += 1
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    return [p for p in parts if p.strip()]
