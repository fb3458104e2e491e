"""What the workload kinds' validation and defaulting share: label selectors, pod
templates (validated as pods are, their labels matched by the selector), non-negative
counts, ``IntOrString`` amounts and immutable fields, with upstream's texts
(``ValidateLabelSelector``, ``ValidatePodTemplateSpecForReplicaSet``,
``ValidateNonnegativeField``, ``ValidatePositiveIntOrPercent``). Used by
:mod:`allot.validation.apps` and :mod:`allot.validation.batch`."""

from __future__ import annotations

import re
from typing import Any

from allot.api import core_v1 as corev1
from allot.api.meta import LabelSelector, selector_matches
from allot.validation import core, names
from allot.validation import meta as metavalidation
from allot.validation.field import ErrorList, Path, forbidden, invalid, not_supported, required
from allot.validation.meta import validate_label_selector as validate_label_selector
from allot.validation.objects import default_pod_spec

_PERCENT = re.compile(r"^[0-9]+%$")


def nonnegative(value: int | None, path: Path) -> ErrorList:
    if value is not None and value < 0:
        return [invalid(path, value, "must be greater than or equal to 0")]
    return []


def immutable(new: Any, old: Any, path: Path) -> ErrorList:
    """``ValidateImmutableField``: models compared by their wire form."""
    new_wire = new.to_wire() if hasattr(new, "to_wire") else new
    old_wire = old.to_wire() if hasattr(old, "to_wire") else old
    if new_wire != old_wire:
        return [invalid(path, new_wire, "field is immutable")]
    return []


def validate_selector(selector: LabelSelector | None, path: Path, owner: str) -> ErrorList:
    """Required, well formed and not empty (``empty selector is invalid for <owner>``)."""
    if selector is None:
        return [required(path)]
    errors = validate_label_selector(selector, path)
    if not selector.match_labels and not selector.match_expressions:
        errors.append(invalid(path, selector.to_wire(), f"empty selector is invalid for {owner}"))
    return errors


def validate_template(
    template: corev1.PodTemplateSpec | None,
    selector: LabelSelector | None,
    path: Path,
) -> ErrorList:
    """``ValidatePodTemplateSpecForReplicaSet`` without the restart rules: the template's
    labels selected by ``selector`` (a missing selector selects nothing, an empty one
    everything), its metadata and pod spec valid as a pod's."""
    template = template or corev1.PodTemplateSpec()
    errors = selector_mismatch(template, selector, path)
    return errors + validate_template_spec(template, path)


def template_labels(template: corev1.PodTemplateSpec | None) -> dict[str, str]:
    metadata = template.metadata if template is not None else None
    return dict(metadata.labels or {}) if metadata is not None else {}


def selector_mismatch(
    template: corev1.PodTemplateSpec | None, selector: LabelSelector | None, path: Path
) -> ErrorList:
    labels = template_labels(template)
    wire = selector.to_wire() if selector is not None else None
    if wire == {} or (wire is not None and selector_matches(wire, labels)):
        return []
    return [
        invalid(
            path.child("metadata", "labels"), labels, "`selector` does not match template `labels`"
        )
    ]


def validate_template_spec(template: corev1.PodTemplateSpec, path: Path) -> ErrorList:
    """``ValidatePodTemplateSpec``: labels, annotations (at ``<template>.labels`` and
    ``<template>.annotations``, as upstream names them) and the pod spec."""
    errors = validate_template_metadata(template, path)
    return errors + core.validate_pod_spec(template.spec or corev1.PodSpec(), path.child("spec"))


def validate_template_metadata(template: corev1.PodTemplateSpec | None, path: Path) -> ErrorList:
    metadata = template.metadata if template is not None else None
    if metadata is None:
        return []
    errors = metavalidation.validate_labels(metadata.labels or {}, path.child("labels"))
    return errors + metavalidation.validate_annotations(
        metadata.annotations or {}, path.child("annotations")
    )


def validate_always_restart(
    template: corev1.PodTemplateSpec | None, path: Path, kind: str
) -> ErrorList:
    """Templates of long-running workloads restart their containers ``Always`` and have no
    ``activeDeadlineSeconds``."""
    spec = template.spec if template is not None else None
    if spec is None:
        return []
    errors: ErrorList = []
    if spec.restart_policy is not None and spec.restart_policy != "Always":
        errors.append(
            not_supported(path.child("spec", "restartPolicy"), spec.restart_policy, ["Always"])
        )
    if spec.active_deadline_seconds is not None:
        errors.append(
            forbidden(
                path.child("spec", "activeDeadlineSeconds"),
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    return errors


def int_or_percent(value: int | str | None, total: int = 100, round_up: bool = False) -> int:
    """The amount an ``IntOrString`` stands for (a percentage of ``total``)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    if _PERCENT.match(value):
        scaled = int(value[:-1]) * total
        return -(-scaled // 100) if round_up else scaled // 100
    return 0


def validate_int_or_percent(value: int | str | None, path: Path) -> ErrorList:
    """``ValidatePositiveIntOrPercent``: a non-negative number or a percentage."""
    if value is None:
        return []
    if isinstance(value, int):
        return nonnegative(value, path)
    return [invalid(path, value, message) for message in names.is_valid_percent(value)]


def not_over_100_percent(value: int | str | None, path: Path) -> ErrorList:
    """``IsNotMoreThan100Percent``."""
    if isinstance(value, str) and _PERCENT.match(value) and int(value[:-1]) > 100:
        return [invalid(path, value, "must not be greater than 100%")]
    return []


def default_pod_template(template: corev1.PodTemplateSpec | None) -> None:
    """A template's pod spec gets a pod's defaults."""
    if template is not None and template.spec is not None:
        default_pod_spec(template.spec)
