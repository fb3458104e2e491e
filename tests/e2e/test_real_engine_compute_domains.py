"""ComputeDomains on real Kubernetes 1.36 (issue 19's engine): what it can run of them.

The publisher installs the same CRD, classes and ``channel-0``/``daemon-0`` slices, and
kube-apiserver accepts them and a ComputeDomain; kube-scheduler's own InterPodAffinity and
DynamicResources plugins place the two-replica workload in the one clique, never on the
clique-less node, and refuse a third pod with the same reasons allot's scheduler gives.
What this engine cannot do: allot's ComputeDomain controller belongs to the embedded
control plane, so here the channel template is the one that controller would create
(made by the test), and no daemon runs (kwok nodes prepare nothing). Skips without
``make kube``.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest

from allot.driver import computedomain as cd
from tests.e2e.test_compute_domains import DOMAIN, FLEET, WORKLOAD, third_pod_message
from tests.realkube import RealKube, needs_real_kube, running_real_kube

pytestmark = [pytest.mark.slow, needs_real_kube]


def _placed(kube: RealKube, timeout: float = 90) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = kube.get_json("pods", "-l", "app=train")["items"]
        nodes = [p["spec"].get("nodeName") for p in pods]
        if len(nodes) == 2 and all(nodes):
            return sorted(str(n) for n in nodes)
        time.sleep(0.5)
    raise AssertionError("the workload's pods were not both scheduled")


def test_kube_scheduler_keeps_the_domains_pods_in_one_clique(tmp_path: Path) -> None:
    with running_real_kube(tmp_path, FLEET) as kube:
        crds = [c["metadata"]["name"] for c in kube.get_json("crds")["items"]]
        assert cd.RESOURCE in crds
        kube.apply(DOMAIN)
        domain: dict[str, Any] = kube.get_json("computedomain", "train")
        assert domain["spec"]["channel"]["allocationMode"] == "Single"  # the CRD's default
        kube.apply(cd.channel_template(domain))  # what the embedded controller creates
        kube.apply(WORKLOAD)
        assert _placed(kube) == ["nvl-0", "nvl-1"]
        scaled = copy.deepcopy(WORKLOAD)
        scaled["spec"]["replicas"] = 3
        kube.apply(scaled)
        assert third_pod_message(kube).startswith(
            "0/3 nodes are available: 1 node(s) didn't match pod affinity rules, "
            "2 node(s) didn't match pod anti-affinity rules."
        )
