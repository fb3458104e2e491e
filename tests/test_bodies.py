"""Request-body bounds: a document with shared (YAML-aliased) nodes is measured as if
expanded, without expanding it, and refused exactly when the expanded document would pass
the value or depth limit (hypothesis, against a naive expansion)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allot.registry import bodies
from allot.registry.errors import BadRequest


def _expanded(node: Any, depth: int = 1) -> tuple[int, int]:
    """Values and depth of the document with every alias expanded (naive recursion)."""
    if isinstance(node, dict):
        node = list(node.values())
    if not isinstance(node, list):
        return 1, 0
    values, deepest = 1, depth
    for child in node:
        child_values, child_depth = _expanded(child, depth + 1)
        values += child_values
        deepest = max(deepest, child_depth)
    return values, deepest


@st.composite
def shared_documents(draw: st.DrawFn) -> Any:
    """Layers of lists whose items are scalars or earlier layers (aliases of anchors)."""
    layers: list[Any] = []
    for _ in range(draw(st.integers(1, 6))):
        items = draw(st.lists(st.integers(-1, len(layers) - 1), max_size=5))
        layer = [layers[i] if i >= 0 else "x" for i in items]
        layers.append({"k": layer} if draw(st.booleans()) else layer)
    return layers[-1]


@given(shared_documents(), st.integers(1, 400), st.integers(1, 8))
def test_shared_nodes_are_measured_as_expanded(document: Any, limit: int, depth: int) -> None:
    values, deepest = _expanded(document)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bodies, "MAX_NODES", limit)
        patch.setattr(bodies, "MAX_DEPTH", depth)
        refused = False
        try:
            bodies.check_nesting(document)
        except BadRequest:
            refused = True
    assert refused == (values > limit or deepest > depth)


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    endless = bodies.decode_patch  # through the YAML path, as an apply patch arrives
    with pytest.raises(BadRequest, match="nests deeper than 100 levels"):
        endless(b"a: &a [*a]\n")
