"""Allocation agreement with the real kube-scheduler 1.36 (issue 29, item 5), on a fixed set
of seeded trials: every claim allocated from the same devices, or refused, by both, and
every refused pod refused for the same reasons (``bench/agreement.py``, which also states
the rule that makes them comparable: one node per trial, every pod pinned to it). The set
is chosen so that every feature the trials exercise is allocated at least once, plus seeds 21
and 40, where allot following v0.36.0 (counters kept after a taint or a constraint refused a
device) refused claims that kube-scheduler 1.36.3 allocated; seeds 0 to 15 include refusals by
a node taint, which allot worded as ``{key: value}`` before it followed TaintToleration's 1.36
reason.
Without ``make kube``'s binaries this skips.
"""

from __future__ import annotations

import pytest

from bench.agreement import MODES, agree
from tests.realkube import needs_real_kube

pytestmark = [pytest.mark.slow, needs_real_kube]
SEEDS = [*range(16), 21, 40]
FEATURES = {
    *MODES.values(),
    "shared claim",
    "firstAvailable",
    "allocationMode All",
    "adminAccess",
    "matchAttribute",
    "distinctAttribute",
    "device taints tolerated",
    "several devices",
}


def test_kube_scheduler_and_allot_allocate_the_same_devices() -> None:
    result = agree(SEEDS)
    assert result.differences == []
    assert (result.claims_agreeing, result.pods_agreeing) == (result.claims, result.pods)
    assert set(result.covered) == FEATURES, result.covered
    assert set(result.refusals) == {
        "cannot allocate all claims",
        "node(s) had untolerated taint(s)",
    }
