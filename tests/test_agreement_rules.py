"""The rules of the allocation agreement with kube-scheduler (``bench/agreement.py``),
without a cluster: how a scheduler's refusal is reduced to the trial node's reasons, that
the seeded trials are reproducible data that the API accepts, and that the comparison
reports every difference. The agreement itself runs against real Kubernetes in
``tests/e2e/test_allocation_agreement.py``.
"""

from __future__ import annotations

import copy

from allot.api import resource_v1 as resourceapi
from allot.types import Obj
from bench.agreement import claim_specs, compare, features, reasons, trial

REAL_REFUSAL = (
    "0/12 nodes are available: 1 cannot allocate all claims, 11 node(s) didn't match Pod's "
    "node affinity/selector. still not schedulable, preemption: 0/12 nodes are available: "
    "12 Preemption is not helpful for scheduling."
)


def test_reasons_keep_the_trial_nodes_reasons_only() -> None:
    assert reasons(REAL_REFUSAL) == ["cannot allocate all claims"]
    assert reasons("0/1 nodes are available: 1 node(s) had untolerated taint(s).") == [
        "node(s) had untolerated taint(s)"
    ]
    assert reasons('resourceclaim.resource.k8s.io "c" not found') == [
        'resourceclaim.resource.k8s.io "c" not found'
    ]


def test_trials_are_seeded_data_the_api_accepts() -> None:
    assert trial(7) == trial(7)
    assert trial(7) != trial(8)
    for seed in range(30):
        generated = trial(seed)
        for pod in generated["pods"]:
            named = [c["shared"] for c in pod["claims"] if "shared" in c]
            assert len(named) == len(set(named)), pod  # kube-scheduler never binds those
            for claim in pod["claims"]:
                if "template" in claim:
                    resourceapi.ResourceClaimSpec.model_validate(claim["template"])
        for shared in generated["shared"]:
            resourceapi.ResourceClaimSpec.model_validate(shared["spec"])


def test_comparison_names_every_difference() -> None:
    trials = [trial(3)]
    name, spec = next(iter(claim_specs(trials).items()))
    pod = trials[0]["pods"][0]["name"]
    result = [{"request": "r0", "driver": "gpu.nvidia.com", "pool": "t003-0", "device": "gpu-0"}]
    real: Obj = {"claims": {name: result}, "pods": {pod: "bound"}}
    same = compare(trials, real, copy.deepcopy(real))
    assert (same.claims_agreeing, same.claims, same.pods_agreeing, same.pods) == (1, 1, 1, 1)
    assert (same.allocated, same.bound, same.differences) == (1, 1, [])
    assert same.covered == dict.fromkeys(features(*spec), 1)
    other = copy.deepcopy(real)
    other["claims"][name][0]["device"] = "gpu-1"
    other["pods"][pod] = ["cannot allocate all claims"]
    differing = compare(trials, real, other)
    assert (differing.claims_agreeing, differing.pods_agreeing) == (0, 0)
    assert len(differing.differences) == 2
    assert '"device": "gpu-1"' in differing.differences[0]
