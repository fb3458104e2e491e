"""What an update of a pod may change, as kube-apiserver's ``ValidatePodUpdate`` decides.

A pod's spec is fixed once created but for a few fields: container and init container
images, ``activeDeadlineSeconds`` (set, or lowered), tolerations (only added; an existing
one may change only its ``tolerationSeconds``), ``terminationGracePeriodSeconds`` (to 1
when it was negative), scheduling gates (only removed) and, while the pod is still gated,
its node selector (only added to) and node affinity. Anything else is refused with
upstream's ``spec: Forbidden: pod updates may not change fields other than ...``, so
``kubectl patch``, ``edit`` or ``apply`` of a pod's command, restart policy or node
cannot leave a running pod whose spec says something its containers do not do.

Upstream ends the message with a Go ``cmp.Diff`` of the two specs; allot lists the changed
fields instead, one ``-`` (before) and one ``+`` (after) line per field path, values as
JSON (see the conformance ledger). Compared as ``equality.Semantic`` does: an empty list
or map equals an unset one. Called by :func:`allot.validation.core.validate_pod_update`.
"""

from __future__ import annotations

import json
from typing import Any

from allot.api.documents import semantic
from allot.validation.field import ErrorList, FieldError, Path, forbidden, invalid

MAX_INT32 = 2**31 - 1
UPDATABLE_POD_SPEC_FIELDS = ",".join(
    [
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
        "previously negative)",
    ]
)
SPEC = Path("spec")


def validate_spec_update(new: dict[str, Any], old: dict[str, Any]) -> ErrorList:
    """The errors of changing pod spec ``old`` into ``new`` (wire form, defaulted)."""
    errors: ErrorList = []
    for wire in ("containers", "initContainers"):
        found, stop = _container_updates(new.get(wire) or [], old.get(wire) or [], wire)
        errors += found
        if stop:
            return errors
    deadline = _deadline_update(new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds"))
    if deadline is not None:
        return [*errors, deadline]
    errors += _only_added_tolerations(new.get("tolerations") or [], old.get("tolerations") or [])
    munged = _munged(new, old)
    if semantic(munged) != semantic(old):
        detail = f"pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}"
        errors.append(forbidden(SPEC, f"{detail}\n{spec_diff(old, munged)}"))
    return errors


def _container_updates(
    new: list[dict[str, Any]], old: list[dict[str, Any]], wire: str
) -> tuple[ErrorList, bool]:
    """``ValidateContainerUpdates``: as many containers as before (else stop there), and
    images without surrounding spaces (a missing image is the spec's own error)."""
    path = SPEC.child(wire)
    if len(new) != len(old):
        return [forbidden(path, "pod updates may not add or remove containers")], True
    spaces = "must not have leading or trailing whitespace"
    return [
        invalid(path.index(index).child("image"), image, spaces)
        for index, container in enumerate(new)
        if (image := container.get("image") or "") != image.strip()
    ], False


def _deadline_update(new: int | None, old: int | None) -> FieldError | None:
    """``activeDeadlineSeconds`` may be set, or lowered; never raised nor unset."""
    path = SPEC.child("activeDeadlineSeconds")
    if new is not None:
        if new < 0 or new > MAX_INT32:
            return invalid(path, new, f"must be between 0 and {MAX_INT32}, inclusive")
        if old is not None and old < new:
            return invalid(path, new, "must be less than or equal to previous value")
        return None
    if old is not None:
        return invalid(path, None, "must not update from a positive integer to nil value")
    return None


def _only_added_tolerations(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> ErrorList:
    """Every existing toleration is still there, up to its ``tolerationSeconds``."""

    def shape(toleration: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in toleration.items() if k != "tolerationSeconds"}

    kept = [shape(t) for t in new]
    if all(shape(t) in kept for t in old):
        return []
    detail = "existing toleration can not be modified except its tolerationSeconds"
    return [forbidden(SPEC.child("tolerations"), detail)]


def _munged(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """``new`` with every field an update may change put back to ``old``'s value."""
    munged = dict(new)
    for wire in ("containers", "initContainers"):
        if wire in new:
            olds = old.get(wire) or []
            munged[wire] = [
                _with(container, "image", olds[index].get("image"))
                for index, container in enumerate(new[wire])
            ]
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        munged = _with(munged, key, old.get(key))
    grace, old_grace = (
        new.get("terminationGracePeriodSeconds"),
        old.get("terminationGracePeriodSeconds"),
    )
    if old_grace is not None and old_grace < 0 and grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if old.get("schedulingGates"):
        munged = _gated_changes_allowed(munged, old)
    return munged


def _gated_changes_allowed(munged: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """A gated pod may gain node selector entries and change its node affinity (upstream
    checks the affinity change further; allot lets any pass, see the ledger)."""
    selector, old_selector = munged.get("nodeSelector") or {}, old.get("nodeSelector") or {}
    if all(selector.get(k) == v for k, v in old_selector.items()):
        munged = _with(munged, "nodeSelector", old.get("nodeSelector"))
    affinity = dict(munged.get("affinity") or {})
    old_node_affinity = (old.get("affinity") or {}).get("nodeAffinity")
    affinity = _with(affinity, "nodeAffinity", old_node_affinity)
    return _with(munged, "affinity", affinity or old.get("affinity"))


def _with(obj: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with ``key`` set to ``value`` (removed for None)."""
    copied = {k: v for k, v in obj.items() if k != key}
    if value is not None:
        copied[key] = value
    return copied


def spec_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The changed fields of two specs: ``- path: before`` and ``+ path: after`` lines."""
    lines: list[str] = []
    _diff(semantic(old), semantic(new), "", lines)
    return "\n".join(lines)


def _diff(old: Any, new: Any, path: str, lines: list[str]) -> None:
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys()):
            child = f"{path}.{key}" if path else key
            _diff(old.get(key), new.get(key), child, lines)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            _diff(before, after, f"{path}[{index}]", lines)
        return
    if old is not None:
        lines.append(f"- {path}: {_json(old)}")
    if new is not None:
        lines.append(f"+ {path}: {_json(new)}")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
