"""The host control plane with the real kubectl: claims, scheduling, node agent, release."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.driver.fleet import SEED_000_FLEET
from tests.e2e.conftest import Cluster, running_platform

pytestmark = pytest.mark.slow
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
WHOLE = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
SLICE = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
    "'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"
)


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_platform(tmp_path_factory.mktemp("platform"), SEED_000_FLEET) as cluster:
        yield cluster


def _pod(name: str, claims: list[dict[str, str]], **extra: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "tolerations": TOLERATE,
            "resourceClaims": claims,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"claims": [{"name": c["name"]} for c in claims]},
                }
            ],
            **extra,
        },
    }


def _wait(cluster: Cluster, condition: str, target: str) -> str:
    return cluster.kubectl("wait", f"--for={condition}", target, "--timeout=20s").stdout


def test_template_claims_schedule_and_run(platform: Cluster) -> None:
    platform.apply(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu-whole"},
            "spec": {"selectors": [{"cel": {"expression": WHOLE}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu-slice"},
            "spec": {"selectors": [{"cel": {"expression": SLICE}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "slice"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu-slice"}}]
                    }
                }
            },
        },
        _pod("research", [{"name": "gpu", "resourceClaimTemplateName": "slice"}]),
    )
    assert "condition met" in _wait(platform, "condition=Ready", "pod/research")
    pod = platform.get_json("pod", "research")
    assert pod["spec"]["nodeName"] == "a100-mig-1g5gb-pool-0"
    statuses = pod["status"]["resourceClaimStatuses"]
    claim_name = statuses[0]["resourceClaimName"]
    assert claim_name.startswith("research-gpu-")
    claim = platform.get_json("resourceclaim", claim_name)
    status = claim["status"]
    assert status["allocation"]["devices"]["results"][0]["device"] == "gpu-0-mig-1g5gb-19-0"
    assert status["reservedFor"][0]["name"] == "research"
    assert claim["metadata"]["ownerReferences"][0]["name"] == "research"
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
    table = platform.kubectl("get", "resourceclaims").stdout
    assert "allocated,reserved" in table


def test_exhaustion_is_explained_and_resolved_by_release(platform: Cluster) -> None:
    pods = [
        _pod(f"slice-{i}", [{"name": "gpu", "resourceClaimTemplateName": "slice"}])
        for i in range(1, 8)
    ]
    platform.apply(*pods)
    for index in range(1, 7):
        _wait(platform, "condition=Ready", f"pod/slice-{index}")
    time.sleep(0.5)
    pending = platform.get_json("pod", "slice-7")
    conditions = {c["type"]: c for c in pending["status"]["conditions"]}
    assert conditions["PodScheduled"]["reason"] == "Unschedulable"
    assert (
        conditions["PodScheduled"]["message"]
        == "0/3 nodes are available: 3 cannot allocate all claims."
    )
    events = platform.kubectl(
        "get", "events", "--field-selector", "involvedObject.name=slice-7"
    ).stdout
    assert "FailedScheduling" in events
    platform.kubectl("delete", "pod", "research")
    assert "condition met" in _wait(platform, "condition=Ready", "pod/slice-7")
    devices = sorted(
        c["status"]["allocation"]["devices"]["results"][0]["device"]
        for c in platform.get_json("resourceclaims")["items"]
        if c.get("status", {}).get("allocation")
    )
    assert devices == [f"gpu-0-mig-1g5gb-19-{i}" for i in range(7)]


def test_shared_named_claim_and_extended_resources(platform: Cluster) -> None:
    platform.apply(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "shared-gpu"},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu-whole"}}]
                }
            },
        },
        _pod("qwen", [{"name": "gpu", "resourceClaimName": "shared-gpu"}]),
        _pod("embedder", [{"name": "gpu", "resourceClaimName": "shared-gpu"}]),
    )
    _wait(platform, "condition=Ready", "pod/qwen")
    _wait(platform, "condition=Ready", "pod/embedder")
    # a pod joining an allocated claim fits the node its allocation names, though that
    # node has no free device left (the full-node shortcut must not refuse it)
    platform.apply(_pod("late", [{"name": "gpu", "resourceClaimName": "shared-gpu"}]))
    _wait(platform, "condition=Ready", "pod/late")
    nodes = {platform.get_json("pod", p)["spec"]["nodeName"] for p in ("qwen", "late")}
    assert nodes == {"a100-whole-pool-0"}
    claim = platform.get_json("resourceclaim", "shared-gpu")
    assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == [
        "embedder",
        "late",
        "qwen",
    ]
    legacy = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "legacy"},
        "spec": {
            "tolerations": TOLERATE,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    platform.apply(legacy)
    time.sleep(0.5)
    assert platform.get_json("pod", "legacy")["spec"].get("nodeName") is None
    platform.kubectl("delete", "pod", "qwen", "embedder", "late")
    _wait(platform, "condition=Ready", "pod/legacy")
    status = platform.get_json("pod", "legacy")["status"]
    mapping = status["extendedResourceClaimStatus"]
    assert mapping["requestMappings"] == [
        {
            "containerName": "main",
            "resourceName": "nvidia.com/gpu",
            "requestName": "container-0-request-0",
        }
    ]
    shared = platform.get_json("resourceclaim", "shared-gpu")
    assert "allocation" not in shared.get("status", {})  # released when both pods left
    platform.kubectl("delete", "pod", "legacy")
    platform.apply({**legacy, "metadata": {"name": "legacy-2"}})  # fits at once this time
    _wait(platform, "condition=Ready", "pod/legacy-2")
    uid = platform.get_json("pod", "legacy-2")["metadata"]["uid"]
    owned = [
        c
        for c in platform.get_json("resourceclaims")["items"]
        if any(o["uid"] == uid for o in c["metadata"].get("ownerReferences", []))
    ]
    assert len(owned) == 1  # one claim per pod, however many scheduling attempts it took
    assert owned[0]["status"]["reservedFor"] == [
        {"resource": "pods", "name": "legacy-2", "uid": uid}
    ]


def test_missing_template_gets_an_event(platform: Cluster, tmp_path: Path) -> None:
    platform.apply(_pod("orphan", [{"name": "gpu", "resourceClaimTemplateName": "nope"}]))
    time.sleep(0.5)
    events = platform.kubectl(
        "get", "events", "--field-selector", "involvedObject.name=orphan"
    ).stdout
    assert "FailedResourceClaimCreation" in events
    pod = platform.get_json("pod", "orphan")
    assert pod["status"]["phase"] == "Pending"


def test_ordinary_pods_run_on_the_cpu_pool_and_every_running_pod_has_logs(
    platform: Cluster,
) -> None:
    """``kubectl run`` with busybox, as a new user's first command, then ``kubectl logs``."""
    platform.kubectl("run", "hello", "--image=busybox", "--", "sleep", "1")
    _wait(platform, "condition=Ready", "pod/hello")
    pod = platform.get_json("pod", "hello")
    assert pod["spec"]["nodeName"] == "cpu-pool-0"  # GPU pools keep the seed's taint
    logs = platform.kubectl("logs", "hello").stdout
    assert logs == (
        "[allot] simulated container 'hello' (image busybox): no process runs; "
        "it would run: sleep 1\n[allot] it has no devices\n"
    )
    node = platform.get_json("node", "cpu-pool-0")
    assert "nvidia.com/gpu.present" not in node["metadata"]["labels"]
    assert not node["spec"].get("taints")
    slices = platform.get_json("resourceslices", "--field-selector", "spec.nodeName=cpu-pool-0")
    assert slices["items"] == []  # the driver publishes nothing on a node without GPUs
    platform.kubectl("delete", "pod", "hello")


def test_logs_of_a_simulated_gpu_pod_list_its_devices(platform: Cluster) -> None:
    platform.kubectl("delete", "pod", "slice-1")  # the slices are all taken by now
    platform.apply(
        _pod("smi", [{"name": "gpu", "resourceClaimTemplateName": "slice"}]),
    )
    _wait(platform, "condition=Ready", "pod/smi")
    logs = platform.kubectl("logs", "smi", "-c", "main").stdout.splitlines()
    assert logs[0] == (
        "[allot] simulated container 'main' (image busybox): no process runs; "
        "it would run: the image's entrypoint"
    )
    assert logs[1] == "[allot] its devices, as nvidia-smi -L lists them:"
    assert logs[2].startswith("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-")
    assert logs[3].startswith("  MIG 1g.5gb      Device  0: (UUID: MIG-")
    assert len(logs) == 4  # exactly its one slice
    assert platform.kubectl("logs", "smi", "--tail=1").stdout == logs[3] + "\n"
    platform.kubectl("delete", "pod", "smi")


def test_a_pod_waits_for_the_config_map_its_env_names(platform: Cluster) -> None:
    """The simulated runtime checks references as the kubelet does: ``0/1
    CreateContainerConfigError`` until the ConfigMap and its key exist."""
    ref = {"configMapKeyRef": {"name": "nosuch", "key": "k"}}
    container = {"name": "main", "image": "busybox", "env": [{"name": "V", "valueFrom": ref}]}
    platform.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "configured"},
            "spec": {"containers": [container]},
        }
    )
    _wait(
        platform,
        "jsonpath={.status.containerStatuses[0].state.waiting.reason}=CreateContainerConfigError",
        "pod/configured",
    )
    row = platform.kubectl("get", "pod", "configured", "--no-headers").stdout.split()
    assert row[1:3] == ["0/1", "CreateContainerConfigError"]
    platform.kubectl("create", "configmap", "nosuch", "--from-literal=other=1")
    _wait(
        platform,
        "jsonpath={.status.containerStatuses[0].state.waiting.message}"
        "=couldn't find key k in ConfigMap default/nosuch",
        "pod/configured",
    )
    platform.kubectl("patch", "configmap", "nosuch", "-p", '{"data": {"k": "v"}}')
    _wait(platform, "condition=Ready", "pod/configured")
    events = platform.kubectl(
        "get", "events", "--field-selector", "involvedObject.name=configured,type=Warning"
    ).stdout
    assert 'Error: configmap "nosuch" not found' in events
    platform.kubectl("delete", "pod", "configured")
