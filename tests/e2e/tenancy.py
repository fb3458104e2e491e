"""Helpers for the tenancy end-to-end tests: a platform with seed 000's corrected classes
and tenants created through the real ``allot tenant create``, kubectl per tenant, waits.
"""

from __future__ import annotations

import json
import ssl
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from allot.cli.main import main as allot
from allot.driver.fleet import SEED_000_FLEET
from tests.e2e.conftest import Cluster, running_platform, wait_until

REPO = Path(__file__).resolve().parents[2]
CLASSES = REPO / "examples" / "tenancy" / "platform-classes.yaml"
SEEDS = REPO / "examples" / "seeds"


class Tenancy:
    """One running platform with tenants; ``as_tenant`` runs kubectl with their kubeconfig."""

    def __init__(self, cluster: Cluster, data_dir: Path) -> None:
        self.cluster = cluster
        self.data_dir = data_dir

    def create_tenant(self, name: str, *options: str) -> None:
        code = allot(["tenant", "create", name, "--data-dir", str(self.data_dir), *options])
        assert code == 0, f"allot tenant create {name} exited {code}"

    def kubeconfig(self, tenant: str) -> Path:
        return self.data_dir / "kubeconfigs" / f"{tenant}.yaml"

    def as_tenant(
        self, tenant: str, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(
            *args, stdin=stdin, check=check, kubeconfig=self.kubeconfig(tenant)
        )

    def tenant_json(self, tenant: str, *args: str) -> Any:
        return json.loads(self.as_tenant(tenant, "get", *args, "-o", "json").stdout)

    def host_json(self, *args: str) -> Any:
        return self.cluster.get_json(*args)

    def wait(self, condition: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
        return wait_until(condition, what, timeout)

    def host_objects(self, namespace: str) -> list[str]:
        """Every claim, template and pod in a host namespace, as kind/name."""
        listing = self.host_json("resourceclaims,resourceclaimtemplates,pods", "-n", namespace)
        return sorted(f"{i['kind']}/{i['metadata']['name']}" for i in listing["items"])

    def tenant_events(self, tenant: str, name: str) -> list[str]:
        events = self.tenant_json(tenant, "events")["items"]
        return [
            f"{e.get('reason')}: {e.get('message')}"
            for e in events
            if (e.get("involvedObject") or {}).get("name") == name
        ]


def write_values(path: Path, tenant: str) -> Path:
    """A vCluster values file like seed 000's, for ``tenant``."""
    path.write_text(
        yaml.safe_dump(
            {
                "sync": {
                    "toHost": {"resourceClaims": {"enabled": True}},
                    "fromHost": {
                        "deviceClasses": {
                            "enabled": True,
                            "selector": {"matchLabels": {"gpu.platform/tenant": tenant}},
                        }
                    },
                }
            }
        )
    )
    return path


@contextmanager
def seed_platform(
    root: Path, runtime: str = "simulated", fleet: Any = SEED_000_FLEET
) -> Iterator[Tenancy]:
    """Seed 000's fleet (or ``fleet``) and corrected classes, tenants legal-ai and
    research-ai from the seed's own vCluster values files; legal-ai has a quota of 2 claims
    and 1 gpu-whole."""
    with running_platform(root, fleet, runtime=runtime) as cluster:
        cluster.kubectl("apply", "-f", str(CLASSES))
        tenancy = Tenancy(cluster, root / "data")
        tenancy.create_tenant(
            "legal-ai",
            "-f",
            str(SEEDS / "000-legal-ai-vcluster-config.yaml"),
            "--quota",
            "count/resourceclaims.resource.k8s.io=2",
            "--quota",
            "gpu-whole.deviceclass.resource.k8s.io/devices=1",
        )
        tenancy.create_tenant(
            "research-ai", "-f", str(SEEDS / "000-research-ai-vcluster-config.yaml")
        )
        yield tenancy


HOST_JOB = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "host-job"},
    "spec": {"containers": [{"name": "job", "image": "busybox", "command": ["sleep", "3600"]}]},
}
WAITING_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "waiting-pod"},
    "spec": {
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "not-yet-created"}],
        "containers": [
            {"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}
        ],
    },
}

UNALLOCATED = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "unallocated"},
    "spec": {},
}


def start_workloads(tenancy: Tenancy) -> None:
    """Both tenants' seed workloads, a host pod, legal-ai's pod that waits for a claim and
    its claim without requests, until the seed claims are allocated and reserved and every
    synced pod is bound on the host."""
    tenancy.as_tenant(
        "research-ai", "apply", "-f", str(REPO / "examples/tenancy/research-ai-workload.yaml")
    )
    tenancy.as_tenant(
        "legal-ai", "apply", "-f", str(REPO / "examples/tenancy/legal-ai-workload.yaml")
    )
    for waiting in (WAITING_POD, UNALLOCATED):
        tenancy.as_tenant("legal-ai", "create", "-f", "-", stdin=json.dumps(waiting))
    tenancy.cluster.apply(HOST_JOB)

    def settled() -> bool:
        claims = tenancy.host_json("resourceclaims", "-A")["items"]
        pods = tenancy.host_json("pods", "-A")["items"]
        return (
            len(claims) == 3
            and sum(bool((c.get("status") or {}).get("reservedFor")) for c in claims) == 2
            and len(pods) == 3
            and all(p["spec"].get("nodeName") for p in pods)
        )

    tenancy.wait(settled, "claims allocated and pods bound on the host", timeout=30)


def https(tenancy: Tenancy) -> httpx.Client:
    """A client of the platform's HTTPS endpoint with no credentials of its own."""
    server = tenancy.cluster.server
    return httpx.Client(
        base_url=server.endpoint.url,
        verify=ssl.create_default_context(cafile=server.endpoint.tls.ca_cert),
        timeout=30,
    )


SLICE_TEMPLATE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "slice"},
    "spec": {
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu-slice"}}]}
        }
    },
}
"""A template of one MIG slice (``gpu-slice``), named ``slice``."""


def gpu_pod_spec(template: str, container: str = "train") -> dict[str, Any]:
    """A pod spec with one claim (``gpu``) from the claim template ``template``, one
    ``python:3.12-slim`` container using it, and the GPU nodes' taint tolerated."""
    return {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
        "containers": [
            {
                "name": container,
                "image": "python:3.12-slim",
                "resources": {"claims": [{"name": "gpu"}]},
            }
        ],
    }


def slice_trainer(finalizers: list[str] | None = None) -> dict[str, Any]:
    """Pod ``trainer`` with one claim from :data:`SLICE_TEMPLATE`; ``finalizers`` keep it
    Terminating until a test has read what it needs."""
    metadata: dict[str, Any] = {"name": "trainer"}
    if finalizers:
        metadata["finalizers"] = finalizers
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": gpu_pod_spec("slice"),
    }
