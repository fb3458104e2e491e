"""The platform the dashboard's pages are checked on: seed 000's fleet and tenants, plus the
DynamicMIG H100 of tests/scenarios/dynamic-mig-capacity.yaml with the scenario's three
2g.20gb claims held by host pods, a host claim for a 3g.40gb that fits nowhere (its pod
pending) and a research-ai claim no pod uses. Used by tests/e2e/test_dashboard_pages.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from allot.driver.fleet import SEED_000_FLEET
from tests.e2e.tenancy import REPO, Tenancy, seed_platform

SCENARIO = yaml.safe_load((REPO / "tests/scenarios/dynamic-mig-capacity.yaml").read_text())
FLEET = {**SEED_000_FLEET, "pools": [*SEED_000_FLEET["pools"], *SCENARIO["fleet"]["pools"]]}
LEGAL = str(REPO / "examples/tenancy/legal-ai-workload.yaml")
RESEARCH = str(REPO / "examples/tenancy/research-ai-workload.yaml")
BIG = "big-slice"  # the host claim for a 3g.40gb


def mig_claim(name: str, profile: str) -> dict[str, Any]:
    expression = f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "mig.nvidia.com",
            "selectors": [{"cel": {"expression": expression}}]}}]}},
    }  # fmt: skip


def pod(name: str, claim: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
            "containers": [{"name": "main", "image": "cuda", "command": ["sleep", "3600"],
                            "resources": {"claims": [{"name": "gpu"}]}}],
        },
    }  # fmt: skip


def _allocated(running: Tenancy, count: int) -> bool:
    claims = running.host_json("resourceclaims", "-A")["items"]
    return sum(1 for c in claims if (c.get("status") or {}).get("allocation")) == count


@contextmanager
def dashboard_platform(root: Path) -> Iterator[Tenancy]:
    with seed_platform(root, fleet=FLEET) as running:
        running.as_tenant("legal-ai", "apply", "-f", LEGAL)
        running.as_tenant("research-ai", "apply", "-f", RESEARCH)
        running.wait(lambda: _allocated(running, 2), "the tenants' claims allocated")
        for held, claim in enumerate(SCENARIO["claims"], start=3):  # one after the other
            running.cluster.apply(mig_claim(claim["name"], claim["profile"]),
                                  pod(f"user-{claim['name']}", claim["name"]))  # fmt: skip
            running.wait(partial(_allocated, running, held), f"{claim['name']} allocated")
        running.cluster.apply(mig_claim(BIG, "3g.40gb"), pod("big-user", BIG))
        running.cluster.kubectl("wait", "--for=condition=PodScheduled=false", "pod/big-user",
                                "--timeout=20s")  # fmt: skip
        spare = (
            Path(RESEARCH).read_text().split("\n---\n")[0].replace("research-gpu-slice", "spare")
        )
        running.as_tenant("research-ai", "apply", "-f", "-", stdin=spare)
        yield running


def main() -> None:
    """Serve the platform for a person (screenshots): prints the dashboard's sign-in URL."""
    import tempfile
    import time

    with tempfile.TemporaryDirectory() as directory, dashboard_platform(Path(directory)) as running:
        server = running.cluster.server
        token = server.api.registry.tokens.ensure("host")
        print(json.dumps({"url": server.endpoint.url, "token": token}), flush=True)
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
