"""A tenant is told why its pod's claims fit nowhere, as the host is: in its own cluster's
Events (``CannotAllocate``, beside kube-scheduler's ``FailedScheduling``, read with the
real kubectl) and by ``allot explain pod/NAME --tenant T``, per request and device, naming
nothing of another tenant's: the hostile-tenant check reads every word research-ai is told.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.cli.main import main as allot
from tests.e2e.tenancy import Tenancy, seed_platform, start_workloads

pytestmark = pytest.mark.slow
SEED_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "seed-slice", "labels": {"gpu.platform/tenant": "research-ai"}},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'mig.nvidia.com'"}}]},
}
"""Seed 000's original MIG class (a driver that does not exist), entitled to research-ai."""
OTHERS = (
    "gpu-whole", "legal-whole-gpu", "unallocated", "not-yet-created", "legal-ai",
    "contract-summarizer", "waiting-pod", "host-job", "a100-whole-pool-0",
)  # fmt: skip
"""legal-ai's class, claims, namespace and tenant name, pods, the node only its GPU is on,
and the host's pod: none may reach research-ai."""
HINT = (
    "hint: no device publishes driver 'mig.nvidia.com' (drivers: gpu.nvidia.com); MIG "
    "devices are driver gpu.nvidia.com with type == 'mig'"
)


def _claim(name: str, device_class: str, count: int) -> str:
    request = {"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}
    return json.dumps({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [request]}},
    })  # fmt: skip


def _pod(name: str, claim: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"claims": [{"name": "gpu"}]}}],
        },
    })  # fmt: skip


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    """Both tenants' seed workloads running; research-ai then asks for 7 more MIG slices
    (6 are free) and for one of the seed's class, which selects nothing."""
    with seed_platform(tmp_path_factory.mktemp("explain")) as running:
        start_workloads(running)
        running.cluster.apply(SEED_CLASS)
        running.wait(
            lambda: "seed-slice" in running.as_tenant("research-ai", "get", "deviceclasses").stdout,
            "the seed's class synced to research-ai",
        )
        for claim, device_class, count, pod in (
            ("many", "gpu-slice", 7, "big"),
            ("seed", "seed-slice", 1, "seeded"),
        ):
            running.as_tenant(
                "research-ai", "create", "-f", "-", stdin=_claim(claim, device_class, count)
            )
            running.as_tenant("research-ai", "create", "-f", "-", stdin=_pod(pod, claim))
        running.wait(
            lambda: all(
                any(
                    e.startswith("CannotAllocate:") for e in running.tenant_events("research-ai", p)
                )
                for p in ("big", "seeded")
            ),
            "the explanations in research-ai's Events",
        )
        yield running


def _explain(tenancy: Tenancy, pod: str, capsys: pytest.CaptureFixture[str]) -> str:
    argv = ["explain", f"pod/{pod}", "--tenant", "research-ai", "--data-dir", str(tenancy.data_dir)]
    assert allot(argv) == 1  # it waits
    return capsys.readouterr().out


def test_the_events_say_per_request_and_device_why(tenancy: Tenancy) -> None:
    events = tenancy.tenant_events("research-ai", "big")
    assert "FailedScheduling: 0/3 nodes are available: 3 cannot allocate all claims." in events
    explained = [e for e in events if e.startswith("CannotAllocate: ")]
    assert len(explained) == 1
    assert explained[0].startswith(
        "CannotAllocate: claim default/many, request gpu: needs 7; node a100-mig-1g5gb-pool-0: "
        "6 candidate(s), 1 already in use — held by your claim default/research-gpu-slice (e.g. "
        "gpu.nvidia.com/a100-mig-1g5gb-pool-0/gpu-0-mig-1g5gb-"
    )
    assert "2 node(s) not named (none has a device of your classes): 0 candidate(s)" in explained[0]


def test_explain_says_what_the_events_say(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _explain(tenancy, "big", capsys).splitlines()
    assert out[:3] == [
        "pod default/big of tenant research-ai waits for capacity:",
        "  Unschedulable: 0/3 nodes are available: 3 cannot allocate all claims.",
        "why its claims fit on no node:",
    ]
    assert out[3] == (
        "  node a100-mig-1g5gb-pool-0: claim default/many, request gpu: needs 7, 6 candidate(s)"
    )
    assert out[4].startswith(
        "      1 already in use — held by your claim default/research-gpu-slice"
    )
    assert out[5] == (
        "  2 node(s) not named (none has a device of your classes): claim default/many, request "
        "gpu: needs 7, 0 candidate(s)"
    )


def test_the_seeds_mig_class_gets_the_hosts_hint(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    """What ``allot doctor`` tells the host about seed 000's class, the tenant is told."""
    [event] = [e for e in tenancy.tenant_events("research-ai", "seeded") if "CannotAllocate" in e]
    assert HINT in event
    assert f"      {HINT}" in _explain(tenancy, "seeded", capsys).splitlines()


def test_research_ai_is_told_nothing_of_legal_ai(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every Event in research-ai's cluster and every explanation it can ask for."""
    events = tenancy.tenant_json("research-ai", "events")["items"]
    told = [str(e.get("message")) for e in events]
    told += [_explain(tenancy, pod, capsys) for pod in ("big", "seeded")]
    assert any(e.get("reason") == "CannotAllocate" for e in events)
    for text in told:
        for name in OTHERS:
            assert not re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text), (name, text)


def test_the_host_pod_is_explained_in_full(
    tenancy: Tenancy, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The platform team's own pod is told everything, holders included."""
    tenancy.cluster.kubectl("create", "-f", "-", stdin=_claim("host-many", "gpu-slice", 7))
    tenancy.cluster.kubectl("create", "-f", "-", stdin=_pod("host-big", "host-many"))
    tenancy.wait(
        lambda: "CannotAllocate" in tenancy.cluster.kubectl("get", "events").stdout,
        "the host pod's explanation",
    )
    argv = ["explain", "pod/host-big", "-n", "default", "--data-dir", str(tenancy.data_dir)]
    assert allot(argv) == 1
    out = capsys.readouterr().out
    assert "held by tenant-research-ai/research-gpu-slice.default" in out
    assert "node a100-whole-pool-0: claim default/host-many" in out
