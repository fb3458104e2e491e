"""The workload API through the real kubectl, on the host and in a tenant cluster:
``kubectl apply`` of ordinary Deployment/StatefulSet/Job/CronJob/Service/ServiceAccount/
Secret manifests, ``kubectl get`` with upstream's columns, ``/status`` writes and
``kubectl explain``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import running_platform
from tests.e2e.tenancy import CLASSES, Tenancy

MANIFEST = Path(__file__).resolve().parents[1] / "data" / "workloads" / "all-kinds.yaml"
Kubectl = Callable[..., Any]


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    root = tmp_path_factory.mktemp("workload-api")
    with running_platform(root) as cluster:
        cluster.kubectl("apply", "-f", str(CLASSES))
        running = Tenancy(cluster, root / "data")
        running.create_tenant("legal-ai")
        yield running


def kubectl_for(tenancy: Tenancy, where: str) -> Kubectl:
    if where == "host":
        return tenancy.cluster.kubectl
    return lambda *args, **kw: tenancy.as_tenant(where, *args, **kw)


def header(output: str) -> list[list[str]]:
    """The header line of each table in ``kubectl get`` output."""
    blocks = [b for b in output.strip().split("\n\n") if b.strip()]
    return [b.splitlines()[0].split() for b in blocks]


@pytest.mark.parametrize("where", ["host", "legal-ai"])
def test_apply_and_get_every_workload_kind(tenancy: Tenancy, where: str) -> None:
    kubectl = kubectl_for(tenancy, where)
    created = kubectl("apply", "-f", str(MANIFEST)).stdout.splitlines()
    assert created == [
        "deployment.apps/web created",
        "statefulset.apps/trainer created",
        "job.batch/pi created",
        "cronjob.batch/nightly created",
        "service/web created",
        "service/trainer created",
        "serviceaccount/trainer created",
        "secret/registry-token created",
    ]
    again = kubectl("apply", "-f", str(MANIFEST)).stdout
    assert "deployment.apps/web unchanged" in again
    assert "job.batch/pi unchanged" in again
    tables = kubectl("get", "deploy,rs,sts,job,cronjob,svc,sa,secret").stdout
    assert header(tables) == [
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        ["NAME", "DESIRED", "CURRENT", "READY", "AGE"],  # the Deployment's ReplicaSet
        ["NAME", "READY", "AGE"],
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"],
        ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
        ["NAME", "AGE"],
        ["NAME", "TYPE", "DATA", "AGE"],
    ]
    # the controllers run: the numbers move as the pods start and the Job's pods finish
    assert re.search(r"deployment\.apps/web +[0-2]/2 ", tables), tables
    assert re.search(r"job\.batch/pi +(Running|Complete) +[0-3]/3 ", tables), tables
    assert "cronjob.batch/nightly   @daily     Europe/Paris   False" in tables
    assert "secret/registry-token   Opaque   1" in tables
    service = json.loads(kubectl("get", "svc", "web", "-o", "json").stdout)
    assert service["spec"]["clusterIP"].startswith("10.")
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}
    ]
    assert kubectl("get", "svc", "trainer", "-o", "jsonpath={.spec.clusterIP}").stdout == "None"


@pytest.mark.parametrize("where", ["host", "legal-ai"])
def test_status_subresource_and_explain(tenancy: Tenancy, where: str) -> None:
    kubectl = kubectl_for(tenancy, where)
    kubectl("apply", "-f", str(MANIFEST))
    status = '{"status":{"replicas":2,"readyReplicas":1,"updatedReplicas":2,"availableReplicas":1}}'
    patched = kubectl(
        "patch", "deploy/web", "--subresource=status", "--type=merge", "-p", status, "-o", "json"
    )
    written = json.loads(patched.stdout)["status"]  # the controller rewrites it after
    assert (written["readyReplicas"], written["availableReplicas"]) == (1, 1)
    inconsistent = '{"status":{"readyReplicas":1,"availableReplicas":2}}'
    refused = kubectl(
        "patch", "deploy/web", "--subresource=status", "--type=merge", "-p", inconsistent,
        check=False,
    )  # fmt: skip
    assert "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas" in (
        refused.stderr
    )
    explained = kubectl("explain", "deployment.spec.strategy").stdout
    assert "rollingUpdate" in explained
    assert "KIND:       Deployment" in explained


@pytest.mark.parametrize("where", ["host", "legal-ai"])
def test_scale_subresource(tenancy: Tenancy, where: str) -> None:
    kubectl = kubectl_for(tenancy, where)
    kubectl("apply", "-f", str(MANIFEST))
    assert kubectl("scale", "deploy/web", "--replicas=3").stdout.strip() == (
        "deployment.apps/web scaled"
    )
    kubectl("scale", "sts/trainer", "--replicas=1")
    scale = json.loads(kubectl("get", "deploy/web", "--subresource=scale", "-o", "json").stdout)
    assert scale["kind"] == "Scale"
    assert scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"]["selector"] == "app=web"
    assert kubectl("get", "sts", "trainer", "-o", "jsonpath={.spec.replicas}").stdout == "1"
    refused = kubectl("scale", "job/pi", "--replicas=2", check=False)
    assert refused.returncode != 0


@pytest.mark.parametrize("where", ["host", "legal-ai"])
def test_default_service_account_in_every_namespace(tenancy: Tenancy, where: str) -> None:
    kubectl = kubectl_for(tenancy, where)
    kubectl("create", "namespace", "team-a")

    def default_accounts() -> list[str]:
        listing = json.loads(kubectl("get", "sa", "-A", "-o", "json").stdout)
        return sorted(
            i["metadata"]["namespace"]
            for i in listing["items"]
            if i["metadata"]["name"] == "default"
        )

    tenancy.wait(lambda: "team-a" in default_accounts(), "default account in team-a")
    assert {"default", "kube-system", "team-a"} <= set(default_accounts())
    kubectl("delete", "sa", "default", "-n", "team-a")
    tenancy.wait(lambda: "team-a" in default_accounts(), "default account back in team-a")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "runner", "namespace": "team-a"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    kubectl("create", "-f", "-", stdin=json.dumps(pod))
    spec = json.loads(kubectl("get", "pod", "runner", "-n", "team-a", "-o", "json").stdout)["spec"]
    assert spec["serviceAccountName"] == "default"


def test_invalid_workloads_get_upstream_messages(tenancy: Tenancy) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "zero"},
        "spec": {
            "selector": {"matchLabels": {"app": "zero"}},
            "strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "zero"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    refused = tenancy.as_tenant(
        "legal-ai", "apply", "-f", "-", stdin=json.dumps(deployment), check=False
    )
    assert refused.returncode == 1
    assert (
        'The Deployment "zero" is invalid: spec.strategy.rollingUpdate.maxUnavailable: '
        "Invalid value: 0: may not be 0 when `maxSurge` is 0"
    ) in refused.stderr
    tenancy.as_tenant("legal-ai", "apply", "-f", str(MANIFEST))
    job = json.loads(tenancy.as_tenant("legal-ai", "get", "job", "pi", "-o", "json").stdout)
    job["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    immutable = tenancy.as_tenant(
        "legal-ai", "replace", "-f", "-", stdin=json.dumps(job), check=False
    )
    assert 'The Job "pi" is invalid: ' in immutable.stderr
    assert "spec.selector: Invalid value: " in immutable.stderr
    assert "field is immutable" in immutable.stderr


def test_replacing_a_service_keeps_its_cluster_ip(tenancy: Tenancy) -> None:
    service: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "ports"},
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    kubectl = tenancy.cluster.kubectl
    kubectl("create", "-f", "-", stdin=json.dumps(service))
    before = json.loads(kubectl("get", "svc", "ports", "-o", "json").stdout)["spec"]
    service["spec"]["ports"] = [{"port": 80, "name": "http"}]
    kubectl("replace", "-f", "-", stdin=json.dumps(service))
    after = json.loads(kubectl("get", "svc", "ports", "-o", "json").stdout)["spec"]
    assert after["clusterIP"] == before["clusterIP"]
    assert after["ports"][0]["nodePort"] == before["ports"][0]["nodePort"]
    assert after["ports"][0]["name"] == "http"
    row = kubectl("get", "svc", "ports", "--no-headers").stdout.split()
    node_port = before["ports"][0]["nodePort"]
    assert row[:5] == ["ports", "NodePort", before["clusterIP"], "<none>", f"80:{node_port}/TCP"]


def test_apply_merges_lists_item_by_item(tenancy: Tenancy) -> None:
    """The schemas carry upstream's patch merge keys, so kubectl's apply removes what a
    manifest no longer lists (a container, an env var, a Service port) and re-applying an
    unchanged manifest changes nothing."""
    kubectl = tenancy.cluster.kubectl

    def deployment(containers: list[dict[str, Any]]) -> str:
        template = {"metadata": {"labels": {"app": "m"}}, "spec": {"containers": containers}}
        return json.dumps(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "merging"},
                "spec": {"selector": {"matchLabels": {"app": "m"}}, "template": template},
            }
        )

    two: list[dict[str, Any]] = [
        {"name": "a", "image": "x", "env": [{"name": "E1", "value": "1"}, {"name": "E2"}]},
        {"name": "b", "image": "y"},
    ]
    kubectl("apply", "-f", "-", stdin=deployment(two))
    assert "unchanged" in kubectl("apply", "-f", "-", stdin=deployment(two)).stdout
    kubectl(
        "apply",
        "-f",
        "-",
        stdin=deployment([{"name": "a", "image": "x2", "env": [{"name": "E2"}]}]),
    )
    spec = json.loads(kubectl("get", "deploy", "merging", "-o", "json").stdout)["spec"]
    assert spec["template"]["spec"]["containers"] == [
        {"name": "a", "image": "x2", "env": [{"name": "E2"}]}
    ]
    service: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "merging"},
        "spec": {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 443}]},
    }
    kubectl("apply", "-f", "-", stdin=json.dumps(service))
    assert "unchanged" in kubectl("apply", "-f", "-", stdin=json.dumps(service)).stdout
    service["spec"]["ports"] = [{"name": "b", "port": 443, "targetPort": 8443}]
    kubectl("apply", "-f", "-", stdin=json.dumps(service))
    ports = json.loads(kubectl("get", "svc", "merging", "-o", "json").stdout)["spec"]["ports"]
    assert ports == [{"name": "b", "port": 443, "protocol": "TCP", "targetPort": 8443}]


@pytest.mark.parametrize("where", ["host", "legal-ai"])
def test_kubectl_create_generators(tenancy: Tenancy, where: str) -> None:
    """kubectl's generators post protobuf bodies; each becomes the object it describes."""
    kubectl = kubectl_for(tenancy, where)
    kubectl("create", "namespace", "gen")
    for args in (
        ["deployment", "gen-web", "--image=nginx", "--replicas=2", "--port=80"],
        ["job", "gen-once", "--image=busybox", "--", "echo", "hi"],
        ["cronjob", "gen-tick", "--image=busybox", "--schedule=*/5 * * * *", "--", "date"],
        ["secret", "generic", "gen-creds", "--from-literal=user=admin"],
        ["serviceaccount", "gen-bot"],
        ["service", "nodeport", "gen-np", "--tcp=80:8080"],
    ):
        kubectl("create", "-n", "gen", *args)
    kubectl("expose", "-n", "gen", "deployment", "gen-web", "--port=80", "--target-port=8080")
    kubectl("create", "-n", "gen", "job", "gen-manual", "--from=cronjob/gen-tick")
    deployment = json.loads(kubectl("get", "-n", "gen", "deploy", "gen-web", "-o", "json").stdout)
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["ports"]) == ("nginx", [{"containerPort": 80}])
    job = json.loads(kubectl("get", "-n", "gen", "job", "gen-manual", "-o", "json").stdout)
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    secret = json.loads(kubectl("get", "-n", "gen", "secret", "gen-creds", "-o", "json").stdout)
    assert secret["data"] == {"user": "YWRtaW4="}
    services = kubectl("get", "-n", "gen", "svc", "--no-headers").stdout.splitlines()
    assert [line.split()[:2] for line in services] == [
        ["gen-np", "NodePort"],
        ["gen-web", "ClusterIP"],
    ]
