"""Everyday kubectl habits against the platform, as an experienced user types them: a pod's
spec refuses the changes kube-apiserver refuses, ``kubectl logs --limit-bytes`` cuts the
log, and ``kubectl exec`` is refused with a clear Status and no alarming server log.

One platform (simulated runtime, seed 000's fleet) for the whole module.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import KUBECTL, Cluster, running_platform

pytestmark = pytest.mark.slow
FORBIDDEN = (
    'The Pod "habit" is invalid: spec: Forbidden: pod updates may not change fields other '
    "than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
    "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
    "previously negative)"
)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_platform(Path(tmp_path_factory.mktemp("habits"))) as cluster:
        cluster.kubectl("run", "habit", "--image=busybox", "--", "sleep", "1000")
        cluster.kubectl("wait", "--for=condition=Ready", "pod/habit", "--timeout=60s")
        yield cluster


def test_a_pod_spec_is_immutable_but_for_its_images(platform: Cluster) -> None:
    for patch in ('{"spec":{"restartPolicy":"Never"}}', '{"spec":{"nodeName":"elsewhere"}}'):
        refused = platform.kubectl("patch", "pod/habit", "-p", patch, check=False)
        assert refused.returncode == 1
        assert refused.stderr.startswith(FORBIDDEN), refused.stderr
    command = '[{"op":"replace","path":"/spec/containers/0/args","value":["sh"]}]'
    refused = platform.kubectl("patch", "pod/habit", "--type=json", "-p", command, check=False)
    assert '- containers[0].args: ["sleep","1000"]\n+ containers[0].args: ["sh"]' in (
        refused.stderr
    )
    platform.kubectl("set", "image", "pod/habit", "habit=busybox:1.37")
    platform.kubectl("label", "pod/habit", "tier=web")
    pod = platform.get_json("pod/habit")
    assert pod["spec"]["containers"][0]["image"] == "busybox:1.37"
    assert pod["spec"]["nodeName"] == "cpu-pool-0"
    assert "restartPolicy" not in pod["spec"] or pod["spec"]["restartPolicy"] == "Always"


def test_logs_limit_bytes_cuts_the_log(platform: Cluster) -> None:
    whole = platform.kubectl("logs", "habit").stdout
    assert len(whole) > 10
    assert platform.kubectl("logs", "habit", "--limit-bytes=10").stdout == whole[:10]
    followed = platform.kubectl("logs", "habit", "-f", "--limit-bytes=12", timeout=20)
    assert followed.stdout == whole[:12]


def test_exec_is_refused_cleanly(platform: Cluster) -> None:
    """kubectl asks for a WebSocket upgrade first, then SPDY: both get the Status, and
    the server logs nothing about a missing WebSocket library."""
    records = Records()
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(records)
    try:
        started = time.monotonic()
        for verb in (["exec", "habit", "--", "ls"], ["cp", "habit:/etc/hosts", "/tmp/x"]):
            refused = platform.kubectl(*verb, check=False, timeout=30)
            assert refused.returncode == 1
            assert "error: unable to upgrade connection: pods/exec is not served by allot" in (
                refused.stderr
            )
        assert time.monotonic() - started < 20
    finally:
        logger.removeHandler(records)
    assert not [m for m in records.messages if "upgrade" in m or "WebSocket" in m]


def test_describe_node_shows_the_kubelets_conditions_with_times(platform: Cluster) -> None:
    described = platform.kubectl("describe", "node", "cpu-pool-0").stdout
    conditions = described.split("Conditions:")[1].split("Addresses:")[0]
    assert "0001" not in conditions, conditions  # Go's zero time: no heartbeat written
    rows = [line.split()[:2] for line in conditions.splitlines()[3:] if line.strip()]
    assert rows == [
        ["MemoryPressure", "False"],
        ["DiskPressure", "False"],
        ["PIDPressure", "False"],
        ["Ready", "True"],
    ]
    assert "KubeletHasSufficientMemory" in conditions


def test_the_system_namespaces_may_not_be_deleted(platform: Cluster, tmp_path: Path) -> None:
    """NamespaceLifecycle, on the host and in a tenant cluster alike; other namespaces go."""
    registry = platform.server.api.registry
    tenant = tmp_path / "tenant.yaml"
    tenant.write_text(
        platform.kubeconfig.read_text()
        .replace(registry.tokens.ensure("host"), registry.add_cluster("habits-tenant"))
        .replace("/clusters/host", "/clusters/habits-tenant")
    )
    for kubeconfig in (platform.kubeconfig, tenant):
        for name in ("default", "kube-system", "kube-public"):
            refused = platform.kubectl("delete", "ns", name, kubeconfig=kubeconfig, check=False)
            assert refused.stderr == (
                f'Error from server (Forbidden): namespaces "{name}" is forbidden: '
                "this namespace may not be deleted\n"
            )
        platform.kubectl(
            "get", "ns", "default", "kube-system", "kube-public", kubeconfig=kubeconfig
        )
        platform.kubectl("create", "ns", "scratch", kubeconfig=kubeconfig)
        platform.kubectl("delete", "ns", "scratch", kubeconfig=kubeconfig)


def test_kubectl_debug_copies_and_node_pods_run_and_ephemeral_is_refused(
    platform: Cluster,
) -> None:
    """``kubectl debug``: a node's debugging pod and a pod's copy are posted as protobuf
    Pods; an ephemeral container gets a clear refusal, not a kubectl panic (kubectl reads
    the pod's ``securityContext`` and the 404's ``details`` without checking for nil)."""
    node = platform.kubectl("debug", "node/cpu-pool-0", "--image=busybox", "--", "true")
    assert "Creating debugging pod node-debugger-cpu-pool-0-" in node.stdout
    platform.kubectl("debug", "habit", "--copy-to=habit-copy", "--image=busybox", "--", "true")
    copy = platform.get_json("pod/habit-copy")
    assert [c["name"] for c in copy["spec"]["containers"]][:1] == ["habit"]
    assert platform.get_json("pod/habit")["spec"]["securityContext"] == {}
    refused = platform.kubectl("debug", "habit", "--image=busybox", check=False)
    assert refused.returncode == 1
    assert "panic" not in refused.stderr
    assert "error: ephemeral containers are disabled for this cluster" in refused.stderr


def test_the_kubelets_events_name_their_container_and_reviews_are_discovered(
    platform: Cluster,
) -> None:
    """Two containers' ``Started`` are two Events (the kubelet's ``spec.containers{NAME}``,
    ``kubectl get events -o wide``'s SUBOBJECT and SOURCE), not one counted twice; ``kubectl
    api-resources`` lists the access review that ``kubectl auth can-i`` posts."""
    container = {"image": "busybox:1.37", "command": ["sleep", "1000"]}
    platform.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "duo"},
            "spec": {"containers": [{"name": n, **container} for n in ("a", "b")]},
        }
    )
    platform.kubectl("wait", "--for=condition=Ready", "pod/duo", "--timeout=60s")
    wide = platform.kubectl(
        "get", "events", "-o", "wide", "--field-selector", "involvedObject.name=duo,reason=Started"
    ).stdout.splitlines()
    assert wide[0].split() == [
        *("LAST", "SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE"),
        *("FIRST", "SEEN", "COUNT", "NAME"),
    ]
    rows = sorted(re.split(r"\s{2,}", line)[4:6] for line in wide[1:])
    assert rows == [
        ["spec.containers{a}", "kubelet, cpu-pool-0"],
        ["spec.containers{b}", "kubelet, cpu-pool-0"],
    ]
    listed = platform.kubectl("events", "--for", "pod/duo").stdout
    assert listed.count("Container started") == 2, listed
    assert "(x2" not in listed, listed
    cluster_wide = platform.kubectl("api-resources", "--namespaced=false").stdout.splitlines()
    review = next(line.split() for line in cluster_wide if line.startswith("selfsubjectaccess"))
    assert review == [
        "selfsubjectaccessreviews",
        "authorization.k8s.io/v1",
        "false",
        "SelfSubjectAccessReview",
    ]
    assert "authorization.k8s.io/v1" in platform.kubectl("api-versions").stdout.split()
    assert platform.kubectl("auth", "can-i", "create", "pods").stdout == "yes\n"
    listed_reviews = platform.kubectl("get", "selfsubjectaccessreviews", check=False)
    assert listed_reviews.stderr.startswith("Error from server (MethodNotAllowed)"), listed_reviews


def test_logs_timestamps_and_since(platform: Cluster) -> None:
    """``kubectl logs --timestamps`` stamps each line with when it was written (a
    simulated container's log: at its start), ``--since``/``--since-time`` keep the lines
    written since, also followed."""
    whole = platform.kubectl("logs", "habit").stdout
    stamped = platform.kubectl("logs", "habit", "--timestamps").stdout.splitlines()
    started = platform.get_json("pod/habit")["status"]["containerStatuses"][0]["state"]
    assert [line.split(" ", 1)[1] for line in stamped] == whole.splitlines()
    stamp = stamped[0].split(" ", 1)[0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", stamp), stamp
    assert stamp[:19] >= started["running"]["startedAt"][:19]
    assert platform.kubectl("logs", "habit", "--since=1h").stdout == whole
    assert platform.kubectl("logs", "habit", "--since-time=2000-01-01T00:00:00Z").stdout == whole
    assert platform.kubectl("logs", "habit", "--since-time=2100-01-01T00:00:00Z").stdout == ""
    followed = platform.kubectl("logs", "habit", "-f", "--timestamps", "--limit-bytes=31")
    assert followed.stdout == stamp + " "
    path = "/api/v1/namespaces/default/pods/habit/log?tailLines=-1"
    refused = platform.kubectl("get", "--raw", path, check=False)
    assert refused.stderr == (
        'The PodLogOptions "habit" is invalid: tailLines: Invalid value: -1: must be greater '
        "than or equal to 0\n"
    )


def test_kubectl_proxy_serves_the_clusters_api(platform: Cluster, tmp_path: Path) -> None:
    """``kubectl proxy`` forwards ``/api/...`` without the kubeconfig's ``/clusters/NAME``
    path: the root serves the API of the cluster the token names, host or tenant."""
    registry = platform.server.api.registry
    tenant = tmp_path / "tenant.yaml"
    tenant.write_text(
        platform.kubeconfig.read_text()
        .replace(registry.tokens.ensure("host"), registry.add_cluster("proxied-tenant"))
        .replace("/clusters/host", "/clusters/proxied-tenant")
    )
    platform.kubectl("create", "configmap", "only-here", kubeconfig=tenant)
    for kubeconfig, names in ((platform.kubeconfig, {"habit"}), (tenant, set())):
        env = {**os.environ, "HOME": str(platform.home), "KUBECONFIG": str(kubeconfig)}
        command = [KUBECTL, "proxy", "--port=0"]
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as proxy:
            try:
                assert proxy.stdout is not None
                port = proxy.stdout.readline().rsplit(":", 1)[1].strip()
                with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=20) as http:
                    pods = http.get("/api/v1/namespaces/default/pods").json()["items"]
                    maps = http.get("/api/v1/namespaces/default/configmaps").json()["items"]
                    version = http.get("/version").json()
            finally:
                proxy.terminate()
        assert names <= {p["metadata"]["name"] for p in pods}
        assert ("only-here" in {m["metadata"]["name"] for m in maps}) == (kubeconfig == tenant)
        assert version["gitVersion"] == "v1.36.0"
