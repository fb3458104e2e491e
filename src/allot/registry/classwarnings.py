"""Warnings on DeviceClass and Tenant writes whose classes select the wrong devices.

Kubernetes stores a DeviceClass that matches no published device, or a "whole GPU" class
that also takes MIG partitions, without a word; the mistake shows up later as claims that
stay pending or tenants holding slices. allot stores them too, and answers the write with
``Warning`` headers (kubectl prints each as ``Warning: ...`` on stderr) carrying the finding
of :mod:`allot.lint.catalogue` and its suggested selector, checked against the devices the
cluster's ResourceSlices publish. A Tenant write warns the same way about the classes its
selector entitles it to. A cluster that publishes no device is not checked (there is
nothing to compare with yet), nor are the writes of the platform's own controllers.

A Tenant in fair-sharing mode is also judged against the catalogue here, the one plugin
that reads it: a share of a DeviceClass that does not exist or that the tenant is not
entitled to is refused (422, with the share's field path, as validation would if it knew
the catalogue, with the nearest class name as "did you mean"), a quota key naming a class
that does not exist is accepted with a warning saying so (:func:`quota_class_warnings`),
and guarantees that sum past what the published devices hold are accepted
with a warning (as Kueue accepts any nominal quota), one per cohort and resource
(:mod:`allot.lint.sharing`).

A class is checked once per kind of device its selectors can tell apart, not once per
device (:mod:`allot.lint.shapes`): on a fleet of identical nodes the cost is a pass over
the published devices' JSON plus a few CEL evaluations. Registered by
:class:`allot.registry.clusters.Registry`, one of its standard plugins.
"""

from __future__ import annotations

import re

from allot.api import resource_v1 as resourceapi
from allot.api.meta import selector_matches
from allot.api.tenancy import TENANCY_GROUP, Tenant, entitlement_selector
from allot.cel import SelectorCompiler
from allot.lint.catalogue import SUGGESTION_NAMES, CatalogueLinter, Finding
from allot.lint.shapes import Shapes, group, read_names
from allot.lint.sharing import cohort_of, overcommitments
from allot.registry.admission import AdmissionRequest
from allot.registry.resources import by_kind
from allot.statuses import InvalidObjectError
from allot.store import Store, WatchEvent
from allot.validation.tenancy import quota_class_warnings, validate_sharing_classes

WARNED_CODES = ("no-match", "selector-error", "whole-matches-partitions")
DETAILS_SHOWN = 3
KEPT_GROUPINGS = 16
SLICES = by_kind("ResourceSlice").store
CLASSES = by_kind("DeviceClass").store
TENANTS = by_kind("Tenant").store
_LINE_BREAKS = re.compile(r"\s*[\r\n\t]+\s*")


class CatalogueWarnings:
    """The admission hook; warns, never denies."""

    def __init__(self, store: Store, compiler: SelectorCompiler) -> None:
        self.store = store
        self.compiler = compiler
        self._shapes: dict[str, dict[frozenset[str] | None, Shapes]] = {}
        store.add_listener(self._forget)

    def _forget(self, event: WatchEvent) -> None:
        if event.resource == SLICES.key:
            self._shapes.pop(event.cluster, None)

    def admit(self, request: AdmissionRequest) -> list[str]:
        if request.internal or request.object is None or request.subresource:
            return []
        kind, group = request.resource.kind, request.resource.group
        if kind == "DeviceClass" and isinstance(request.object, resourceapi.DeviceClass):
            return self._class_warnings(request.cluster, [request.object], "")
        if kind == "Tenant" and group == TENANCY_GROUP and isinstance(request.object, Tenant):
            catalogue = self._catalogue(request.cluster)
            errors = validate_sharing_classes(request.object, catalogue)
            if errors:
                raise InvalidObjectError(request.resource.info, request.name, errors)
            classes = self._entitled(request.cluster, request.object)
            warnings = self._class_warnings(
                request.cluster, classes, f"tenant {request.name} is entitled to "
            )
            if catalogue:  # an empty catalogue has nothing to compare with yet
                warnings += [
                    f"tenant {request.name}: {w}"
                    for w in quota_class_warnings(request.object, catalogue)
                ]
            return warnings + self._sharing_warnings(request.cluster, request.object)
        return []

    def _catalogue(self, cluster: str) -> dict[str, dict[str, str] | None]:
        items, _ = self.store.list_objects(cluster, CLASSES, shared=True)
        return {item["metadata"]["name"]: item["metadata"].get("labels") for item in items}

    def _sharing_warnings(self, cluster: str, tenant: Tenant) -> list[str]:
        """Guarantees of the tenant's cohort, with this write, past the devices."""
        if tenant.spec.sharing is None:
            return []
        name, cohort = tenant.metadata.name, cohort_of(tenant)
        stored, _ = self.store.list_objects(cluster, TENANTS, shared=True)
        members = [tenant] + [
            model
            for item in stored
            if item["metadata"]["name"] != name
            and cohort_of(model := Tenant.model_validate(item)) == cohort
        ]
        items, _ = self.store.list_objects(cluster, CLASSES, shared=True)
        classes = [resourceapi.DeviceClass.model_validate(item) for item in items]
        expressions = [s.cel.expression for c in classes for s in c.spec.selectors or [] if s.cel]
        names = read_names(e for e in expressions if e)
        shapes = self.shapes(cluster, names | {"memory"} if names is not None else None)
        if not shapes.views:
            return []
        linter = CatalogueLinter(
            [], [], compiler=self.compiler, views=shapes.views, weights=shapes.weights
        )
        return [
            f"tenant {name}: {found.message()}"
            for found in overcommitments(members, linter, classes)
        ]

    def _class_warnings(
        self, cluster: str, classes: list[resourceapi.DeviceClass], prefix: str
    ) -> list[str]:
        if not classes:
            return []
        warnings = []
        for device_class in classes:
            expressions = [
                s.cel.expression
                for s in device_class.spec.selectors or []
                if s.cel and s.cel.expression
            ]
            names = read_names(expressions)
            shapes = self.shapes(cluster, names | SUGGESTION_NAMES if names is not None else None)
            if not shapes.views:
                return []
            linter = CatalogueLinter(
                [], [], compiler=self.compiler, views=shapes.views, weights=shapes.weights
            )
            warnings += [
                prefix + warning_text(finding)
                for finding in linter.lint_class(device_class)
                if finding.code in WARNED_CODES
            ]
        return warnings

    def shapes(self, cluster: str, names: frozenset[str] | None) -> Shapes:
        """The cluster's devices grouped for ``names``; kept until a slice changes."""
        cached = self._shapes.setdefault(cluster, {})
        found = cached.get(names)
        if found is None:
            if len(cached) >= KEPT_GROUPINGS:
                cached.clear()
            slices, _ = self.store.list_objects(cluster, SLICES, shared=True)
            found = cached[names] = group(slices, names)
        return found

    def _entitled(self, cluster: str, tenant: Tenant) -> list[resourceapi.DeviceClass]:
        selector = entitlement_selector(tenant.spec)
        wire = selector.to_wire() if selector is not None else None
        items, _ = self.store.list_objects(cluster, CLASSES, shared=True)
        return [
            resourceapi.DeviceClass.model_validate(item)
            for item in items
            if selector_matches(wire, item["metadata"].get("labels"))
        ]


def warning_text(finding: Finding) -> str:
    """One line: the class, the finding, its first details and the suggested selector."""
    text = f"deviceclass {finding.device_class} [{finding.code}]: {finding.message}"
    reasons = [d for d in finding.details if not d.startswith("nearest: ")]
    nearest = [d for d in finding.details if d.startswith("nearest: ")]
    details = (reasons + nearest[:1])[:DETAILS_SHOWN]
    if details:
        text += f" ({'; '.join(details)})"
    if finding.suggestion:
        selector, _, checked = finding.suggestion.partition("  # ")
        text += f"; suggested selector: {selector}" + (f" ({checked})" if checked else "")
    return _LINE_BREAKS.sub(" ", text)
