"""Operations end to end: a pending claim raises and clears its alert in all three places,
the audit log matches the allocations of a scripted run exactly, usage sums check by hand,
``/metrics`` and ``allot top`` show the fleet."""

from __future__ import annotations

import datetime as dt
import json
import re
import select
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from allot.apiserver.server import ServerThread
from allot.cli.main import main as allot
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import Publisher, publish
from allot.kube.client import Client
from allot.kube.remote import RemoteClient
from allot.ops.rules import AlertSettings, prometheus_rule
from allot.platform import build
from tests.e2e.conftest import Cluster
from tests.e2e.tenancy import CLASSES, REPO, SEEDS, Tenancy

pytestmark = pytest.mark.slow
LEGAL = str(REPO / "examples/tenancy/legal-ai-workload.yaml")
RESEARCH = str(REPO / "examples/tenancy/research-ai-workload.yaml")
FAST = AlertSettings(pending_claim_seconds=1, interval_seconds=0.2)


@pytest.fixture
def tenancy(tmp_path: Path) -> Iterator[Tenancy]:
    data = tmp_path / "data"
    with ServerThread(data, api=build(data, alert_settings=FAST).server) as server:
        publish(server.endpoint.kubeconfigs["host"], parse_fleet(SEED_000_FLEET))
        running = Tenancy(Cluster(server, tmp_path / "home"), data)
        running.cluster.kubectl("apply", "-f", str(CLASSES))
        running.create_tenant("legal-ai", "-f", str(SEEDS / "000-legal-ai-vcluster-config.yaml"))
        running.create_tenant(
            "research-ai", "-f", str(SEEDS / "000-research-ai-vcluster-config.yaml")
        )
        yield running


def _scrape(tenancy: Tenancy, path: str = "/clusters/host/metrics") -> str:
    server = tenancy.cluster.server
    token = server.api.registry.tokens.ensure("host")
    request = urllib.request.Request(
        server.endpoint.url + path, headers={"Authorization": f"Bearer {token}"}
    )
    context = ssl.create_default_context(cafile=str(server.endpoint.tls.ca_cert))
    with urllib.request.urlopen(request, context=context) as response:
        return str(response.read().decode())


def _claim_only(path: str) -> str:
    return Path(path).read_text().split("\n---\n")[0]


def test_a_pending_claim_alert_is_raised_then_cleared(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=_claim_only(RESEARCH))
    series = 'allot_alert{rule="ClaimPendingTooLong",severity="warning",subject="ResourceClaim/'
    tenancy.wait(lambda: series in _scrape(tenancy), "the alert series")
    host_events = tenancy.host_json("events", "-n", "tenant-research-ai")["items"]
    assert any(e["reason"] == "ClaimPendingTooLong" for e in host_events)
    tenant_events = tenancy.tenant_events("research-ai", "research-gpu-slice")
    message = next(e for e in tenant_events if e.startswith("ClaimPendingTooLong"))
    assert "claim research-gpu-slice of tenant research-ai has been pending" in message
    assert "no pod uses it yet" in message
    assert allot(["alerts", "--data-dir", str(tenancy.data_dir)]) == 0
    assert "ClaimPendingTooLong" in capsys.readouterr().out
    assert [a["spec"]["rule"] for a in tenancy.host_json("alerts")["items"]] == [
        "ClaimPendingTooLong"
    ]
    tenancy.as_tenant("research-ai", "apply", "-f", RESEARCH)  # its pod gets it allocated
    tenancy.wait(lambda: series not in _scrape(tenancy), "the alert series gone")
    tenancy.wait(lambda: tenancy.host_json("alerts")["items"] == [], "the Alert object gone")
    assert allot(["alerts", "--data-dir", str(tenancy.data_dir)]) == 0
    assert "No alerts are firing." in capsys.readouterr().err  # stderr, as kubectl's
    resolved = tenancy.tenant_events("research-ai", "research-gpu-slice")
    assert any(e.startswith("ClaimPendingTooLongResolved") for e in resolved)


def test_audit_matches_the_allocations_and_usage_adds_up(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    tenancy.as_tenant("legal-ai", "apply", "-f", LEGAL)
    tenancy.as_tenant("research-ai", "apply", "-f", RESEARCH)
    claims = tenancy.wait(
        lambda: [
            c for c in tenancy.host_json("resourceclaims", "-A")["items"]
            if (c.get("status") or {}).get("allocation")
        ] if len(tenancy.host_json("resourceclaims", "-A")["items"]) == 2 else None,
        "two allocations",
    )  # fmt: skip
    tenancy.wait(lambda: len(claims) == 2, "both allocated")
    tenancy.as_tenant("legal-ai", "delete", "pod", "contract-summarizer")
    tenancy.wait(
        lambda: (
            not (
                tenancy.tenant_json("legal-ai", "resourceclaim", "legal-whole-gpu").get("status")
                or {}
            ).get("allocation")
        ),
        "the whole GPU released",
    )
    time.sleep(0.3)
    assert allot(["audit", "-o", "json", "--data-dir", str(tenancy.data_dir)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "List")
    entries = listed["items"]
    expected = {
        (c["metadata"]["labels"]["allot.dev/tenant"], r["pool"], r["device"])
        for c in claims
        for r in c["status"]["allocation"]["devices"]["results"]
    }
    allocations = [
        (e["tenant"], e["pool"], e["device"]) for e in entries if e["action"] == "allocate"
    ]
    assert sorted(allocations) == sorted(expected)
    releases = [
        (e["tenant"], e["device"], e["claim"], e["pod"])
        for e in entries
        if e["action"] == "release"
    ]
    assert releases == [("legal-ai", "gpu-0", "legal-whole-gpu", "contract-summarizer")]
    places = {(e["tenant"], e["namespace"], e["tenant_namespace"]) for e in entries}
    assert places == {
        ("legal-ai", "tenant-legal-ai", "default"),
        ("research-ai", "tenant-research-ai", "default"),
    }
    whole = next(e for e in entries if e["action"] == "allocate" and e["device"] == "gpu-0")
    assert (whole["node"], whole["device_class"], whole["memory"]) == (
        "a100-whole-pool-0", "gpu-whole", 40 * (1 << 30),
    )  # fmt: skip
    assert allot(["usage", "-o", "json", "--data-dir", str(tenancy.data_dir)]) == 0
    usage = {row["tenant"]: row for row in json.loads(capsys.readouterr().out)["items"]}
    release = next(e for e in entries if e["action"] == "release")
    held = _parse(release["time"]) - _parse(whole["time"])
    assert usage["legal-ai"]["device_hours"] == pytest.approx(held.total_seconds() / 3600, abs=1e-6)
    assert usage["legal-ai"]["gpu_memory_gib_hours"] == pytest.approx(
        40 * held.total_seconds() / 3600, abs=1e-5
    )
    assert (
        allot(
            ["audit", "--tenant", "research-ai", "-o", "csv", "--data-dir", str(tenancy.data_dir)]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("time,action,tenant,tenant_namespace,claim,")
    assert lines[0].endswith(",namespace")
    assert len(lines) == 2


def _parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_metrics_and_top_show_the_fleet(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    tenancy.as_tenant("research-ai", "apply", "-f", RESEARCH)
    tenancy.wait(
        lambda: (
            'allot_class_devices_allocated{class="gpu-slice",driver="gpu.nvidia.com",'
            'node="a100-mig-1g5gb-pool-0",pool="a100-mig-1g5gb-pool-0"} 1.0' in _scrape(tenancy)
        ),
        "the allocated slice in the metrics",
    )
    text = _scrape(tenancy)
    assert (
        'allot_class_devices_free{class="gpu-slice",driver="gpu.nvidia.com",'
        'node="a100-mig-1g5gb-pool-0",pool="a100-mig-1g5gb-pool-0"} 6.0' in text
    )
    assert 'allot_tenant_gpu_memory_allocated_bytes{tenant="research-ai"} 5.100273664e+09' in text
    assert 'allot_claims{class="gpu-slice",state="allocated",tenant="research-ai"} 1.0' in text
    assert "allot_allocator_duration_seconds_count" in text
    assert 'allot_controller_reconcile_duration_seconds_count{controller="tenant-sync"}' in text
    assert allot(["top", "--once", "--data-dir", str(tenancy.data_dir)]) == 0
    out = capsys.readouterr().out
    assert "a100-mig-1g5gb-pool-0" in out
    assert "research-ai" in out
    # piped, `allot top` prints frame after frame (as `top -b`), each flushed at once
    command = [sys.executable, "-m", "allot", "top", "--interval", "0.2"]
    with subprocess.Popen(
        [*command, "--data-dir", str(tenancy.data_dir)], stdout=subprocess.PIPE, text=True
    ) as top:
        assert top.stdout is not None
        try:
            frames = 0
            deadline = time.monotonic() + 30
            while frames < 2 and time.monotonic() < deadline:
                ready, _, _ = select.select([top.stdout], [], [], 1.0)
                if ready:
                    frames += top.stdout.readline().startswith("Pools (")
            assert frames == 2
        finally:
            top.kill()


def test_metrics_need_the_host_token(tenancy: Tenancy) -> None:
    result = tenancy.as_tenant("legal-ai", "get", "--raw", "/metrics", check=False)
    assert result.returncode != 0


SUFFIXES = ("bucket", "count", "sum")
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
                "or", "unless", "offset", "le"}  # fmt: skip


def metric_names(expression: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers outside strings, label
    matchers, ranges and grouping lists that are not functions or keywords."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text):
        following = text[match.end() :].lstrip()[:1]
        if following != "(" and match.group() not in PROMQL_WORDS:
            names.add(match.group())
    return names


KUEUE_METRICS = {
    "kueue_pending_workloads",
    "kueue_cluster_queue_resource_usage",
    "kueue_cluster_queue_nominal_quota",
}
"""Kueue's own metrics (``pkg/metrics``), which TenantBelowGuarantee reads on real clusters."""


def test_metrics_follow_prometheus_conventions_and_every_query_names_a_metric(
    tenancy: Tenancy,
) -> None:
    tenancy.as_tenant("legal-ai", "apply", "-f", LEGAL)  # a claim and the pod that gets it
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=_claim_only(RESEARCH))
    tenancy.wait(lambda: "allot_alert{" in _scrape(tenancy), "the pending claim's alert")
    tenancy.as_tenant("legal-ai", "delete", "-f", LEGAL)
    tenancy.wait(lambda: "allot_device_releases_total{" in _scrape(tenancy), "the release counted")
    families = list(text_string_to_metric_families(_scrape(tenancy)))
    samples = [s for f in families for s in f.samples]
    names = {s.name for s in samples}
    assert not [f.name for f in families if f.type == "gauge" and f.name.endswith("_total")]
    assert not [n for n in names if n.endswith("_created")]
    assert all(re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", n) for n in names)
    assert sum(s.value for s in samples if s.name == "allot_devices") == 8  # 1 GPU + 7 MIG
    per_class = sum(s.value for s in samples if s.name == "allot_class_devices")
    assert per_class >= 8  # the per-class view may count a device in several classes
    tenants = {s.labels["tenant"] for s in samples if "tenant" in s.labels}
    assert tenants >= {"legal-ai", "research-ai"}
    assert all(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", t) for t in tenants if t)
    counted = {
        (s.name, s.labels["tenant"], s.labels["class"]): s.value
        for s in samples
        if s.name in ("allot_device_allocations_total", "allot_device_releases_total")
    }
    assert counted[("allot_device_allocations_total", "legal-ai", "gpu-whole")] == 1
    assert counted[("allot_device_releases_total", "legal-ai", "gpu-whole")] == 1
    dashboard = json.loads((REPO / "examples/grafana/allot-dashboard.json").read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    variable = dashboard["templating"]["list"][0]["query"]["query"]  # Grafana's, not PromQL
    queries.append(re.fullmatch(r"label_values\((\w+), tenant\)", variable).group(1))  # type: ignore[union-attr]
    rule = prometheus_rule(AlertSettings())
    queries += [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    served = names | {f.name for f in families if f.type == "gauge"}  # families with no
    served |= {f"{f.name}_total" for f in families if f.type == "counter"}  # sample yet
    served |= {f"{f.name}_{s}" for f in families if f.type == "histogram" for s in SUFFIXES}
    for query in queries:
        read = metric_names(query)
        assert read, f"{query!r} reads no metric"
        if "kueue_pending_workloads" in read:  # on a real cluster Kueue queues fair sharing
            assert read == KUEUE_METRICS, query
            continue
        assert read <= served, f"{query!r} reads metrics /metrics lacks: {read - served}"


def test_promql_metric_names_are_found() -> None:
    assert metric_names(
        'sum by (tenant) (rate(allot_device_allocations_total{tenant=~"$tenant"}[5m]))'
    ) == {"allot_device_allocations_total"}
    assert metric_names("allot_pool_slices < allot_pool_slices_expected") == {
        "allot_pool_slices",
        "allot_pool_slices_expected",
    }
    assert metric_names("count(allot_pool_slices < allot_pool_slices_expected) or vector(0)") == {
        "allot_pool_slices",
        "allot_pool_slices_expected",
    }


TEMPLATE_POD = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: slice-template}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu-slice}}]
---
apiVersion: v1
kind: Pod
metadata: {name: templated}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: slice-template}]
  containers:
  - {name: c, image: busybox, resources: {claims: [{name: gpu}]}}
"""


def test_audit_names_a_template_claim_as_its_tenant_sees_it(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    """A claim made on the host from a tenant pod's template is audited under the name the
    tenant's mirror of it has (the tenant's claim name), not the host's."""
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=TEMPLATE_POD)
    statuses = tenancy.wait(
        lambda: (tenancy.tenant_json("research-ai", "pod", "templated").get("status") or {}).get(
            "resourceClaimStatuses"
        ),
        "the tenant pod's claim status",
    )
    tenant_claim = statuses[0]["resourceClaimName"]
    tenancy.wait(
        lambda: (
            tenancy.tenant_json("research-ai", "resourceclaim", tenant_claim).get("status") or {}
        ).get("allocation"),
        "the template claim allocated",
    )
    time.sleep(0.3)

    def audited() -> list[dict[str, str]]:
        argv = ["audit", "--tenant", "research-ai", "-o", "json"]
        assert allot([*argv, "--data-dir", str(tenancy.data_dir)]) == 0
        items: list[dict[str, str]] = json.loads(capsys.readouterr().out)["items"]
        return [e for e in items if e["pod"] == "templated"]

    entry = tenancy.wait(audited, "the template claim audited")[0]
    assert (entry["claim"], entry["tenant_namespace"]) == (tenant_claim, "default")
    assert entry["host_claim"] != tenant_claim  # the host's own, generated for the twin
    assert entry["host_claim"].startswith("templated.default-gpu-")
    labelled = tenancy.host_json("resourceclaims", "-A", "-l", "allot.dev/tenant=research-ai")
    assert entry["host_claim"] in [c["metadata"]["name"] for c in labelled["items"]]
    mirror = tenancy.tenant_json("research-ai", "resourceclaim", tenant_claim)
    assert not any(k.startswith("allot.dev/") for k in mirror["metadata"].get("labels") or {})


def test_a_pending_template_claim_alert_reaches_the_tenants_claim(tenancy: Tenancy) -> None:
    """A tenant pod's claim from a template that fits nowhere (eight slices of seven): the
    alert's Warning Event is on the claim the tenant lists, under its tenant name, as for a
    claim the tenant made itself."""
    eight = TEMPLATE_POD.replace("deviceClassName: gpu-slice}", "deviceClassName: gpu-slice, "
                                 "allocationMode: ExactCount, count: 8}")  # fmt: skip
    tenancy.as_tenant("research-ai", "apply", "-f", "-", stdin=eight)
    statuses = tenancy.wait(
        lambda: (tenancy.tenant_json("research-ai", "pod", "templated").get("status") or {}).get(
            "resourceClaimStatuses"
        ),
        "the tenant pod's claim status",
    )
    tenant_claim = statuses[0]["resourceClaimName"]
    events = tenancy.wait(
        lambda: [
            e
            for e in tenancy.tenant_events("research-ai", tenant_claim)
            if e.startswith("ClaimPendingTooLong")
        ],
        "the alert's Event on the tenant's claim",
    )
    assert f"claim {tenant_claim} of tenant research-ai has been pending" in events[0]


HOST_GPU_POD = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: big}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu-whole}}]
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, finalizers: [example.com/keep]}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  resourceClaims: [{name: gpu, resourceClaimName: big}]
  containers:
  - {name: c, image: busybox, resources: {claims: [{name: gpu}]}}
"""


def test_a_node_scaled_away_fails_its_pods_and_releases_their_devices(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    """``allot fleet scale`` removes the node a pod's GPU is on: the pod collector fails
    the pod (``DisruptionTarget``: ``DeletionByPodGC``) and deletes it, the claim is
    released and the audit says so, so usage stops billing a GPU that left the fleet."""
    cluster = tenancy.cluster
    cluster.kubectl("apply", "-f", "-", stdin=HOST_GPU_POD)
    tenancy.wait(
        lambda: (cluster.get_json("pod", "trainer").get("spec") or {}).get("nodeName"),
        "the trainer bound",
    )
    client = Client.from_kubeconfig(cluster.kubeconfig)
    Publisher(RemoteClient(client)).reconcile(
        parse_fleet(SEED_000_FLEET).scaled("a100-whole-pool", 0)
    )
    pod = tenancy.wait(  # its finalizer keeps it readable once deleted
        lambda: (
            (p := cluster.get_json("pod", "trainer"))["metadata"].get("deletionTimestamp") and p
        ),
        "the trainer deleted",
    )
    assert pod["status"]["phase"] == "Failed"
    [condition] = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True",
        "DeletionByPodGC",
        "PodGC: node no longer exists",
    )
    cluster.kubectl("patch", "pod", "trainer", "--type", "merge", "-p",
                    '{"metadata":{"finalizers":null}}')  # fmt: skip
    tenancy.wait(
        lambda: (
            not tenancy.host_json("pods")["items"]
            and not (cluster.get_json("resourceclaim", "big").get("status") or {}).get("allocation")
        ),
        "the trainer gone and its claim released",
    )
    time.sleep(0.3)
    assert allot(["audit", "-o", "json", "--data-dir", str(tenancy.data_dir)]) == 0
    actions = [(e["action"], e["claim"]) for e in json.loads(capsys.readouterr().out)["items"]]
    assert actions == [("allocate", "big"), ("release", "big")]


def test_the_usage_endpoint_answers_as_allot_usage_does(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    """``/allot/v1/usage`` names its fields as ``allot usage -o json`` does (the group,
    ``device_hours``, ``gpu_memory_gib_hours``), and a bad ``since`` is refused naming the
    query parameter, not a command-line flag."""
    tenancy.cluster.kubectl(
        "apply", "-f", "-", stdin=HOST_GPU_POD.replace(", finalizers: [example.com/keep]", "")
    )
    tenancy.wait(
        lambda: (tenancy.cluster.get_json("resourceclaim", "big").get("status") or {}).get(
            "allocation"
        ),
        "the claim allocated",
    )
    time.sleep(0.3)
    [row] = json.loads(_scrape(tenancy, "/clusters/host/allot/v1/usage?by=class"))
    assert set(row) == {"class", "device_hours", "gpu_memory_gib_hours"}
    assert row["class"] == "gpu-whole"
    assert allot(["usage", "--by", "class", "-o", "json", "--data-dir", str(tenancy.data_dir)]) == 0
    [listed] = json.loads(capsys.readouterr().out)["items"]
    assert set(listed) == set(row)
    with pytest.raises(urllib.error.HTTPError) as refused:
        _scrape(tenancy, "/clusters/host/allot/v1/usage?since=yesterday")
    assert refused.value.code == 400
    message = json.loads(refused.value.read())["message"]
    assert message.startswith("since 'yesterday': expected a duration like 30m")
