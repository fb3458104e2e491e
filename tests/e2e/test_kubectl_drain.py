"""``kubectl drain`` with the real kubectl: it finds ``pods/eviction`` in discovery and
posts a policy/v1 Eviction per pod (as protobuf), or with ``--disable-eviction`` deletes
each pod with a protobuf DeleteOptions body; either way the pod goes and the node stays
cordoned until ``kubectl uncordon``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from allot.driver.fleet import SEED_000_FLEET
from tests.e2e.conftest import Cluster, running_platform

pytestmark = pytest.mark.slow
NODE = "cpu-pool-0"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_platform(tmp_path_factory.mktemp("drain"), SEED_000_FLEET) as cluster:
        yield cluster


def _running_pod(platform: Cluster, name: str) -> None:
    platform.kubectl("run", name, "--image=busybox", "--", "sleep", "3600")
    platform.kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=20s")
    assert platform.get_json("pod", name)["spec"]["nodeName"] == NODE


@pytest.mark.parametrize("extra", [[], ["--disable-eviction"]], ids=["eviction", "delete"])
def test_drain_evicts_the_node_s_pods_and_leaves_it_cordoned(
    platform: Cluster, extra: list[str]
) -> None:
    _running_pod(platform, "evictme")
    drained = platform.kubectl(
        "drain",
        NODE,
        "--pod-selector=run=evictme",
        "--ignore-daemonsets",
        "--force",
        "--timeout=30s",
        *extra,
        timeout=60,
    )
    verb = "deleted" if extra else "evicted"
    assert f"pod/evictme {verb}" in drained.stdout
    assert f"node/{NODE} drained" in drained.stdout
    assert platform.kubectl("get", "pod", "evictme", check=False).returncode != 0
    assert platform.get_json("node", NODE)["spec"]["unschedulable"] is True
    platform.kubectl("uncordon", NODE)
    assert not platform.get_json("node", NODE)["spec"].get("unschedulable")


def test_discovery_lists_the_eviction_subresource(platform: Cluster) -> None:
    resources = platform.kubectl("get", "--raw", "/api/v1").stdout
    assert (
        '{"name":"pods/eviction","singularName":"","namespaced":true,"kind":"Eviction",'
        '"verbs":["create"],"group":"policy","version":"v1"}'
    ) in resources.replace(" ", "")


def test_an_eviction_whose_name_differs_from_the_url_is_refused(platform: Cluster) -> None:
    _running_pod(platform, "keepme")
    eviction = '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}'
    refused = platform.kubectl(
        "create",
        "--raw",
        "/api/v1/namespaces/default/pods/keepme/eviction",
        "-f",
        "-",
        stdin=eviction,
        check=False,
    )
    assert "name in URL does not match name in Eviction object" in refused.stderr
    assert platform.get_json("pod", "keepme")["metadata"]["name"] == "keepme"
    platform.kubectl("delete", "pod", "keepme", "--wait=false")
