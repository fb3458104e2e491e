"""Twenty creates racing for the last unit of a quota: exactly the allowed number win.

The platform of ``tests/scenarios/faults.yaml`` runs as ``allot up``; each race fires 20
requests at once over HTTPS (one connection per request, released together by a barrier)
when one unit of quota is left. ResourceQuota is judged at admission, so the losers are
answered 403 with the quota message, in the host and in a tenant (whose claims are
admitted against the host's quota in its own request). The GPU-memory quota is judged by
the scheduler, so there the claims are created and exactly one is allocated; the others'
pods say why they wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.faults.load import CLAIMS, PODS
from tests.faults.world import Platform, build_world, claim, load_world, pod, write_fleet

pytestmark = pytest.mark.slow
RACERS = 20
QUOTA_KEY = "count/resourceclaims.resource.k8s.io"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    root = tmp_path_factory.mktemp("quota-race")
    world = load_world()
    served = Platform(root / "data", write_fleet(root, world))
    served.start()
    try:
        build_world(served, world, root)
        yield served
    finally:
        served.stop()


def _race(platform: Platform, cluster: str, bodies: list[tuple[str, Any]]) -> list[httpx.Response]:
    """POST every (path, body) at the same moment, each on its own connection."""
    barrier = threading.Barrier(len(bodies))
    answers: list[httpx.Response | None] = [None] * len(bodies)

    def post(index: int, path: str, body: Any) -> None:
        with platform.client(cluster) as client:
            barrier.wait()
            answers[index] = client.post(path, json=body)

    threads = [
        threading.Thread(target=post, args=(i, path, body)) for i, (path, body) in enumerate(bodies)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(a is not None for a in answers)
    return [a for a in answers if a is not None]


def _fill(client: httpx.Client, prefix: str, count: int) -> None:
    for index in range(count):
        body = claim(f"{prefix}-{index}", "fault-slice")
        client.post(CLAIMS.format(ns="default"), json=body).raise_for_status()


def _quota_limit(cluster: str) -> int:
    world = load_world()
    if cluster == "host":
        return int(world["hostQuota"][QUOTA_KEY])
    tenant = next(t for t in world["tenants"] if t["name"] == cluster)
    return int(tenant["quota"][QUOTA_KEY])


@pytest.mark.parametrize(("cluster", "quota"), [("host", "host-claims"), ("beta", "tenant-quota")])
def test_twenty_creates_for_the_last_claim_of_a_quota(
    platform: Platform, cluster: str, quota: str
) -> None:
    limit = _quota_limit(cluster)
    with platform.client(cluster) as client:
        _fill(client, "before", limit - 1)
    bodies = [(CLAIMS.format(ns="default"), claim(f"racer-{i}", "fault-slice")) for i in range(20)]
    answers = _race(platform, cluster, bodies)
    codes = sorted(a.status_code for a in answers)
    assert codes == [201] + [403] * (RACERS - 1)
    refused = [a.json() for a in answers if a.status_code == 403]
    expected = (
        f"exceeded quota: {quota}, requested: {QUOTA_KEY}=1, used: {QUOTA_KEY}={limit}, "
        f"limited: {QUOTA_KEY}={limit}"
    )
    assert {r["reason"] for r in refused} == {"Forbidden"}
    assert all(r["message"].endswith(expected) for r in refused), refused[0]["message"]
    with platform.client("host") as host:
        namespace = "default" if cluster == "host" else f"tenant-{cluster}"
        _wait(lambda: len(host.get(CLAIMS.format(ns=namespace)).json()["items"]) == limit)
    with platform.client(cluster) as client:
        assert len(client.get(CLAIMS.format(ns="default")).json()["items"]) == limit


def test_twenty_pods_for_the_last_slice_of_a_gpu_memory_quota(platform: Platform) -> None:
    """alpha may hold 100Gi: a whole H100 (79.25Gi) and one slice (9.75Gi) leave room for
    exactly one more 1g.10gb slice."""
    with platform.client("alpha") as alpha:
        for name, device_class in (("whole", "fault-whole"), ("slice", "fault-slice")):
            alpha.post(CLAIMS.format(ns="default"), json=claim(name, device_class))
            alpha.post(PODS.format(ns="default"), json=pod(name, name)).raise_for_status()
        _wait(lambda: len(_allocated(alpha)) == 2)
    claims = [(CLAIMS.format(ns="default"), claim(f"racer-{i}", "fault-slice")) for i in range(20)]
    assert {a.status_code for a in _race(platform, "alpha", claims)} == {201}
    pods = [(PODS.format(ns="default"), pod(f"racer-{i}", f"racer-{i}")) for i in range(20)]
    assert {a.status_code for a in _race(platform, "alpha", pods)} == {201}
    with platform.client("alpha") as alpha:
        _wait(lambda: len(_waiting(alpha)) == RACERS - 1 and len(_allocated(alpha)) == 3)
        time.sleep(1.0)  # and it stays so
        assert len(_allocated(alpha)) == 3
        messages = set(_waiting(alpha).values())
    assert len(messages) == 1
    assert messages.pop().endswith(
        "would exceed the GPU memory quota of tenant 'alpha' "
        "(101120Mi allocated + 9984Mi requested > 100Gi)."
    )


def _allocated(client: httpx.Client) -> list[str]:
    items = client.get(CLAIMS.format(ns="default")).json()["items"]
    return [c["metadata"]["name"] for c in items if (c.get("status") or {}).get("allocation")]


def _waiting(client: httpx.Client) -> dict[str, str]:
    """Pods the scheduler turned down, with its message."""
    waiting = {}
    for item in client.get(PODS.format(ns="default")).json()["items"]:
        for condition in (item.get("status") or {}).get("conditions") or []:
            if condition["type"] == "PodScheduled" and condition["status"] == "False":
                waiting[item["metadata"]["name"]] = condition.get("message", "")
    return waiting


def _wait(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)
