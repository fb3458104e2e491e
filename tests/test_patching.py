"""Strategic merge patch directives (issue 28): ``$deleteFromPrimitiveList`` and
``$retainKeys`` act as upstream's strategicpatch applies them, and malformed ones are the
API server's 400. The cases are data, ``tests/scenarios/strategic-merge-patch.yaml``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from allot.registry.patching import PatchError, strategic_merge_patch
from tests.conftest import load_scenarios

CASES = load_scenarios("strategic-merge-patch.yaml")


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_strategic_merge_patch(case: dict[str, Any]) -> None:
    stored = copy.deepcopy(case["object"])
    if "error" in case:
        with pytest.raises(PatchError) as raised:
            strategic_merge_patch(case["object"], case["patch"])
        assert (raised.value.code, str(raised.value)) == (
            case["error"]["code"],
            case["error"]["message"],
        )
    else:
        assert strategic_merge_patch(case["object"], case["patch"]) == case["result"]
    assert case["object"] == stored  # the stored object is never changed in place
