"""Warnings on DeviceClass and Tenant writes whose classes select the wrong devices.

Kubernetes stores a DeviceClass that matches no published device, or a "whole GPU" class
that also takes MIG partitions, without a word; the mistake shows up later as claims that
stay pending or tenants holding slices. allot stores them too, and answers the write with
``Warning`` headers (kubectl prints each as ``Warning: ...`` on stderr) carrying the finding
of :mod:`allot.lint.catalogue` and its suggested selector, checked against the devices the
cluster's ResourceSlices publish. A Tenant write warns the same way about the classes its
selector entitles it to. A cluster that publishes no device is not checked (there is
nothing to compare with yet), nor are the writes of the platform's own controllers.

Device views are kept per slice until the slice changes, and each view remembers its
selector results, so re-checking a class on a big fleet costs dictionary lookups for the
expressions already seen. Registered by :class:`allot.apiserver.app.ApiServer`.
"""

from __future__ import annotations

import re
from typing import Any

from allot.api import resource_v1 as resourceapi
from allot.api.meta import selector_matches
from allot.api.tenancy import TENANCY_GROUP, Tenant, entitlement_selector
from allot.apiserver.admission import AdmissionRequest
from allot.apiserver.resources import by_kind
from allot.cel import DeviceView, SelectorCompiler
from allot.lint.catalogue import CatalogueLinter, Finding
from allot.store import Store, WatchEvent

WARNED_CODES = ("no-match", "selector-error", "whole-matches-partitions")
DETAILS_SHOWN = 3
SLICES = by_kind("ResourceSlice").store
CLASSES = by_kind("DeviceClass").store
_LINE_BREAKS = re.compile(r"\s*[\r\n\t]+\s*")


class CatalogueWarnings:
    """The admission hook; warns, never denies."""

    def __init__(self, store: Store, compiler: SelectorCompiler) -> None:
        self.store = store
        self.compiler = compiler
        self._slice_views: dict[str, dict[str, tuple[Any, list[DeviceView]]]] = {}
        self._views: dict[str, list[DeviceView]] = {}
        store.add_listener(self._forget)

    def _forget(self, event: WatchEvent) -> None:
        if event.resource == SLICES.key:
            self._views.pop(event.cluster, None)

    def admit(self, request: AdmissionRequest) -> list[str]:
        if request.internal or request.object is None or request.subresource:
            return []
        kind, group = request.resource.kind, request.resource.group
        if kind == "DeviceClass" and isinstance(request.object, resourceapi.DeviceClass):
            return self._class_warnings(request.cluster, [request.object], "")
        if kind == "Tenant" and group == TENANCY_GROUP and isinstance(request.object, Tenant):
            classes = self._entitled(request.cluster, request.object)
            return self._class_warnings(
                request.cluster, classes, f"tenant {request.name} is entitled to "
            )
        return []

    def _class_warnings(
        self, cluster: str, classes: list[resourceapi.DeviceClass], prefix: str
    ) -> list[str]:
        if not classes:
            return []
        views = self.views(cluster)
        if not views:
            return []
        linter = CatalogueLinter([], [], compiler=self.compiler, views=views)
        return [
            prefix + warning_text(finding)
            for device_class in classes
            for finding in linter.lint_class(device_class)
            if finding.code in WARNED_CODES
        ]

    def _entitled(self, cluster: str, tenant: Tenant) -> list[resourceapi.DeviceClass]:
        selector = entitlement_selector(tenant.spec)
        wire = selector.to_wire() if selector is not None else None
        items, _ = self.store.list_objects(cluster, CLASSES, shared=True)
        return [
            resourceapi.DeviceClass.model_validate(item)
            for item in items
            if selector_matches(wire, item["metadata"].get("labels"))
        ]

    def views(self, cluster: str) -> list[DeviceView]:
        """Every device the cluster's slices publish; a changed slice's views are rebuilt,
        the others kept with the selector results they remember."""
        cached = self._views.get(cluster)
        if cached is not None:
            return cached
        previous = self._slice_views.get(cluster, {})
        current: dict[str, tuple[Any, list[DeviceView]]] = {}
        items, _ = self.store.list_objects(cluster, SLICES, shared=True)
        for item in items:
            name = item["metadata"]["name"]
            version = item["metadata"].get("resourceVersion")
            known = previous.get(name)
            if known is None or known[0] != version:
                known = (version, _slice_views(item))
            current[name] = known
        self._slice_views[cluster] = current
        views = [view for _, slice_views in current.values() for view in slice_views]
        self._views[cluster] = views
        return views


def _slice_views(item: dict[str, Any]) -> list[DeviceView]:
    spec = item.get("spec") or {}
    driver = spec.get("driver") or ""
    return [
        DeviceView(driver, resourceapi.Device.model_validate(device))
        for device in spec.get("devices") or []
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
