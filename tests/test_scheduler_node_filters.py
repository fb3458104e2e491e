"""The scheduler's node filters, in-process (no HTTP): a cordoned node and a node with a
taint the pod does not tolerate are refused with kube-scheduler's reasons, counted in the
``FailedScheduling`` message; once the taint is gone the waiting pod is placed. Pods
without tolerations, node selector or affinity have their filter worked out once per node
list (``Scheduler._node_check``), so this also proves a node change is seen. A pod naming
one claim in two entries has it allocated once."""

from __future__ import annotations

from allot.controllers.context import ControllerContext
from allot.platform import Platform
from tests.queueing_platform import settle
from tests.test_tenancy_convergence import _claim
from tests.test_tenant_views import _contexts, _events, _run

TAINT = {"key": "team", "value": "a", "effect": "NoSchedule"}


def _plain_pod(name: str, claim: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resourceClaims": [{"name": "g", "resourceClaimName": claim}],
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "g"}]}}],
        },
    }


def _set_node(host: ControllerContext, name: str, **spec: object) -> None:
    node = host.get("Node", "", name)
    assert node is not None
    node["spec"] = {k: v for k, v in {**node.get("spec", {}), **spec}.items() if v is not None}
    host.update("Node", node, "test")


def test_cordoned_and_tainted_nodes_are_refused_until_the_taint_goes() -> None:
    async def scenario(api: Platform) -> None:
        host, _ = _contexts(api)
        names = sorted(n["metadata"]["name"] for n in host.list("Node"))
        keep = "a100-whole-pool-0"  # seed 000's node with a whole A100 (claim "a"'s class)
        assert keep in names
        for name in names:
            if name == keep:
                _set_node(host, name, taints=[TAINT], unschedulable=None)
            else:
                _set_node(host, name, unschedulable=True, taints=None)
        await settle(api)
        host.create("ResourceClaim", _claim("legal-ai", "a"), "test")
        host.create("Pod", _plain_pod("plain", "a"), "test")
        await settle(api)
        pod = host.get("Pod", "default", "plain")
        assert pod is not None
        assert not pod["spec"].get("nodeName")
        failed = _events(host, "default", "plain")["FailedScheduling"]["message"]
        assert failed.startswith(
            f"0/{len(names)} nodes are available: 1 node(s) had untolerated taint(s), "
            f"{len(names) - 1} node(s) were unschedulable."
        ), failed

        _set_node(host, keep, taints=None)
        await settle(api)
        pod = host.get("Pod", "default", "plain")
        assert pod is not None
        assert pod["spec"].get("nodeName") == keep

    _run(scenario)


def test_a_claim_named_by_two_entries_of_a_pod_is_allocated_once() -> None:
    """With ``allocationMode: All`` a second allocation of the same claim finds every device
    taken by the first, so allocating per entry refused the pod."""

    async def scenario(api: Platform) -> None:
        host, _ = _contexts(api)
        names = sorted(n["metadata"]["name"] for n in host.list("Node"))
        keep = "a100-whole-pool-0"
        for name in names:
            if name != keep:
                _set_node(host, name, unschedulable=True)
        await settle(api)
        claim = _claim("legal-ai", "every")
        claim["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] = "All"
        host.create("ResourceClaim", claim, "test")
        pod = _plain_pod("twice", "every")
        spec = pod["spec"]
        assert isinstance(spec, dict)
        spec["resourceClaims"].append({"name": "h", "resourceClaimName": "every"})
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
        host.create("Pod", pod, "test")
        await settle(api)
        stored = host.get("Pod", "default", "twice")
        assert stored is not None
        refusal = _events(host, "default", "twice").get("FailedScheduling")
        assert stored["spec"].get("nodeName") == keep, refusal
        allocated = host.get("ResourceClaim", "default", "every")
        assert allocated is not None
        results = allocated["status"]["allocation"]["devices"]["results"]
        devices = [r["device"] for r in results]
        assert len(devices) == len(set(devices)) > 0  # every device of the node, once
        assert {r["request"] for r in results} == {"g"}
        assert [entry["name"] for entry in allocated["status"]["reservedFor"]] == ["twice"]

    _run(scenario)
