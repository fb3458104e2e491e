"""``make demo``: the current end-to-end walk through what allot does today.

Validates the manifests quoted in the seed documents (``examples/seeds``) and NVIDIA's
published objects (``examples/nvidia``) exactly as ``allot validate`` would, printing each
verdict: the walkthrough's classes and claims are accepted, every DRA manifest of seed 001
is rejected the way a Kubernetes 1.36 API server rejects it, with allot's hint on the fix.
Run from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

from allot.cli.main import main as allot_main

EXAMPLES = Path("examples")
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
        print(f"\n=== {title}")
        print("$ allot validate " + " ".join(f"examples/{f}" for f in files), flush=True)
        code = allot_main(["validate", *(str(EXAMPLES / f) for f in files)])
        sys.stderr.flush()
        print(f"(exit status {code})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run())
