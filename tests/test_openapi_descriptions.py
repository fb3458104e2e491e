"""``kubectl explain`` has something to say under a Tenant and a ResourceClaim (issue 28).

``kubectl explain tenant.spec`` printed ``<no description>`` for every field and
``kubectl explain resourceclaim.spec`` ``<empty>``: allot's kind had no descriptions, and a
description beside a bare ``$ref`` is ignored by OpenAPI 3.0 readers. Every type and field
reachable from the two kinds' schemas now has one, and no reference has siblings. The real
kubectl reads them in ``tests/e2e/test_kubectl.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from allot.apiserver.openapi import _components

ROOTS = ("dev.allot.Tenant", "io.k8s.api.resource.v1.ResourceClaim")
SHARED = "io.k8s.apimachinery."  # ObjectMeta, LabelSelector, Condition: not walked


def _referenced(prop: dict[str, Any]) -> str | None:
    for part in (prop, *prop.get("allOf", [])):
        if "$ref" in part:
            return str(part["$ref"]).rsplit("/", 1)[-1]
    for inner in ("items", "additionalProperties"):
        if isinstance(prop.get(inner), dict):
            return _referenced(prop[inner])
    return None


def _reachable(root: str) -> Iterator[tuple[str, dict[str, Any]]]:
    components = _components()
    seen: set[str] = set()
    pending = [root]
    while pending:
        name = pending.pop()
        if name in seen or name.startswith(SHARED):
            continue
        seen.add(name)
        yield name, components[name]
        for prop in components[name].get("properties", {}).values():
            if (target := _referenced(prop)) is not None:
                pending.append(target)


@pytest.mark.parametrize("root", ROOTS)
def test_every_type_and_field_under_the_kind_is_described(root: str) -> None:
    missing = []
    for name, schema in _reachable(root):
        if not schema.get("description"):
            missing.append(name)
        missing += [
            f"{name}.{f}" for f, p in schema["properties"].items() if not p.get("description")
        ]
    assert missing == []


def test_no_reference_has_siblings() -> None:
    """A ``$ref`` with a description or patch metadata beside it is wrapped in ``allOf``."""
    crowded = [
        f"{name}.{field}"
        for name, schema in _components().items()
        for field, prop in schema.get("properties", {}).items()
        if "$ref" in prop and len(prop) > 1
    ]
    assert crowded == []


def test_tenant_descriptions_are_for_users_not_developers() -> None:
    """The models' docstrings (reStructuredText for developers) are not what users read."""
    texts = [s.get("description", "") for _, s in _reachable("dev.allot.Tenant")]
    assert [t for t in texts if "``" in t or ":data:" in t] == []
