"""clone_document must behave as a deep copy for every JSON document, and encode_document
write the text Python's json module writes (UTF-8 for non-ASCII text)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from allot.api.documents import clone_document, encode_document

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()


def _nested(inner: Any) -> Any:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)


documents = st.recursive(scalars, _nested, max_leaves=30)


def _containers(value: Any) -> list[Any]:
    found: list[Any] = []
    if isinstance(value, dict):
        found.append(value)
        for item in value.values():
            found += _containers(item)
    elif isinstance(value, list):
        found.append(value)
        for item in value:
            found += _containers(item)
    return found


@given(documents)
def test_clone_equals_deepcopy_and_shares_no_container(document: Any) -> None:
    cloned = clone_document(document)
    assert cloned == copy.deepcopy(document)
    originals = {id(c) for c in _containers(document)}
    assert not originals & {id(c) for c in _containers(cloned)}


def test_changing_the_clone_leaves_the_original_alone() -> None:
    original: dict[str, Any] = {"metadata": {"labels": {"a": "1"}}, "spec": {"items": [{"x": 1}]}}
    cloned = clone_document(original)
    cloned["metadata"]["labels"]["a"] = "2"
    cloned["spec"]["items"][0]["x"] = 2
    cloned["spec"]["items"].append({})
    assert original == {"metadata": {"labels": {"a": "1"}}, "spec": {"items": [{"x": 1}]}}


@given(documents)
def test_encode_writes_what_json_reads_back(document: Any) -> None:
    assert json.loads(encode_document(document)) == document


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), _nested, max_leaves=30))
def test_encode_writes_what_json_dumps_writes(document: Any) -> None:
    """Floats aside (written as Go writes them: ``0.00006103515625``, not ``6.1e-05``)."""
    text = encode_document(document).decode("utf-8", "surrogatepass")
    compact = json.dumps(document, separators=(",", ":"))
    assert text in (json.dumps(document, separators=(",", ":"), ensure_ascii=False), compact)
