"""Each container gets the devices of its own claim request, as the kubelet's DRA manager
(``GetResources``) hands the runtime the CDI devices of the container's
``resources.claims[]`` entries: a ``request`` names one request of the claim (a
``firstAvailable`` request's ``<request>/<subrequest>`` results belong to it), no
``request`` means every device of the claim, and the claim behind extended resources gives
a container the requests ``requestMappings`` map to it. Seed 001's ``mig-inference``
Deployment runs here as written, on the H100 DynamicMIG node of ``examples/nvidia``: its
two containers each list their own MIG slice in the simulated ``nvidia-smi -L``, with the
UUID the driver's MIG device gets when it is created at prepare. On the process runtime
the sandbox of each container binds only its own GPU's device node and its
``CUDA_VISIBLE_DEVICES`` names only its own device."""

from __future__ import annotations

import asyncio
import copy
import re
from pathlib import Path
from typing import Any

import yaml

from allot.controllers.context import ControllerContext
from allot.controllers.nodeagent import DevicePreparer, NodeAgent
from allot.controllers.runtimes import ContainerSetup, ProcessRuntime, Reports, SimulatedRuntime
from allot.controllers.sandbox import Sandbox
from allot.driver.devicenodes import DeviceNodes
from allot.types import Obj

REPO = Path(__file__).resolve().parents[1]
H100_DYNAMIC_MIG = REPO / "examples" / "nvidia" / "h100-80gb-dynamic-mig-partitionable.yaml"
SEED_001 = REPO / "examples" / "seeds" / "001-workloads.yaml"
POOL = "gpu-node-h100-dynmig-01"
LARGE, SMALL = "gpu-0-mig-3g40gb-9-0", "gpu-0-mig-1g10gb-19-4"
MIG_LINE = re.compile(r"^  MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[0-9a-f-]{36})\)$", re.M)


class Recording:
    """A runtime that only records what the node agent prepared for each container."""

    wants_devices = True

    def __init__(self) -> None:
        self.setups: dict[str, ContainerSetup] = {}

    def launch(self, pod: Obj, setups: dict[str, ContainerSetup], reports: Reports) -> None:
        self.setups = setups

    def stop(self, pod: Obj, on_stopped: Any) -> None:
        on_stopped()

    def holds(self, pod_uid: str) -> bool:
        return False

    def forget(self, pod: Obj) -> None:
        pass


def _publish(context: ControllerContext) -> None:
    for document in yaml.safe_load_all(H100_DYNAMIC_MIG.read_text()):
        if document and document.get("kind") == "ResourceSlice":
            metadata = document["metadata"]
            document["metadata"] = {"name": metadata["name"]}
            context.create("ResourceSlice", document, "test")


def _exactly(name: str, device_class: str = "mig.nvidia.com") -> Obj:
    return {"name": name, "exactly": {"deviceClassName": device_class}}


def _claim(
    context: ControllerContext,
    requests: list[Obj],
    results: list[tuple[str, str]],
    name: str = "mig-devices-claim",
    pool: str = POOL,
) -> None:
    """A claim of ``requests`` allocated ``results`` ((request, device) pairs) in ``pool``."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"devices": {"requests": requests}},
    }
    created = context.create("ResourceClaim", claim, "test")
    allocated = [
        {"request": r, "driver": "gpu.nvidia.com", "pool": pool, "device": d} for r, d in results
    ]
    created["status"] = {"allocation": {"devices": {"results": allocated}}}
    context.update_status("ResourceClaim", created, "test")


def _seed_pod_spec() -> Obj:
    """The pod template of seed 001's ``mig-inference`` Deployment, verbatim."""
    documents = yaml.safe_load_all(SEED_001.read_text())
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    return copy.deepcopy(deployment["spec"]["template"]["spec"])


def _pod(context: ControllerContext, spec: Obj, status: Obj | None = None) -> str:
    """Create the pod bound to the node, with ``status`` (the seed's claim by default);
    its uid."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "mig-inference-1", "namespace": "team"},
        "spec": {**spec, "nodeName": POOL},
    }
    created = context.create("Pod", pod, "test")
    created["status"] = status or {
        "resourceClaimStatuses": [{"name": "mig-devices", "resourceClaimName": "mig-devices-claim"}]
    }
    context.update_status("Pod", created, "test")
    return str(created["metadata"]["uid"])


def _seed_claim(context: ControllerContext) -> None:
    _publish(context)
    requests = [_exactly("large-slice"), _exactly("small-slice")]
    _claim(context, requests, [("large-slice", LARGE), ("small-slice", SMALL)])


def _listings(logs: Path) -> dict[str, list[tuple[str, str, str]]]:
    directory = logs / "team" / "mig-inference-1"
    return {log.stem: MIG_LINE.findall(log.read_text()) for log in sorted(directory.glob("*.log"))}


def test_each_container_of_seed_001_lists_only_its_own_slice_with_a_mig_uuid(
    team_context: ControllerContext, tmp_path: Path
) -> None:
    _seed_claim(team_context)
    _pod(team_context, _seed_pod_spec())
    agent = NodeAgent(team_context, DevicePreparer(tmp_path / "cdi"), SimulatedRuntime(tmp_path))
    agent.reconcile(("pod", "team", "mig-inference-1"))
    listings = _listings(tmp_path)
    assert [(p, i) for p, i, _ in listings["primary-model"]] == [("3g.40gb", "0")]
    assert [(p, i) for p, i, _ in listings["embedding-model"]] == [("1g.10gb", "0")]
    large, small = listings["primary-model"][0][2], listings["embedding-model"][0][2]
    assert large != small
    assert "None" not in (tmp_path / "team" / "mig-inference-1" / "primary-model.log").read_text()

    # the same placement on the same GPU gets the same UUID, as NVML's would
    other = tmp_path / "again"
    team_context.delete("Pod", "team", "mig-inference-1", {"gracePeriodSeconds": 0})
    _pod(team_context, _seed_pod_spec())
    agent = NodeAgent(team_context, DevicePreparer(other / "cdi"), SimulatedRuntime(other))
    agent.reconcile(("pod", "team", "mig-inference-1"))
    assert _listings(other)["primary-model"][0][2] == large


def test_the_process_runtime_gives_each_container_its_own_variables(
    team_context: ControllerContext, tmp_path: Path
) -> None:
    _seed_claim(team_context)
    spec = _seed_pod_spec()
    spec["containers"].append(  # no request: every device of the claim
        {"name": "monitor", "image": "busybox", "resources": {"claims": [{"name": "mig-devices"}]}}
    )
    spec["containers"].append({"name": "plain", "image": "busybox"})
    _pod(team_context, spec)
    runtime = Recording()
    NodeAgent(team_context, DevicePreparer(tmp_path / "cdi"), runtime).reconcile(
        ("pod", "team", "mig-inference-1")
    )
    visible = {
        name: setup.environment.get("CUDA_VISIBLE_DEVICES", "").split(",")
        for name, setup in runtime.setups.items()
    }
    profiles = {
        name: [d.get("profile") for d in setup.devices] for name, setup in runtime.setups.items()
    }
    assert profiles == {
        "primary-model": ["3g.40gb"],
        "embedding-model": ["1g.10gb"],
        "monitor": ["3g.40gb", "1g.10gb"],
        "plain": [],
    }
    assert visible["monitor"] == [*visible["primary-model"], *visible["embedding-model"]]
    assert all(v.startswith("MIG-") for v in visible["monitor"])
    assert runtime.setups["plain"].environment == {}
    assert (
        runtime.setups["primary-model"].environment["NVIDIA_VISIBLE_DEVICES"]
        == (visible["primary-model"][0])
    )


def test_subrequest_results_belong_to_their_first_available_request(
    team_context: ControllerContext, tmp_path: Path
) -> None:
    _publish(team_context)
    _claim(
        team_context,
        [
            {
                "name": "big",
                "firstAvailable": [{"name": "h100-3g", "deviceClassName": "mig.nvidia.com"}],
            },
            _exactly("small"),
        ],
        [("big/h100-3g", LARGE), ("small", SMALL)],
    )
    spec = _seed_pod_spec()
    spec["containers"][0]["resources"]["claims"][0]["request"] = "big"
    spec["containers"][1]["resources"]["claims"][0]["request"] = "small"
    _pod(team_context, spec)
    runtime = Recording()
    NodeAgent(team_context, DevicePreparer(tmp_path / "cdi"), runtime).reconcile(
        ("pod", "team", "mig-inference-1")
    )
    assert [d["profile"] for d in runtime.setups["primary-model"].devices] == ["3g.40gb"]
    assert [d["profile"] for d in runtime.setups["embedding-model"].devices] == ["1g.10gb"]


def test_the_extended_resource_claim_gives_each_container_its_mapped_requests(
    team_context: ControllerContext, tmp_path: Path
) -> None:
    _publish(team_context)
    _claim(
        team_context,
        [_exactly("container-0-request-0"), _exactly("container-1-request-0")],
        [("container-0-request-0", LARGE), ("container-1-request-0", SMALL)],
    )
    resource = "deviceclass.resource.kubernetes.io/mig"
    containers = [
        {
            "name": name,
            "image": "busybox",
            "resources": {"requests": {resource: n}, "limits": {resource: n}},
        }
        for name, n in (("first", "1"), ("second", "1"), ("none", "0"))
    ]
    status = {
        "extendedResourceClaimStatus": {
            "resourceClaimName": "mig-devices-claim",
            "requestMappings": [
                {"containerName": name, "resourceName": resource, "requestName": request}
                for name, request in (
                    ("first", "container-0-request-0"),
                    ("second", "container-1-request-0"),
                    ("none", "container-1-request-0"),  # asks for none of it
                )
            ],
        }
    }
    _pod(team_context, {"containers": containers}, status)
    runtime = Recording()
    NodeAgent(team_context, DevicePreparer(tmp_path / "cdi"), runtime).reconcile(
        ("pod", "team", "mig-inference-1")
    )
    assert [d["profile"] for d in runtime.setups["first"].devices] == ["3g.40gb"]
    assert [d["profile"] for d in runtime.setups["second"].devices] == ["1g.10gb"]
    assert runtime.setups["none"].devices == []


def _whole_gpu_node(tmp_path: Path) -> tuple[DeviceNodes, list[str]]:
    """A recorded ``/proc/driver/nvidia`` with two real GPUs, their published UUIDs."""
    proc, dev = tmp_path / "proc", tmp_path / "dev"
    uuids = ["GPU-8ed058dc-099e-f498-79eb-d088600b1bf1", "GPU-11111111-2222-3333-4444-555555555555"]
    for minor, uuid in enumerate(uuids):
        bus = f"0000:00:0{6 + minor}.0"
        info = proc / "gpus" / bus / "information"
        info.parent.mkdir(parents=True)
        info.write_text(f"GPU UUID: \t {uuid}\nBus Location: \t {bus}\nDevice Minor: \t {minor}\n")
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl"):
        (dev / name).touch()
    return DeviceNodes(proc, dev), uuids


def test_each_container_s_sandbox_binds_only_its_own_gpu(
    team_context: ControllerContext, tmp_path: Path
) -> None:
    """The sandbox's command line (a stand-in ``bwrap`` prints it and the environment)."""
    nodes, uuids = _whole_gpu_node(tmp_path)
    team_context.create(
        "ResourceSlice",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "node-a-gpus"},
            "spec": {
                "driver": "gpu.nvidia.com",
                "nodeName": "node-a",
                "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": f"gpu-{i}",
                        "attributes": {"type": {"string": "gpu"}, "uuid": {"string": u}},
                    }
                    for i, u in enumerate(uuids)
                ],
            },
        },
        "test",
    )
    requests = [_exactly(n, "gpu.nvidia.com") for n in ("a", "b")]
    _claim(team_context, requests, [("a", "gpu-0"), ("b", "gpu-1")], "pair", "node-a")
    bwrap = tmp_path / "bwrap"
    bwrap.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\nenv | grep VISIBLE_DEVICES\n')
    bwrap.chmod(0o755)
    containers = [
        {
            "name": n,
            "image": "busybox",
            "command": ["true"],
            "resources": {"claims": [{"name": "gpus", "request": n}]},
        }
        for n in ("a", "b")
    ]
    pod = {
        "containers": containers,
        "restartPolicy": "Never",
        "resourceClaims": [{"name": "gpus", "resourceClaimName": "pair"}],
    }
    uid = _pod(team_context, pod, {})

    async def run() -> None:
        sandbox = Sandbox(str(bwrap), None, [], as_root=False)
        runtime = ProcessRuntime(tmp_path / "logs", tmp_path / "pods", sandbox, device_nodes=nodes)
        agent = NodeAgent(team_context, DevicePreparer(tmp_path / "cdi"), runtime)
        agent.reconcile(("pod", "team", "mig-inference-1"))
        for _ in range(100):
            if not runtime.holds(uid):
                break
            await asyncio.sleep(0.05)
        await runtime.stop_all()

    asyncio.run(run())
    logs = tmp_path / "logs" / "team" / "mig-inference-1"
    for name, minor, other in (("a", 0, 1), ("b", 1, 0)):
        text = (logs / f"{name}.log").read_text()
        assert f"{tmp_path}/dev/nvidia{minor}" in text
        assert f"{tmp_path}/dev/nvidia{other}" not in text
        assert f"CUDA_VISIBLE_DEVICES={uuids[minor]}\n" in text
