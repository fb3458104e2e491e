"""A pod's inter-pod affinity, validated as ``validatePodAffinity`` and
``validatePodAntiAffinity`` of ``pkg/apis/core/validation`` (Kubernetes 1.36).

Each term of ``podAffinity`` and ``podAntiAffinity`` (required, and the preferred ones'
``podAffinityTerm`` with a ``weight`` of 1-100): its ``labelSelector`` and
``namespaceSelector`` well formed, each of its ``namespaces`` a namespace name (reported at
``namespace``, as upstream does), and a ``topologyKey`` that is a label name
(``can not be empty``). The API model keeps both affinities as free-form objects, so a
term that is not an object, or a selector that does not decode, is refused here too.
Called by :mod:`allot.validation.core` for pods and pod templates; pure.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from allot.api.meta import LabelSelector
from allot.validation import names
from allot.validation.field import ErrorList, Path, invalid, required
from allot.validation.meta import validate_label_selector

KINDS = ("podAffinity", "podAntiAffinity")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def validate_pod_affinities(affinity: dict[str, Any] | None, path: Path) -> ErrorList:
    """``spec.affinity``'s pod affinity and anti-affinity."""
    errors: ErrorList = []
    for kind in KINDS:
        section = (affinity or {}).get(kind)
        if section is None:
            continue
        where = path.child(kind)
        if not isinstance(section, dict):
            errors.append(invalid(where, section, "must be an object"))
            continue
        for index, term in enumerate(_list(section.get(REQUIRED))):
            errors += _term(term, where.child(REQUIRED).index(index))
        for index, weighted in enumerate(_list(section.get(PREFERRED))):
            errors += _weighted(weighted, where.child(PREFERRED).index(index))
    return errors


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _weighted(weighted: Any, path: Path) -> ErrorList:
    if not isinstance(weighted, dict):
        return [invalid(path, weighted, "must be an object")]
    errors: ErrorList = []
    weight = weighted.get("weight")
    if not isinstance(weight, int) or not 1 <= weight <= 100:
        errors.append(invalid(path.child("weight"), weight, "must be in the range 1-100"))
    return errors + _term(weighted.get("podAffinityTerm") or {}, path.child("podAffinityTerm"))


def _term(term: Any, path: Path) -> ErrorList:
    if not isinstance(term, dict):
        return [invalid(path, term, "must be an object")]
    errors: ErrorList = []
    for field in ("labelSelector", "namespaceSelector"):
        errors += _selector(term.get(field), path.child(field))
    for namespace in _list(term.get("namespaces")):
        errors += [
            invalid(path.child("namespace"), namespace, message)
            for message in names.is_dns1123_label(str(namespace))
        ]
    key = str(term.get("topologyKey") or "")
    if not key:
        errors.append(required(path.child("topologyKey"), "can not be empty"))
    return errors + [
        invalid(path.child("topologyKey"), key, message) for message in names.is_qualified_name(key)
    ]


def _selector(value: Any, path: Path) -> ErrorList:
    if value is None:
        return []
    try:
        selector = LabelSelector.model_validate(value)
    except ValidationError:
        return [invalid(path, value, "must be a label selector")]
    return validate_label_selector(selector, path)
