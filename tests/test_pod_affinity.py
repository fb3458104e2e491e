"""Required inter-pod affinity and anti-affinity (kube-scheduler's InterPodAffinity filter).

The table ``tests/scenarios/pod-affinity.yaml`` gives nodes, the pods on them and, per
incoming pod, each node's reason in upstream's words; the filter alone must give exactly
those. Then through the platform's scheduler: pods with affinity to their own clique
(``nvidia.com/gpu.clique``) and anti-affinity to each other's host fill the clique's two
nodes, never the clique-less one, and a third waits with kube-scheduler's message; a pod
waiting for its affinity is placed once a matching pod is. The table's ``validation`` rows:
pod terms refused as kube-apiserver refuses them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.api import core_v1 as corev1
from allot.controllers import podaffinity
from allot.controllers.context import ControllerContext
from allot.platform import Platform
from allot.validation.core import validate_pod
from tests.queueing_platform import settle
from tests.test_tenant_views import _contexts, _events, _run

SCENARIO = yaml.safe_load(
    (Path(__file__).parent / "scenarios" / "pod-affinity.yaml").read_text(encoding="utf-8")
)
CLIQUE = "nvidia.com/gpu.clique"


def _pod(entry: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    affinity = {
        kind: {podaffinity.REQUIRED: entry[key]}
        for kind, key in (("podAffinity", "affinity"), ("podAntiAffinity", "antiAffinity"))
        if key in entry
    }
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if affinity:
        spec["affinity"] = affinity
    if "node" in entry:
        spec["nodeName"] = entry["node"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": entry.get("name", "incoming"),
            "namespace": entry.get("namespace", namespace),
            "labels": entry.get("labels", {}),
        },
        "spec": spec,
        "status": {"phase": entry.get("phase", "Running")},
    }


@pytest.mark.parametrize("case", SCENARIO["cases"], ids=[c["name"] for c in SCENARIO["cases"]])
def test_each_nodes_reason_is_upstreams(case: dict[str, Any]) -> None:
    nodes = SCENARIO["nodes"]
    existing = [p for p in (_pod(e) for e in SCENARIO["existing"]) if podaffinity.assigned(p)]
    state = podaffinity.prefilter(
        _pod(case["pod"]), existing, nodes.get, lambda ns: SCENARIO["namespaces"].get(ns, {})
    )
    assert state is not None
    reasons = {
        name: state.problem(
            corev1.Node.model_validate({"metadata": {"name": name, "labels": labels}}),
            lambda ns: SCENARIO["namespaces"].get(ns, {}),
        )
        for name, labels in nodes.items()
    }
    assert reasons == case["reasons"]


def test_a_pod_without_terms_and_no_anti_affinity_anywhere_is_skipped() -> None:
    plain = _pod({"name": "p", "node": "gb-a-0", "labels": {"app": "x"}})
    state = podaffinity.prefilter(_pod({}), [plain], SCENARIO["nodes"].get, lambda ns: {})
    assert state is None


def _member(name: str) -> dict[str, Any]:
    """A pod of a two-node domain: in its clique, one per host."""
    same = {"matchLabels": {"domain": "d1"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"domain": "d1"}},
        "spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "affinity": {
                "podAffinity": {
                    podaffinity.REQUIRED: [{"labelSelector": same, "topologyKey": CLIQUE}]
                },
                "podAntiAffinity": {
                    podaffinity.REQUIRED: [
                        {"labelSelector": same, "topologyKey": "kubernetes.io/hostname"}
                    ]
                },
            },
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }


def _label(host: ControllerContext, name: str, value: str) -> None:
    node = host.get("Node", "", name)
    assert node is not None
    node["metadata"].setdefault("labels", {})[CLIQUE] = value
    host.update("Node", node, "test")


def test_the_scheduler_keeps_a_domain_in_one_clique_one_pod_per_node() -> None:
    async def scenario(api: Platform) -> None:
        host, _ = _contexts(api)
        # seed 000's nodes: a100-mig-1g5gb-pool-0 (no clique), a100-whole-pool-0, cpu-pool-0
        _label(host, "a100-whole-pool-0", "cluster-1.7")
        _label(host, "cpu-pool-0", "cluster-1.7")
        await settle(api)
        placed = {}
        for name in ("m0", "m1"):
            host.create("Pod", _member(name), "test")
            await settle(api)
            pod = host.get("Pod", "default", name)
            assert pod is not None
            placed[name] = pod["spec"].get("nodeName")
        assert sorted(placed.values()) == ["a100-whole-pool-0", "cpu-pool-0"], placed
        host.create("Pod", _member("m2"), "test")
        await settle(api)
        waiting = host.get("Pod", "default", "m2")
        assert waiting is not None
        assert not waiting["spec"].get("nodeName")
        message = _events(host, "default", "m2")["FailedScheduling"]["message"]
        assert message.startswith(
            "0/3 nodes are available: 1 node(s) didn't match pod affinity rules, "
            "2 node(s) didn't match pod anti-affinity rules."
        ), message
        host.delete("Pod", "default", "m1", {"gracePeriodSeconds": 0})
        await settle(api, rounds=6)
        moved = host.get("Pod", "default", "m2")
        assert moved is not None
        assert moved["spec"].get("nodeName") == "cpu-pool-0"  # m1's node, free again

    _run(scenario)


def test_a_pod_waiting_for_its_affinity_is_placed_once_a_matching_pod_is() -> None:
    async def scenario(api: Platform) -> None:
        host, _ = _contexts(api)
        _label(host, "cpu-pool-0", "cluster-1.7")
        follower = _member("follower")
        follower["metadata"]["labels"] = {"role": "follower"}  # does not match its own terms
        del follower["spec"]["affinity"]["podAntiAffinity"]
        host.create("Pod", follower, "test")
        await settle(api)
        waiting = host.get("Pod", "default", "follower")
        assert waiting is not None
        assert not waiting["spec"].get("nodeName")
        message = _events(host, "default", "follower")["FailedScheduling"]["message"]
        assert message.startswith(
            "0/3 nodes are available: 3 node(s) didn't match pod affinity rules."
        )
        leader = _member("leader")
        leader["spec"]["nodeName"] = "cpu-pool-0"  # bound by hand: only a pod event follows
        host.create("Pod", leader, "test")
        await settle(api)
        placed = host.get("Pod", "default", "follower")
        assert placed is not None
        assert placed["spec"].get("nodeName") == "cpu-pool-0"

    _run(scenario)


@pytest.mark.parametrize(
    "case", SCENARIO["validation"], ids=[c["name"] for c in SCENARIO["validation"]]
)
def test_pod_affinity_terms_are_validated_as_kube_apiserver_does(case: dict[str, Any]) -> None:
    pod = corev1.Pod.model_validate(
        {
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "affinity": case["affinity"]},
        }
    )
    assert [str(e) for e in validate_pod(pod)] == case["errors"]
