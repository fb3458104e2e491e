"""Publishing a fleet through the official client into the embedded API server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allot.cli.main import main
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import Publisher
from allot.kube.client import Client
from allot.kube.errors import KubeNotFound
from allot.kube.remote import RemoteClient
from tests.conftest import EXAMPLES
from tests.e2e.conftest import Cluster

pytestmark = pytest.mark.slow


def test_publish_scale_and_lint_the_live_slices(cluster: Cluster, tmp_path: Path) -> None:
    client = Client.from_kubeconfig(cluster.kubeconfig)
    try:
        fleet = parse_fleet(SEED_000_FLEET)
        report = Publisher(RemoteClient(client)).reconcile(fleet)
        assert report.nodes_created == ["a100-whole-pool-0", "a100-mig-1g5gb-pool-0", "cpu-pool-0"]
        assert (report.slices, report.devices) == (2, 8)  # nothing for the CPU node
        again = Publisher(RemoteClient(client)).reconcile(fleet)  # idempotent
        assert (again.nodes_created, again.slices) == ([], 0)
        slices = json.loads(cluster.kubectl("get", "resourceslices", "-o", "json").stdout)
        devices = sorted(d["name"] for s in slices["items"] for d in s["spec"]["devices"])
        assert devices == ["gpu-0"] + [f"gpu-0-mig-1g5gb-19-{i}" for i in range(7)]
        classes = cluster.kubectl("get", "deviceclasses", "-o", "name").stdout
        assert "deviceclass.resource.k8s.io/gpu.nvidia.com" in classes
        dump = tmp_path / "slices.json"
        dump.write_text(json.dumps(slices))
        # The seed's classes against what this cluster publishes: gpu-slice matches nothing.
        assert (
            main(["lint", str(EXAMPLES / "seeds" / "000-gpu-deviceclasses.yaml"), str(dump)]) == 1
        )
        Publisher(RemoteClient(client)).reconcile(fleet.scaled("a100-whole-pool", 0))
        with pytest.raises(KubeNotFound):
            client.get("v1", "Node", "a100-whole-pool-0")
        remaining = client.list("resource.k8s.io/v1", "ResourceSlice")
        assert [s["spec"]["nodeName"] for s in remaining] == ["a100-mig-1g5gb-pool-0"]
    finally:
        client.close()
