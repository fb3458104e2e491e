"""A fair-sharing tenant's pod through the real kubectl: its host twin is gated
(``SchedulingGated`` in the host's ``kubectl get pods``), the host admin's JSON patch that
removes the gate lets it run, and an eviction with ``evict_pod`` (as the admission
controller preempts) shows ``DisruptionTarget`` and the ``Preempted`` Event on the tenant's
own pod (``kubectl describe``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.apiserver.server import ServerThread
from allot.controllers.context import ControllerContext
from allot.controllers.eviction import evict_pod
from allot.driver.fleet import SEED_000_FLEET, parse_fleet
from allot.driver.publisher import publish
from allot.platform import Platform, build
from allot.tenancy import names
from tests.e2e.conftest import Cluster
from tests.e2e.tenancy import CLASSES, SEEDS, SLICE_TEMPLATE, Tenancy, slice_trainer

pytestmark = pytest.mark.slow
TENANT = "research-ai"
HOST_NS = names.host_namespace(TENANT)
TWIN = names.host_name("trainer", "default")
SHARING = {"sharing": {"deviceClasses": [{"name": "gpu-slice", "guaranteed": "0"}]}}
"""A queue that admits nothing (no guarantee, no cohort): the test plays the admission
controller's part by hand (the host admin's patch, ``evict_pod``)."""
TEMPLATE = SLICE_TEMPLATE
TRAINER = slice_trainer(["example.com/keep"])


class Running:
    """The platform, and its event loop, where the controllers' code must run."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.loop: asyncio.AbstractEventLoop | None = None

    async def remember_loop(self) -> None:
        self.loop = asyncio.get_running_loop()

    def evict(self, name: str) -> bool:
        registry = self.platform.registry
        host = ControllerContext("host", registry.store, registry.handlers, registry.clock)

        async def on_loop() -> bool:
            return evict_pod(
                host.client,
                HOST_NS,
                name,
                reason="PreemptionByAllot",
                message="preempted to reclaim quota for legal-ai",
                event_reason="Preempted",
                event_message="Preempted by legal-ai/contract-summarizer",
                component="allot-admission",
            )

        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(on_loop(), self.loop).result(timeout=10)


@pytest.fixture(scope="module")
def sharing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Tenancy, Running]]:
    root: Path = tmp_path_factory.mktemp("sharing")
    data = root / "data"
    platform = build(data)
    running = Running(platform)
    platform.server.startup_hooks.append(running.remember_loop)
    with ServerThread(data, api=platform.server) as server:
        publish(server.endpoint.kubeconfigs["host"], parse_fleet(SEED_000_FLEET))
        cluster = Cluster(server, root / "home")
        cluster.kubectl("apply", "-f", str(CLASSES))
        tenancy = Tenancy(cluster, data)
        tenancy.create_tenant(TENANT, "-f", str(SEEDS / "000-research-ai-vcluster-config.yaml"))
        cluster.kubectl(
            "patch", "tenant", TENANT, "--type", "merge", "-p", json.dumps({"spec": SHARING})
        )
        yield tenancy, running


def test_a_sharing_tenants_pod_waits_runs_once_ungated_and_shows_its_eviction(
    sharing: tuple[Tenancy, Running],
) -> None:
    tenancy, running = sharing
    tenancy.wait(lambda: tenancy.host_json("tenant", TENANT)["spec"].get("sharing"), "sharing on")
    stdin = "\n---\n".join(json.dumps(d) for d in (TEMPLATE, TRAINER))
    tenancy.as_tenant(TENANT, "apply", "-f", "-", stdin=stdin)
    twin = tenancy.wait(
        lambda: next(
            (
                p
                for p in tenancy.host_json("pods", "-n", HOST_NS)["items"]
                if p["metadata"]["name"] == TWIN
            ),
            None,
        ),
        "the twin on the host",
    )
    assert twin["spec"]["schedulingGates"] == [{"name": "allot.dev/admission"}]
    listed = tenancy.cluster.kubectl("get", "pods", "-n", HOST_NS).stdout
    assert TWIN in listed
    assert "SchedulingGated" in listed.splitlines()[1].split(), listed
    mine = tenancy.tenant_json(TENANT, "pod", "trainer")
    assert "schedulingGates" not in mine["spec"]  # the tenant's pod is not gated

    more = {"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "example.com/more"}}
    added = tenancy.cluster.kubectl(
        "patch", "pod", TWIN, "-n", HOST_NS, "--type", "json", "-p", json.dumps([more]),
        check=False,
    )  # fmt: skip
    assert added.returncode != 0
    assert (
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new "
        "scheduling gate 'example.com/more'"
    ) in added.stderr

    tenancy.cluster.kubectl(
        "patch", "pod", TWIN, "-n", HOST_NS, "--type", "json",
        "-p", json.dumps([{"op": "remove", "path": "/spec/schedulingGates/0"}]),
    )  # fmt: skip
    tenancy.wait(
        lambda: tenancy.tenant_json(TENANT, "pod", "trainer")["status"].get("phase") == "Running",
        "the tenant's pod running once ungated",
    )
    assert not tenancy.host_json("pod", TWIN, "-n", HOST_NS)["spec"].get("schedulingGates")

    assert running.evict(TWIN)
    tenancy.wait(
        lambda: (
            not any(
                p["metadata"]["name"] == TWIN
                for p in tenancy.host_json("pods", "-n", HOST_NS)["items"]
            )
        ),
        "the twin gone",
    )
    mine = tenancy.wait(
        lambda: (
            pod
            if (pod := tenancy.tenant_json(TENANT, "pod", "trainer"))["metadata"].get(
                "deletionTimestamp"
            )
            else None
        ),
        "the tenant's pod terminating",
    )
    (target,) = [c for c in mine["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"]) == ("True", "PreemptionByAllot")
    described = tenancy.as_tenant(TENANT, "describe", "pod", "trainer").stdout
    assert "DisruptionTarget" in described
    assert "Preempted by legal-ai/contract-summarizer" in described
    tenancy.as_tenant(
        TENANT, "patch", "pod", "trainer", "--type", "json",
        "-p", json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]),
    )  # fmt: skip
