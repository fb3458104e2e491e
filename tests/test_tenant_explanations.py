"""A tenant's explanation of its pending pod: what ``allot doctor`` says on the host, per
request and device, restricted to what the tenant may see (``allot.allocator.explain``,
``allot.tenancy.explain.why_no_node``). Seed 000's scenario as the host would hold it:
legal-ai's whole GPU and research-ai's seven MIG slices allocated, the 8th slice pending.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.simulation.runner import Simulation
from allot.simulation.scenario import parse_scenario
from allot.tenancy.explain import Fleet, why_no_node
from allot.tenancy.translate import to_host

SEED = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "seed-000.yaml"
SEED_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "seed-slice", "labels": {"gpu.platform/tenant": "research-ai"}},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'mig.nvidia.com'"}}]},
}
"""Seed 000's original MIG class: a driver that does not exist."""
LEGAL = ("legal-whole-gpu", "legal-ai", "gpu-whole", "gpu-node-a100-01", "gpu-node-a100-01/gpu-0")
"""What research-ai may not read: legal-ai's claim, tenant (namespace), class, the node
only legal-ai's device is on, and that device's name."""


def _twin(kind: str, obj: dict[str, Any], tenant: str) -> dict[str, Any]:
    """The host twin of a tenant object of namespace default (with its status)."""
    metadata = {**obj["metadata"], "namespace": "default", "uid": f"uid-{obj['metadata']['name']}"}
    twin = to_host(kind, {**obj, "metadata": metadata}, tenant)
    if obj.get("status"):
        twin["status"] = obj["status"]
    twin["metadata"]["uid"] = f"host-{metadata['uid']}"
    return twin


def _host(extra_classes: list[dict[str, Any]] = ()) -> Fleet:  # type: ignore[assignment]
    """Seed 000 run to its end, its claims as the tenants' twins on the host."""
    document = yaml.safe_load(SEED.read_text())
    document["objects"] += extra_classes
    simulation = Simulation(parse_scenario(document))
    simulation.run()
    claims = [
        _twin("ResourceClaim", claim.to_wire(), claim.metadata.namespace or "")
        for claim in simulation.claims.values()
    ]
    return Fleet(
        [s.to_wire() for s in simulation.scenario.slices],
        [c.to_wire() for c in simulation.scenario.classes],
        claims,
        [n.to_wire() for n in simulation.nodes],
    )


def _pod(claim: str) -> dict[str, Any]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer"},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }
    return _twin("Pod", pod, "research-ai")


def _claim(name: str, device_class: str, count: int = 1) -> dict[str, Any]:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": device_class, "count": count}}]}},
    }  # fmt: skip
    return _twin("ResourceClaim", claim, "research-ai")


def test_the_host_reads_everything() -> None:
    fleet = _host()
    text = "\n".join(why_no_node(_pod("research-slice-8"), fleet))
    assert "node gpu-node-a100-mig-01: claim tenant-research-ai/research-slice-8.default" in text
    assert "held by tenant-research-ai/research-gpu-slice.default" in text
    assert "node gpu-node-a100-01:" in text  # legal-ai's node, named for the platform team


def test_a_tenant_reads_its_own_claims_and_devices_by_name() -> None:
    lines = why_no_node(_pod("research-slice-8"), _host(), ("research-ai", ["gpu-slice"]))
    assert lines[0] == (
        "node gpu-node-a100-mig-01: claim default/research-slice-8, request gpu: needs 1, "
        "0 candidate(s)"
    )
    assert lines[1].startswith(
        "    7 already in use — held by your claim default/research-gpu-slice; held by your "
        "claim default/research-slice-2; held by your claim default/research-slice-3 (e.g. "
        "gpu.nvidia.com/gpu-node-a100-mig-01/gpu-0-mig-1g5gb-"
    )
    assert lines[2] == (
        "1 node(s) not named (none has a device of your classes): claim "
        "default/research-slice-8, request gpu: needs 1, 0 candidate(s)"
    )
    assert lines[3].startswith("    1 class selector false — class gpu-slice, selector #0: ")
    assert lines[3].endswith("(not named: outside your classes)")
    assert len(lines) == 4


def test_another_tenants_holdings_are_in_use_without_who() -> None:
    """research-ai wants a whole GPU through a class it is (here) entitled to: the device is
    named (its class selects it), its holder is not."""
    fleet = _host()
    fleet.claims.append(_claim("whole", "gpu-whole"))
    lines = why_no_node(_pod("whole"), fleet, ("research-ai", ["gpu-slice", "gpu-whole"]))
    text = "\n".join(lines)
    assert (
        "1 already in use — held by a claim that is not yours (not named) (e.g. "
        "gpu.nvidia.com/gpu-node-a100-01/gpu-0)" in text
    )
    assert "legal" not in text


@pytest.mark.parametrize("claim", ["research-slice-8", "many", "seed"])
def test_a_tenant_never_reads_another_tenants_names(claim: str) -> None:
    """The hostile-tenant check: whatever research-ai's claim asks, its explanation names
    no class, claim, namespace, node or device of legal-ai's."""
    fleet = _host([SEED_CLASS])
    fleet.claims += [_claim("many", "gpu-slice", 7), _claim("seed", "seed-slice")]
    lines = why_no_node(_pod(claim), fleet, ("research-ai", ["gpu-slice", "seed-slice"]))
    assert lines
    for name in LEGAL:
        assert not any(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", line) for line in lines)


def test_a_class_of_a_driver_that_does_not_exist_gets_the_hosts_hint() -> None:
    """Seed 000's MIG class names driver mig.nvidia.com: the tenant is told what ``allot
    doctor`` tells the host, though it may see no device of that class."""
    fleet = _host([SEED_CLASS])
    fleet.claims.append(_claim("seed", "seed-slice"))
    lines = why_no_node(_pod("seed"), fleet, ("research-ai", ["gpu-slice", "seed-slice"]))
    assert lines[0] == (
        "node gpu-node-a100-mig-01: claim default/seed, request gpu: needs 1, 0 candidate(s)"
    )
    assert "    hint: no device publishes driver 'mig.nvidia.com' (drivers: gpu.nvidia.com); " \
        "MIG devices are driver gpu.nvidia.com with type == 'mig'" in lines  # fmt: skip
    assert lines[-1] == (
        "    hint: no device publishes driver 'mig.nvidia.com' (drivers: gpu.nvidia.com); "
        "MIG devices are driver gpu.nvidia.com with type == 'mig'"
    )


def test_claims_that_fit_are_not_explained() -> None:
    fleet = _host()
    fleet.claims = [c for c in fleet.claims if "research-slice-7" not in c["metadata"]["name"]]
    fleet.claims.append(_claim("fits", "gpu-slice"))
    assert why_no_node(_pod("fits"), fleet, ("research-ai", ["gpu-slice"])) == []
