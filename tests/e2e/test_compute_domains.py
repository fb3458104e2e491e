"""ComputeDomains end to end with the real kubectl: a fleet with an NVLink clique of two nodes
and a GPU node outside any clique.

The publisher installs the ComputeDomain CRD, the two ComputeDomain classes and each GPU
node's ``channel-0``/``daemon-0`` slice. A user creates a ComputeDomain with ``numNodes: 2``
and a two-replica Deployment whose pods take the domain's channel and keep to one clique
(podAffinity on ``nvidia.com/gpu.clique``, one per node by podAntiAffinity): both run on the
clique's nodes, never on the clique-less one that name order would try first; the
controller made the channel template and the daemons, labelled the nodes, and the domain
is Ready with both nodes in its status. Removing the workload removes the labels and the
daemons; deleting the domain removes its objects and then the domain.

A tenant does the same in its own cluster: the CRD is copied into it, its domain's channel
template is its own (synced to the host like any template), the daemons run on the host,
its pods' twins keep to the clique, its domain turns Ready, and its quota counts the
channels as any class's devices; a tenant not entitled to the channel class gets an Event
saying its template was refused, in the entitlement's words.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.driver import computedomain as cd
from tests.conftest import EXAMPLES, load_yaml_documents
from tests.e2e.conftest import Cluster, KubectlUser, running_platform
from tests.e2e.tenancy import Tenancy

pytestmark = pytest.mark.slow
EXAMPLE_FLEET = EXAMPLES / "fleets" / "nvlink-cliques.yaml"
FLEET = yaml.safe_load(EXAMPLE_FLEET.read_text(encoding="utf-8"))
CLIQUE = FLEET["pools"][1]["clique"]
DOMAIN, WORKLOAD = load_yaml_documents(EXAMPLES / "workloads" / "compute-domain.yaml")


def _wait(what: str, check: Callable[[], Any], seconds: float = 30) -> Any:
    """``check()``'s first truthy value, asked every 0.2 s (main's e2e helpers have
    ``wait_until`` for this once merged)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _running(cluster: Cluster, selector: str, namespace: str = "default") -> list[Any]:
    pods = cluster.get_json("pods", "-n", namespace, "-l", selector)["items"]
    return pods if pods and all(p["status"].get("phase") == "Running" for p in pods) else []


def _labelled(cluster: Cluster) -> dict[str, str]:
    nodes = cluster.get_json("nodes")["items"]
    return {
        n["metadata"]["name"]: n["metadata"]["labels"][cd.DOMAIN_LABEL]
        for n in nodes
        if cd.DOMAIN_LABEL in n["metadata"]["labels"]
    }


def third_pod_message(cluster: KubectlUser, seconds: float = 60) -> str:
    """The scheduler's message on the workload's pod that found no node."""

    def unschedulable() -> str:
        for pod in cluster.get_json("pods", "-l", "app=train")["items"]:
            for condition in pod.get("status", {}).get("conditions") or []:
                if condition["type"] == "PodScheduled" and condition["status"] == "False":
                    return str(condition.get("message", ""))
        return ""

    return str(_wait("a pod that fits no node", unschedulable, seconds))


def test_a_two_node_domain_runs_in_one_clique(tmp_path: Path) -> None:
    with running_platform(tmp_path, FLEET) as cluster:
        classes = {c["metadata"]["name"] for c in cluster.get_json("deviceclasses")["items"]}
        assert {cd.DAEMON_CLASS, cd.CHANNEL_CLASS} <= classes
        slices = cluster.get_json("resourceslices", f"--field-selector=spec.driver={cd.DRIVER}")
        published = {
            s["spec"]["nodeName"]: sorted(d["name"] for d in s["spec"]["devices"])
            for s in slices["items"]
        }
        assert published == {n: ["channel-0", "daemon-0"] for n in ("a-pcie-0", "nvl-0", "nvl-1")}

        cluster.apply(DOMAIN)
        domain = _wait(
            "the domain's channel template",
            lambda: cluster.get_json("computedomains", "train").get("status"),
        )
        assert domain == {"status": "NotReady"}
        uid = cluster.get_json("computedomain", "train")["metadata"]["uid"]
        template = cluster.get_json("resourceclaimtemplate", "train-channel")
        config = template["spec"]["spec"]["devices"]["config"][0]["opaque"]
        assert config == {
            "driver": cd.DRIVER,
            "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "ComputeDomainChannelConfig",
                "domainID": uid,
                "allocationMode": "Single",
            },
        }
        daemons = cluster.get_json("daemonsets", "-n", cd.DRIVER_NAMESPACE)["items"]
        assert [d["metadata"]["name"] for d in daemons] == [f"computedomain-daemon-{uid}"]

        cluster.apply(WORKLOAD)
        pods = _wait("the workload's pods", lambda: _running(cluster, "app=train"), 90)
        assert sorted(p["spec"]["nodeName"] for p in pods) == ["nvl-0", "nvl-1"]
        assert _labelled(cluster) == {"nvl-0": uid, "nvl-1": uid}
        daemon_pods = _running(cluster, f"{cd.DOMAIN_LABEL}={uid}", cd.DRIVER_NAMESPACE)
        assert sorted(p["spec"]["nodeName"] for p in daemon_pods) == ["nvl-0", "nvl-1"]
        status = _wait(
            "the domain Ready",
            lambda: (
                (s := cluster.get_json("computedomain", "train")["status"])["status"] == "Ready"
                and s
            ),
        )
        assert [(n["name"], n["cliqueID"], n["index"], n["status"]) for n in status["nodes"]] == [
            ("nvl-0", CLIQUE, 0, "Ready"),
            ("nvl-1", CLIQUE, 1, "Ready"),
        ]
        events = cluster.get_json(
            "events", "--field-selector=reason=FailedPrepareDynamicResources"
        )["items"]
        waited = {e["message"].split(": prepare devices failed: ")[-1] for e in events}
        assert waited == {
            "error asserting ComputeDomain Ready: current node not ready in ComputeDomain"
        }, events  # each channel waited for its node's daemon
        shown = cluster.kubectl("get", "computedomains").stdout
        assert shown.split() == ["NAME", "AGE", "train", shown.split()[-1]], shown

        scaled = copy.deepcopy(WORKLOAD)
        scaled["spec"]["replicas"] = 3
        cluster.apply(scaled)
        assert third_pod_message(cluster) == (
            "0/3 nodes are available: 1 node(s) didn't match pod affinity rules, "
            "2 node(s) didn't match pod anti-affinity rules."
        )  # kube-scheduler's, less its preemption part (docs/conformance.md)
        cluster.kubectl("delete", "deployment", "train")
        _wait("the labels gone", lambda: not _labelled(cluster) or None)
        _wait(
            "the daemons gone",
            lambda: not cluster.get_json("pods", "-n", cd.DRIVER_NAMESPACE)["items"] or None,
        )
        cluster.kubectl("delete", "computedomain", "train", "--timeout=30s")
        assert not cluster.get_json("computedomains")["items"]
        left = cluster.kubectl("get", "resourceclaimtemplate", "train-channel", check=False)
        assert left.returncode != 0, left
        assert "NotFound" in left.stderr, left
        assert not cluster.get_json("daemonsets", "-n", cd.DRIVER_NAMESPACE)["items"]


def _tenant_values(path: Path) -> Path:
    """legal-ai's values: claims and templates synced, the classes labelled for it."""
    path.write_text(
        yaml.safe_dump(
            {
                "sync": {
                    "toHost": {
                        "resourceClaims": {"enabled": True},
                        "resourceClaimTemplates": {"enabled": True},
                    },
                    "fromHost": {
                        "deviceClasses": {
                            "enabled": True,
                            "selector": {"matchLabels": {"gpu.platform/tenant": "legal-ai"}},
                        }
                    },
                }
            }
        )
    )
    return path


def test_a_tenant_asks_for_a_two_node_domain(tmp_path: Path) -> None:
    with running_platform(tmp_path, FLEET) as cluster:
        tenancy = Tenancy(cluster, tmp_path / "data")
        cluster.kubectl("label", "deviceclass", cd.CHANNEL_CLASS, "gpu.platform/tenant=legal-ai")
        tenancy.create_tenant(
            "legal-ai",
            "-f",
            str(_tenant_values(tmp_path / "values.yaml")),
            "--quota",
            f"{cd.CHANNEL_CLASS}.deviceclass.resource.k8s.io/devices=2",
        )
        tenancy.wait(
            lambda: (
                tenancy.as_tenant("legal-ai", "get", "crd", cd.RESOURCE, check=False).returncode
                == 0
            ),
            "the ComputeDomain CRD in the tenant's cluster",
        )
        documents = "\n---\n".join(json.dumps(d) for d in (DOMAIN, WORKLOAD))
        tenancy.as_tenant("legal-ai", "apply", "-f", "-", stdin=documents)
        pods = tenancy.wait(
            lambda: (
                (p := tenancy.tenant_json("legal-ai", "pods", "-l", "app=train")["items"])
                and len(p) == 2
                and all(x["status"].get("phase") == "Running" for x in p)
                and p
            ),
            "the tenant's pods running",
            60,
        )
        twins = cluster.get_json("pods", "-n", "tenant-legal-ai", "-l", "app=train")["items"]
        assert sorted(t["spec"]["nodeName"] for t in twins) == ["nvl-0", "nvl-1"]
        assert len(pods) == 2
        status = tenancy.wait(
            lambda: (
                (s := tenancy.tenant_json("legal-ai", "computedomain", "train").get("status"))
                and s["status"] == "Ready"
                and s
            ),
            "the tenant's domain Ready",
        )
        assert [n["name"] for n in status["nodes"]] == ["nvl-0", "nvl-1"]
        uid = tenancy.tenant_json("legal-ai", "computedomain", "train")["metadata"]["uid"]
        assert _labelled(cluster) == {"nvl-0": uid, "nvl-1": uid}
        (quota,) = cluster.get_json("resourcequota", "-n", "tenant-legal-ai")["items"]
        devices = f"{cd.CHANNEL_CLASS}.deviceclass.resource.k8s.io/devices"
        assert quota["status"]["used"] == {devices: "2"}  # the channels count as any class's

        # a tenant not entitled to the channel class gets no channel template
        tenancy.create_tenant("research-ai")
        tenancy.wait(
            lambda: (
                tenancy.as_tenant("research-ai", "get", "crd", cd.RESOURCE, check=False).returncode
                == 0
            ),
            "the ComputeDomain CRD in research-ai's cluster",
        )
        tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=json.dumps(DOMAIN))
        refused = tenancy.wait(
            lambda: [
                e for e in tenancy.tenant_events("research-ai", "train") if "FailedCreate" in e
            ],
            "research-ai's domain refused its channel template",
        )
        assert refused == [
            "FailedCreate: error creating ResourceClaimTemplate 'default/train-channel': "
            'resourceclaimtemplates.resource.k8s.io "train-channel" is forbidden: '
            "ValidatingAdmissionPolicy 'allot-tenant-claims' with binding "
            "'allot-tenant-claims.research-ai' denied request: device class "
            f"{cd.CHANNEL_CLASS} is not in the entitlement of tenant research-ai (entitled: "
            "<none>)"
        ]
