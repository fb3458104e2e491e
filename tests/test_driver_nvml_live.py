"""Real GPUs through NVML: runs only where a GPU and nvidia-ml-py exist (the device machine).

CI has no GPU, so the test skips cleanly there. On a GPU machine it probes read-only and
checks that every published slice passes Kubernetes validation.
"""

from __future__ import annotations

import pytest

from allot.api import kinds
from allot.cel import SelectorCompiler
from allot.driver import nvml, slices
from allot.registry.kinds import rules_for
from allot.validation.objects import validate_create
from allot.validation.resource import ResourceContext


def _probe() -> dict[str, object]:
    try:
        return nvml.probe_document()
    except nvml.NvmlUnavailable as err:
        pytest.skip(f"no NVIDIA GPU here: {err}")


@pytest.mark.parametrize("dynamic", [False, True])
def test_local_gpus_publish_valid_slices(dynamic: bool) -> None:
    gpus = nvml.gpus_from_probe(_probe())
    assert gpus
    published = slices.node_slices("local", "uid", gpus, dynamic_mig=dynamic)
    context = ResourceContext(compiler=SelectorCompiler())
    for document in published:
        obj = kinds.decode({**document, "metadata": {**document["metadata"], "name": "s"}})
        assert [str(e) for e in validate_create(obj, context, rules_for(obj))] == []
    whole = published[-1]["spec"]["devices"][0]
    assert whole["attributes"]["uuid"]["string"].startswith("GPU-")
