"""``make demo``: the current end-to-end walk through what allot does today.

1. ``allot validate`` on the manifests quoted in the seed documents (``examples/seeds``)
   and NVIDIA's published objects (``examples/nvidia``): the walkthrough's classes and
   claims are accepted, every DRA manifest of seed 001 is rejected the way a Kubernetes
   1.36 API server rejects it, with allot's hint on the fix.
2. ``allot lint`` on seed 000's catalogue against the NVIDIA fixtures: ``gpu-slice``
   matches nothing and ``gpu-whole`` also takes MIG partitions, with corrected selectors.
3. ``allot simulate --explain`` of both tenants' claims on the seed's two node pools with
   the corrected classes, until the MIG slices run out and the 8th slice claim is
   explained.
4. The embedded platform: API server on a free loopback port (HTTPS, token auth) with the
   host control plane and the process runtime; seed 000's fleet published by the simulated
   NVIDIA driver. The real ``kubectl`` applies the corrected classes and the tenants'
   pods (``examples/workloads/seed-000-host.yaml``): the legal pod gets the whole A100,
   seven research pods the seven 1g.5gb slices, and their logs show ``nvidia-smi -L``; an
   8th slice pod stays Pending with the scheduler's reason and event. Then everything
   stops.

Run from the repository root.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from allot.apiserver.server import ServerThread
from allot.cli.main import main as allot_main
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import publish
from allot.platform import build

EXAMPLES = Path("examples")
LINT = [
    "lint",
    "examples/seeds/000-gpu-deviceclasses.yaml",
    "examples/nvidia/a100-40gb-x1-whole-gpu.yaml",
    "examples/nvidia/a100-40gb-static-mig-7x1g5gb.yaml",
    "examples/nvidia/h100-80gb-dynamic-mig-partitionable.yaml",
]
SIMULATE = ["simulate", "examples/scenarios/seed-000.yaml", "--explain"]
STEPS = [
    (
        "Seed 000: the platform team's DeviceClasses and the tenants' claims",
        [
            "seeds/000-gpu-deviceclasses.yaml",
            "seeds/000-legal-whole-gpu-resourceclaim.yaml",
            "seeds/000-research-gpu-slice-resourceclaim.yaml",
        ],
    ),
    (
        "Seeds 003 and 004: NVIDIA's and a GPU platform's templates and pods",
        ["seeds/003-single-gpu-template.yaml", "seeds/004-gpu-40g.yaml"],
    ),
    (
        "Seed 001: the article's DRA manifests (v1beta1 shape under v1, Quantity >=)",
        ["seeds/001-dra-manifests.yaml"],
    ),
    (
        "Seed 001: its workloads (Job and Deployment are not kinds allot serves)",
        ["seeds/001-workloads.yaml"],
    ),
    (
        "NVIDIA DRA driver: published ResourceSlices and DeviceClasses",
        [
            "nvidia/deviceclasses.yaml",
            "nvidia/a100-40gb-x1-whole-gpu.yaml",
            "nvidia/a100-40gb-static-mig-7x1g5gb.yaml",
            "nvidia/h100-80gb-x8-whole-gpus.yaml",
            "nvidia/h100-80gb-dynamic-mig-partitionable.yaml",
        ],
    ),
]


def run() -> int:
    if not EXAMPLES.is_dir():
        print("error: run the demo from the repository root (examples/ not found)", file=sys.stderr)
        return 1
    for title, files in STEPS:
        _run(title, ["validate", *(str(EXAMPLES / f) for f in files)])
    _run("Seed 000's catalogue against what the NVIDIA driver publishes", LINT)
    _run("Seed 000 with the corrected classes: both tenants, then an 8th MIG slice", SIMULATE)
    _kubectl_walkthrough()
    return 0


KUBECTL_STEPS = [
    ["get", "nodes"],
    ["get", "resourceslices", "-o", "wide"],
    ["apply", "-f", "examples/workloads/seed-000-host.yaml"],
    ["wait", "--for=condition=Ready", "pod", "--all", "--timeout=60s"],
    ["get", "pods", "-o", "wide"],
    ["logs", "legal-review"],
    ["logs", "research-0"],
    ["get", "resourceclaims"],
    ["apply", "-f", "examples/workloads/seed-000-eighth-slice.yaml"],
    ["wait", "--for=condition=PodScheduled=false", "pod/research-7", "--timeout=30s"],
    ["get", "pod", "research-7"],
    ["get", "events", "--field-selector", "involvedObject.name=research-7"],
]


def _kubectl_walkthrough() -> None:
    print("\n=== The embedded API server with the real kubectl", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "data"
        with ServerThread(data, api=build(data, runtime="process")) as server:
            kubeconfig = server.endpoint.kubeconfigs["host"]
            print(f"(allot API server on {server.endpoint.url}; KUBECONFIG={kubeconfig})")
            _publish_seed_fleet(kubeconfig)
            _run_kubectl_steps({**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": scratch})
    print("(API server stopped)", flush=True)


def _publish_seed_fleet(kubeconfig: Path) -> None:
    report = publish(kubeconfig, parse_fleet(SEED_000_FLEET))
    print(
        f"(seed 000 fleet published: {len(report.nodes_created)} nodes, {report.slices} "
        f"slices, {report.devices} devices)"
    )


def _run_kubectl_steps(env: dict[str, str]) -> None:
    kubectl = str(Path(sys.executable).with_name("kubectl"))
    for argv in KUBECTL_STEPS:
        print("$ kubectl " + " ".join(argv), flush=True)
        result = subprocess.run(
            [kubectl, *argv], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        print((result.stdout + result.stderr).rstrip(), flush=True)


def _run(title: str, argv: list[str]) -> None:
    print(f"\n=== {title}")
    print("$ allot " + " ".join(argv), flush=True)
    code = allot_main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    print(f"(exit status {code})", flush=True)


if __name__ == "__main__":
    sys.exit(run())
